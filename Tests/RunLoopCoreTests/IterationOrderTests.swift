import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// The per-iteration event order of rulebook §3, as exact activity traces (rule 11's examples and more).
@Suite struct IterationOrderTests {
    @Test func oneShotTimerRunsOnceThenTheModeIsEmpty() {
        let (trace, result) = onThread { () -> (String, Loop.RunResult) in
            let loop = Loop.current
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopTimer(after: .milliseconds(20)) { _ in log.append("T1") }, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, result)
        }
        #expect(trace == "Entry BT BS BW AW T1 Exit")
        #expect(result == .finished)
    }

    @Test func signalledSourceWithReturnAfterSourceHandledPollsOnce() {
        let (trace, result) = onThread { () -> (String, Loop.RunResult) in
            let loop = Loop.current
            let log = TraceLog()
            let source = LoopSource { log.append("S1") }
            loop.add(traceObserver(log), forMode: .default)
            loop.add(source, forMode: .default)
            source.signal()
            let result = loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
            return (log.text, result)
        }
        #expect(trace == "Entry BT BS S1 Exit")
        #expect(result == .handledSource)
    }

    @Test func signalledSourceWithoutReturnAfterSourceHandledSleepsUntilTimeout() {
        let (trace, result, sleeps) = onVirtualLoop { kernel, loop -> (String, Loop.RunResult, [ClosedRange<Duration>]) in
            let log = TraceLog()
            let source = LoopSource { log.append("S1") }
            loop.add(traceObserver(log), forMode: .default)
            loop.add(source, forMode: .default)
            source.signal()
            let start = kernel.now
            let result = loop.run(mode: .default, timeout: .milliseconds(100))
            return (log.text, result, kernel.sleepOffsets(since: start))
        }
        #expect(trace == "Entry BT BS S1 BT BS BW AW Exit")
        #expect(result == .timedOut)
        // The perform made the first iteration a poll; the second sleeps exactly until the timeout.
        #expect(sleeps == [.zero ... .milliseconds(100)])
    }

    @Test func pollIterationStillServicesDueTimers() {
        let (trace, result) = onThread { () -> (String, Loop.RunResult) in
            let loop = Loop.current
            let log = TraceLog()
            let source = LoopSource { log.append("S1") }
            loop.add(traceObserver(log), forMode: .default)
            loop.add(source, forMode: .default)
            loop.add(LoopTimer(after: .zero) { _ in log.append("T1") }, forMode: .default)
            source.signal()
            let result = loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
            return (log.text, result)
        }
        #expect(trace == "Entry BT BS S1 T1 Exit")
        #expect(result == .handledSource)
    }

    @Test func zeroTimeoutRunsExactlyOneNonBlockingIteration() {
        let (trace, result) = onThread { () -> (String, Loop.RunResult) in
            let loop = Loop.current
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.add(LoopTimer(after: .seconds(60)) { _ in }, forMode: .default)
            let result = loop.run(mode: .default, timeout: .zero)
            return (log.text, result)
        }
        #expect(trace == "Entry BT BS Exit")
        #expect(result == .timedOut)
    }

    @Test func blocksRunBeforeSourcesAndAgainAfterThemAndAfterTimers() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let source = LoopSource {
                log.append("S1")
                loop.perform(inModes: [.default]) { log.append("B2") }
            }
            loop.add(traceObserver(log), forMode: .default)
            loop.add(source, forMode: .default)
            loop.add(LoopTimer(after: .zero) {
                _ in log.append("T1")
                loop.perform(inModes: [.default]) { log.append("B3") }
            }, forMode: .default)
            loop.perform(inModes: [.default]) { log.append("B1") }
            source.signal()
            loop.run(mode: .default, timeout: .zero)
            return log.text
        }
        #expect(trace == "Entry BT BS B1 S1 B2 T1 B3 Exit")
    }

    @Test func aSourceRanMeansNoSleepOnThatIteration() {
        // A source performed in step 4 makes step 5 a poll: no BeforeWaiting/AfterWaiting on that iteration.
        // Virtual time: the polling first iteration takes none, so the timer cannot come due before the sleep.
        let trace = onVirtualLoop { kernel, loop -> String in
            let log = TraceLog()
            let count = Shared(0)
            let source = LoopSource(perform: {
                log.append("S1")
                count.value += 1
                if count.value == 2 { loop.stop() }
            })
            loop.add(traceObserver(log), forMode: .default)
            loop.add(source, forMode: .default)
            source.signal()
            loop.add(LoopTimer(fireAt: kernel.now.advanced(by: .milliseconds(10))) { _ in log.append("T1"); source.signal() },
                     forMode: .default)
            loop.run(mode: .default, timeout: .seconds(2))
            return log.text
        }
        #expect(trace == "Entry BT BS S1 BT BS BW AW T1 BT BS S1 Exit")
    }
}

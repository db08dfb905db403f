import Glibc
import RunLoopCore
import Testing

/// Rulebook §5: custom sources.
@Suite struct SourceTests {
    @Test func signalledSourcesRunByOrderThenFirstSignalTime() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let a = LoopSource(order: 1) { log.append("a") }
            let b = LoopSource(order: 0) { log.append("b") }
            let c = LoopSource(order: 1) { log.append("c") }
            for source in [a, b, c] { loop.add(source, forMode: .default) }
            c.signal()
            a.signal()
            b.signal()
            c.signal()   // collapses: c keeps its first-signal time
            loop.run(mode: .default, timeout: .zero)
            return log.text
        }
        #expect(trace == "b c a")
    }

    @Test func repeatedSignalsCollapseIntoOnePerform() {
        let (performs, returns) = onThread { () -> (Int, [Bool]) in
            let loop = Loop.current
            let count = Shared(0)
            let source = LoopSource { count.value += 1 }
            loop.add(source, forMode: .default)
            let returns = [source.signal(), source.signal(), source.signal()]
            loop.run(mode: .default, timeout: .zero)
            loop.run(mode: .default, timeout: .zero)
            return (count.value, returns)
        }
        #expect(performs == 1)
        #expect(returns == [true, false, false])
    }

    @Test func signallingDoesNotWakeTheLoop() {
        let background = BackgroundLoop(turn: .seconds(3600))   // no run's end performs the signal either
        defer { background.stop() }
        let performed = Shared(false)
        let source = LoopSource { performed.value = true }
        background.loop.add(source, forMode: .default)
        #expect(eventually { background.loop.isWaiting })
        source.signal()
        usleep(100_000)
        #expect(!performed.value, "a signal alone must not wake a sleeping loop")
        background.loop.wakeUp()
        #expect(eventually { performed.value })
    }

    @Test func signalAndWakeUpWakesTheLoop() {
        let background = BackgroundLoop()
        defer { background.stop() }
        let performed = Shared(false)
        let source = LoopSource { performed.value = true }
        background.loop.add(source, forMode: .default)
        #expect(eventually { background.loop.isWaiting })
        source.signalAndWakeUp()
        #expect(eventually { performed.value })
    }

    @Test func aSourceThatResignalsItselfRunsOnALaterIteration() {
        // Virtual time: polling iterations take none, so the three performs fit in the timeout however slow.
        let trace = onVirtualLoop { _, loop -> String in
            let log = TraceLog()
            loop.add(LoopObserver(activities: .beforeSources) { _, _ in log.append("BS") }, forMode: .default)
            let count = Shared(0)
            let sourceBox = Shared<LoopSource?>(nil)
            let source = LoopSource {
                log.append("S")
                count.value += 1
                if count.value < 3 { sourceBox.value?.signal() }
            }
            sourceBox.value = source
            loop.add(source, forMode: .default)
            source.signal()
            loop.run(mode: .default, timeout: .milliseconds(30))
            source.invalidate()
            return log.text
        }
        #expect(trace.hasPrefix("BS S BS S BS S BS"))
    }

    @Test func returnAfterSourceHandledPerformsOnlyTheFirstAndKeepsTheRestSignalled() {
        let (trace, pending) = onThread { () -> (String, [Bool]) in
            let loop = Loop.current
            let log = TraceLog()
            let a = LoopSource(order: 0) { log.append("a") }
            let b = LoopSource(order: 1) { log.append("b") }
            loop.add(a, forMode: .default)
            loop.add(b, forMode: .default)
            b.signal()
            a.signal()
            let result = loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
            log.append("\(result)")
            return (log.text, [a.isSignaled, b.isSignaled])
        }
        #expect(trace == "a handled_source")
        #expect(pending == [false, true])
    }

    @Test func scheduleAndCancelAreCalledOncePerConcreteMode() {
        let calls = onThread { () -> [String] in
            let loop = Loop.current
            let log = TraceLog()
            loop.addCommonMode("ui")
            let source = LoopSource(schedule: { _, mode in log.append("schedule:\(mode)") },
                                    cancel: { _, mode in log.append("cancel:\(mode)") },
                                    perform: {})
            loop.add(source, forMode: .common)
            loop.add(source, forMode: .common)            // adding twice does nothing
            loop.add(source, forMode: "extra")
            loop.add(source, forMode: "extra")
            loop.remove(source, forMode: "extra")
            loop.remove(source, forMode: "extra")         // removing twice does nothing
            loop.add(source, forMode: "last")
            source.invalidate()
            return log.events.sorted()
        }
        #expect(calls == ["cancel:extra", "cancel:kCFRunLoopDefaultMode", "cancel:last", "cancel:ui",
                          "schedule:extra", "schedule:kCFRunLoopDefaultMode", "schedule:last", "schedule:ui"])
    }

    @Test func twoSourcesWithTheSameCallbacksAreTwoSources() {
        let performs = onThread { () -> Int in
            let loop = Loop.current
            let count = Shared(0)
            let perform: @Sendable () -> Void = { count.value += 1 }
            let a = LoopSource(perform: perform)
            let b = LoopSource(perform: perform)
            loop.add(a, forMode: .default)
            loop.add(b, forMode: .default)
            a.signal()
            b.signal()
            loop.run(mode: .default, timeout: .zero)
            return count.value
        }
        #expect(performs == 2)
    }

    @Test func invalidSourcesIgnoreSignals() {
        let source = LoopSource {}
        source.invalidate()
        #expect(!source.signal())
        #expect(!source.isSignaled)
    }
}

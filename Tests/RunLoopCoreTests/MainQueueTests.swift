import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// Rulebook §10, rule 38: the main loop serves the main dispatch queue in its common modes, at step 9. Checked in
/// virtual time on a loop whose kernel carries a ``VirtualMainQueue``, which that loop serves exactly as
/// `Loop.main` serves `DispatchQueue.main` (the real queue, in a process of our own whose main thread runs
/// `Loop.main`, is MainQueueProcessTests'). "MQn" is the n-th main-queue block.
@Suite struct MainQueueTests {
    @Test func workQueuedBeforeTheRunRunsAtStep9AfterAZeroLengthWait() {
        let (trace, result, sleeps) = onMainQueueLoop { kernel, mainQueue, loop -> (String, Loop.RunResult, [ClosedRange<Duration>]) in
            let log = TraceLog()
            let start = kernel.now
            loop.add(traceObserver(log), forMode: .default)
            mainQueue.async { log.append("MQ1") }
            mainQueue.async { log.append("MQ2") }
            // Nothing but the main queue is in the mode: it keeps the mode alive, as a source would.
            let result = loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, result, kernel.sleepOffsets(since: start))
        }
        #expect(trace == "Entry BT BS BW AW MQ1 MQ2 BT BS BW AW Exit")
        #expect(result == .timedOut)
        #expect(sleeps == [.zero ... .zero, .zero ... .seconds(1)])
    }

    @Test func aCommonModeNothingWasAddedToIsAliveAndServesTheQueue() {
        let (result, ran, other) = onMainQueueLoop { _, mainQueue, loop -> (Loop.RunResult, Bool, Loop.RunResult) in
            let ran = Shared(false)
            mainQueue.async { ran.value = true }
            let result = loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
            // A mode that is not common and holds nothing is still empty.
            return (result, ran.value, loop.run(mode: "never-used", timeout: .seconds(1)))
        }
        #expect(result == .handledSource)
        #expect(ran)
        #expect(other == .finished)
    }

    @Test func servicingCountsAsAHandledSourceAsInCF() {
        let (trace, result, statistics) = onMainQueueLoop { _, mainQueue, loop -> (String, Loop.RunResult, Loop.Statistics) in
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            mainQueue.async { log.append("MQ1") }
            let result = loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true)
            return (log.text, result, loop.statistics)
        }
        #expect(trace == "Entry BT BS BW AW MQ1 Exit")
        #expect(result == .handledSource)
        #expect(statistics.mainQueueServicings == 1)
        #expect(statistics.wakeUps(.mainQueue) == 1)
        #expect(statistics.sourcesHandled == 0, "a servicing is counted as one, not as a source")
    }

    @Test func workArrivingFromAnotherThreadWakesASleepingCommonModeRun() throws {
        let kernel = VirtualKernel(autoAdvance: false)
        let mainQueue = VirtualMainQueue(servedThrough: kernel)
        let start = kernel.now
        let log = TraceLog()
        let ranAt = Shared<Duration?>(nil)
        let loopBox = Shared<Loop?>(nil)
        let thread = JoinableThread {
            let loop = Loop.makeCurrent(on: kernel)
            loop.add(traceObserver(log), forMode: .default)
            loopBox.value = loop
            log.append("=>\(loop.run(mode: .default, timeout: .seconds(10)))")
            log.append("wakeUps(mainQueue)=\(loop.statistics.wakeUps(.mainQueue))")
        }
        thread.start()
        defer { thread.join() }
        try #require(eventually { loopBox.value?.isWaiting == true })
        mainQueue.async { ranAt.value = kernel.elapsed(since: start) }
        // It ran at once, without the clock moving, and the loop went back to sleep.
        #expect(eventually { log.text == "Entry BT BS BW AW BT BS BW" && loopBox.value?.isWaiting == true })
        #expect(ranAt.value == .zero)
        kernel.advanceTime(by: .seconds(10))
        #expect(eventually { log.events.count == 12 })
        #expect(log.text == "Entry BT BS BW AW BT BS BW AW Exit =>timed_out wakeUps(mainQueue)=1")
    }

    @Test func aPrivateModeLeavesMainQueueWorkWaitingAndDoesNotWakeForIt() {
        let (trace, pendingAfterModal, sleeps) = onMainQueueLoop { kernel, mainQueue, loop -> (String, Int, [ClosedRange<Duration>]) in
            let log = TraceLog()
            let start = kernel.now
            let modal: Loop.Mode = "modal"
            loop.add(traceObserver(log), forMode: modal)
            loop.add(traceObserver(log), forMode: .default)
            mainQueue.async { log.append("MQ1") }
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10))) { _ in log.append("T1") }, forMode: modal)
            log.append("=>\(loop.run(mode: modal, timeout: .seconds(1)))")
            let pending = mainQueue.pendingCount
            log.append("=>\(loop.run(mode: .default, timeout: .zero))")
            return (log.text, pending, kernel.sleepOffsets(since: start))
        }
        // The modal run slept the full 10 ms although main-queue work was waiting: its descriptor is not in the
        // private mode's wait set. The default mode's poll served it.
        #expect(trace == "Entry BT BS BW AW T1 Exit =>finished Entry BT BS MQ1 Exit =>timed_out")
        #expect(pendingAfterModal == 1)
        #expect(sleeps == [.zero ... .milliseconds(10)])
    }

    @Test func aModeMadeCommonServesTheQueueAndAnEmptyPrivateModeFinishes() {
        let trace = onMainQueueLoop { _, mainQueue, loop -> String in
            let log = TraceLog()
            let tracking: Loop.Mode = "tracking"
            loop.add(traceObserver(log), forMode: tracking)
            mainQueue.async { log.append("MQ1") }
            // Not common yet: the main queue does not keep it alive, so it is empty.
            log.append("=>\(loop.run(mode: tracking, timeout: .seconds(1)))")
            loop.addCommonMode(tracking)
            log.append("=>\(loop.run(mode: tracking, timeout: .seconds(1), returnAfterSourceHandled: true))")
            return log.text
        }
        #expect(trace == "=>finished Entry BT BS BW AW MQ1 Exit =>handled_source")
    }

    @Test func aRunNestedInAServicingNeitherServesTheQueueNorWakesForIt() {
        let (trace, sleeps) = onMainQueueLoop { kernel, mainQueue, loop -> (String, [ClosedRange<Duration>]) in
            let log = TraceLog()
            let start = kernel.now
            loop.add(traceObserver(log), forMode: .default)
            mainQueue.async {
                log.append("MQ1")
                loop.add(LoopTimer(fireAt: kernel.now.advanced(by: .milliseconds(5))) { _ in log.append("T1") }, forMode: .default)
                mainQueue.async { log.append("MQ2") }
                log.append("=>\(loop.run(mode: .default, timeout: .seconds(1)))")
            }
            log.append("=>\(loop.run(mode: .default, timeout: .seconds(1)))")
            return (log.text, kernel.sleepOffsets(since: start))
        }
        // libdispatch's drain is not re-entrant: MQ2, queued during MQ1, waits for the outer run's next servicing,
        // and the nested run sleeps until its timer instead of spinning on the ready descriptor. Once its timer
        // fired, the nested run's mode is empty: the main queue does not keep it alive while being served.
        #expect(trace == "Entry BT BS BW AW MQ1 Entry BT BS BW AW T1 Exit =>finished BT BS BW AW MQ2 BT BS BW AW Exit =>timed_out")
        #expect(sleeps == [.zero ... .zero, .zero ... .milliseconds(5), .milliseconds(5) ... .milliseconds(5), .milliseconds(5) ... .seconds(1)])
    }

    @Test func aRunNestedInATimerCalloutServesTheQueue() {
        let trace = onMainQueueLoop { kernel, mainQueue, loop -> String in
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopTimer(fireAt: kernel.now) { _ in
                log.append("T1")
                mainQueue.async { log.append("MQ1") }
                log.append("=>\(loop.run(mode: .default, timeout: .seconds(1), returnAfterSourceHandled: true))")
            }, forMode: .default)
            log.append("=>\(loop.run(mode: .default, timeout: .zero))")
            return log.text
        }
        #expect(trace == "Entry BT BS T1 Entry BT BS BW AW MQ1 Exit =>handled_source Exit =>timed_out")
    }

    @Test func dueTimersRunBeforeTheQueueAndReadyDescriptorsAfterIt() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { for fd in fds { close(fd) } }
        let readFD = fds[0]
        let trace = onMainQueueLoop { kernel, mainQueue, loop -> String in
            let log = TraceLog()
            let due = kernel.now.advanced(by: .milliseconds(10))
            loop.add(LoopTimer(fireAt: due) { _ in log.append("T1") }, forMode: .default)
            loop.add(DescriptorSource(fileDescriptor: readFD) { _, _ in
                log.append("D1")
                kernel.setReadiness([], of: readFD)
            }, forMode: .default)
            loop.add(LoopTimer(fireAt: due.advanced(by: .milliseconds(-1))) { _ in
                // Everything becomes ready at once, while the loop is busy before the 10 ms wake-up.
                mainQueue.async { log.append("MQ1") }
                kernel.setReadiness(.readable, of: readFD)
                kernel.advanceTime(to: due)
            }, forMode: .default)
            loop.add(traceObserver(log), forMode: .default)
            log.append("=>\(loop.run(mode: .default, timeout: .milliseconds(20)))")
            return log.text
        }
        #expect(trace == "Entry BT BS BW AW BT BS BW AW T1 MQ1 D1 BT BS BW AW Exit =>timed_out")
    }
}

/// Runs `body` on a new thread whose loop is on a new virtual kernel carrying a fake main queue, which that loop
/// serves as the main loop serves the main dispatch queue.
func onMainQueueLoop<T>(_ body: @escaping @Sendable (VirtualKernel, VirtualMainQueue, Loop) -> T) -> T {
    onThread {
        let kernel = VirtualKernel()
        let mainQueue = VirtualMainQueue(servedThrough: kernel)
        return body(kernel, mainQueue, Loop.makeCurrent(on: kernel))
    }
}

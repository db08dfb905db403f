import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// Rulebook §9: stop, wake-up, nesting, run().
@Suite struct StopAndNestingTests {
    @Test func stopFromAnotherThreadEndsTheRun() {
        let loopBox = Shared<Loop?>(nil)
        let result = Shared<Loop.RunResult?>(nil)
        let thread = JoinableThread {
            let loop = Loop.current
            loop.add(LoopSource {}, forMode: .default)
            loopBox.value = loop
            result.value = loop.run(mode: .default, timeout: .seconds(30))
        }
        thread.start()
        #expect(eventually { loopBox.value?.isWaiting == true })
        loopBox.value!.stop()
        thread.join()
        #expect(result.value == .stopped)
    }

    @Test func aStopBeforeTheRunIsIgnored() {
        let result = onThread { () -> Loop.RunResult in
            let loop = Loop.current
            loop.add(LoopSource {}, forMode: .default)
            loop.stop()
            return loop.run(mode: .default, timeout: .milliseconds(30))
        }
        #expect(result == .timedOut)
    }

    @Test func aWakeUpWhileTheLoopIsNotRunningIsNotCarriedIntoTheNextRun() {
        // Rule 33: without it, the next run's first wait returns at once and the run goes round twice.
        let (trace, sleeps, manualWakeUps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>], UInt64) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.wakeUp()
            loop.wakeUp()
            loop.run(mode: .default, timeout: .milliseconds(10))
            return (log.text, kernel.sleepOffsets(since: start), loop.statistics.wakeUps(.manual))
        }
        #expect(trace == "Entry BT BS BW AW Exit")
        #expect(sleeps == [.zero ... .milliseconds(10)])
        #expect(manualWakeUps == 0)
    }

    @Test func aWakeUpDuringARunStillEndsItsSleep() {
        // The drain is at entry only: a wake-up while the run is in progress makes it go round once.
        let (trace, sleeps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(LoopObserver(activities: .entry) { _, _ in loop.wakeUp() }, forMode: .default)
            loop.add(traceObserver(log, order: 1), forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(10))
            return (log.text, kernel.sleepOffsets(since: start))
        }
        #expect(trace == "Entry BT BS BW AW BT BS BW AW Exit")
        #expect(sleeps == [.zero ... .zero, .zero ... .milliseconds(10)])
    }

    @Test func aRunNestedInTheCalloutAWakeUpAnnouncedSleepsForItsOwnWork() {
        // The wake-up is read after step 9, so a run nested in step 9 reads it on entry: otherwise its first
        // wait would return at once for a wake-up that was not its own, and it would go round twice.
        let (trace, sleeps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.add(LoopSource {}, forMode: "nested")
            loop.add(LoopObserver(activities: .all) { _, activity in log.append("n.\(activity.short)") }, forMode: "nested")
            let performed = LoopObserver(activities: .beforeWaiting, repeats: false) { _, _ in
                // From the loop's own thread: queues the block and writes no wake-up; the wait is a poll for it.
                loop.perform {
                    log.append("B")
                    loop.run(mode: "nested", timeout: .milliseconds(5))
                }
            }
            loop.add(performed, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(20))
            return (log.text, kernel.sleepOffsets(since: start))
        }
        #expect(trace == "Entry BT BS BW AW B n.Entry n.BT n.BS n.BW n.AW n.Exit BT BS BW AW Exit")
        #expect(sleeps == [.zero ... .milliseconds(5), .milliseconds(5) ... .milliseconds(20)])
    }

    @Test func aWakeUpFromAStep9CalloutIsOneTheLoopAlreadyGoesRoundFor() {
        // Blocks queued by a step-9 callout run at the next iteration's step 3 (no sleep in between), so a wake-up
        // written meanwhile is read with the one the wait returned for instead of ending the next sleep at once.
        let (trace, sleeps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            let performed = LoopObserver(activities: .beforeWaiting, repeats: false) { _, _ in
                loop.perform {
                    log.append("B1")
                    loop.perform { log.append("B2") }
                    loop.wakeUp()
                }
            }
            loop.add(performed, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(10))
            return (log.text, kernel.sleepOffsets(since: start))
        }
        #expect(trace == "Entry BT BS BW AW B1 BT BS B2 BW AW Exit")
        // The first wait is a poll for the block (rule 31), not a sleep.
        #expect(sleeps == [.zero ... .milliseconds(10)])
    }

    @Test func aStopInEntryEndsTheRunRightAfterEntry() {
        let (trace, result) = onThread { () -> (String, Loop.RunResult) in
            let loop = Loop.current
            let log = TraceLog()
            loop.add(LoopObserver(activities: .entry) { _, _ in loop.stop() }, forMode: .default)
            loop.add(traceObserver(log, order: 1), forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(5))
            return (log.text, result)
        }
        #expect(trace == "Entry Exit")
        #expect(result == .stopped)
    }

    @Test func nestedRunsHaveTheirOwnStop() {
        let trace = onThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let inner: Loop.Mode = "inner"
            loop.add(LoopSource {}, forMode: .default)
            loop.add(LoopSource {}, forMode: inner)
            loop.add(LoopTimer(after: .milliseconds(5)) { _ in
                loop.perform(inModes: [inner]) { loop.stop() }
                let innerResult = loop.run(mode: inner, timeout: .seconds(5))
                log.append("inner:\(innerResult) depth:\(loop.runDepth)")
                loop.perform(inModes: [.default]) { loop.stop() }
            }, forMode: .default)
            let outer = loop.run(mode: .default, timeout: .seconds(5))
            log.append("outer:\(outer) depth:\(loop.runDepth)")
            return log.text
        }
        #expect(trace == "inner:stopped depth:1 outer:stopped depth:0")
    }

    @Test func timeoutsAreKeptWithoutAHelperThread() {
        // The deadline is the wait's own (a timerfd), so the run's thread sees no other thread start.
        let (result, elapsed, wakeUps) = onThread { () -> (Loop.RunResult, Double, UInt64) in
            let loop = Loop.current
            loop.add(LoopSource {}, forMode: .default)
            let start = Loop.Instant.now
            let result = loop.run(mode: .default, timeout: .milliseconds(50))
            let elapsed = milliseconds(start, .now)
            return (result, elapsed, loop.statistics.wakeUps(.timeout))
        }
        // On the real kernel only that the timerfd ends the run, not before its deadline; the exact timeout rules
        // are TimerTests' (virtual time).
        #expect(result == .timedOut)
        #expect(elapsed >= 50)
        #expect(wakeUps == 1)
    }

    @Test func runWithoutArgumentsRepeatsUntilStopped() {
        let count = onThread { () -> Int in
            let loop = Loop.current
            let count = Shared(0)
            loop.add(LoopTimer(after: .zero, interval: .milliseconds(1)) { _ in
                count.value += 1
                if count.value == 5 { loop.stop() }
            }, forMode: .default)
            loop.run()
            return count.value
        }
        #expect(count == 5)
    }

    @Test func runWithoutArgumentsReturnsWhenTheModeEmpties() {
        let done = onThread { () -> Bool in
            let loop = Loop.current
            loop.add(LoopTimer(after: .milliseconds(2)) { _ in }, forMode: .default)
            loop.run()
            return true
        }
        #expect(done)
    }

    @Test func isWaitingIsTrueOnlyWhileBlocked() {
        let background = BackgroundLoop()
        defer { background.stop() }
        #expect(eventually { background.loop.isWaiting })
        let observed = Shared<Bool?>(nil)
        background.loop.perform { observed.value = background.loop.isWaiting }
        #expect(eventually { observed.value != nil })
        #expect(observed.value == false)
    }

    @Test func currentIsPerThreadAndMainExists() {
        let (same, differs, isMain) = onThread { () -> (Bool, Bool, Bool) in
            (Loop.current === Loop.current, Loop.current !== Loop.main, Loop.current.isMain)
        }
        #expect(same && differs && !isMain)
        #expect(Loop.main.isMain)
    }
}


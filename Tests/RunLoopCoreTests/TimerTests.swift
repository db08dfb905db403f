import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// Rulebook §7: timers. The timing rules run in virtual time (a `VirtualKernel`), so every fire date, wake-up
/// and timeout is asserted exactly; the last tests check on the real kernel that timerfd re-arming works at all.
@Suite struct TimerTests {
    // ===== one-shot timers =====

    @Test func aOneShotTimerFiresOnceAtItsDateAndIsInvalidated() {
        let (fires, valid, result, sleeps) = onVirtualLoop { kernel, loop -> ([Duration], Bool, Loop.RunResult, [ClosedRange<Duration>]) in
            let start = kernel.now
            let fires = Shared<[Duration]>([])
            let timer = LoopTimer(fireAt: start.advanced(by: .milliseconds(10))) { _ in
                fires.value.append(kernel.elapsed(since: start))
            }
            loop.add(timer, forMode: .default)
            let result = loop.run(mode: .default, timeout: .milliseconds(200))
            return (fires.value, timer.isValid, result, kernel.sleepOffsets(since: start))
        }
        #expect(fires == [.milliseconds(10)])
        #expect(!valid)
        // The mode is empty once the one-shot timer is gone: no sleep until the timeout.
        #expect(result == .finished)
        #expect(sleeps == [.zero ... .milliseconds(10)])
    }

    @Test func theRulebooksOneShotExampleTraceIsExact() {
        // Rulebook rule 11: one-shot timer at 20 ms, run 1 s: Entry BT BS BW AW T1 Exit =>finished, at 20 ms.
        let (trace, result, elapsed) = onVirtualLoop { kernel, loop -> (String, Loop.RunResult, Duration) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(20))) { _ in log.append("T1") }, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, result, kernel.elapsed(since: start))
        }
        #expect(trace == "Entry BT BS BW AW T1 Exit")
        #expect(result == .finished)
        #expect(elapsed == .milliseconds(20))
    }

    @Test func movingAOneShotTimersFireDateInsideItsCalloutDoesNotReviveIt() {
        let (fires, valid) = onVirtualLoop { kernel, loop -> (Int, Bool) in
            let count = Shared(0)
            let timer = LoopTimer(fireAt: kernel.now) { timer in
                count.value += 1
                timer.nextFireDate = kernel.now.advanced(by: .milliseconds(5))
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(50))
            return (count.value, timer.isValid)
        }
        #expect(fires == 1)
        #expect(!valid)
    }

    @Test func aOneShotTimerThatRemovesItselfFromItsModeInItsCalloutIsInvalidatedToo() {
        // Rule 23: invalidated after its callout "also when the callout removed it from its modes".
        let (fires, valid, contained) = onVirtualLoop { kernel, loop -> (Int, Bool, Bool) in
            let count = Shared(0)
            let timer = LoopTimer(fireAt: kernel.now) { timer in
                count.value += 1
                loop.remove(timer, forMode: .default)
            }
            loop.add(timer, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(10))
            let valid = timer.isValid
            // Invalid, so adding it again does nothing (as CF does).
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(10))
            return (count.value, valid, loop.contains(timer, inMode: .default))
        }
        #expect(fires == 1)
        #expect(!valid)
        #expect(!contained)
    }

    @Test func delayedPerformsRunOnTheLoopsClockAndCanBeCancelled() {
        let (trace, at) = onVirtualLoop { kernel, loop -> (String, [Duration]) in
            let start = kernel.now
            let log = TraceLog()
            let at = Shared<[Duration]>([])
            loop.perform(after: .milliseconds(10)) {
                log.append("ran")
                at.value.append(kernel.elapsed(since: start))
            }
            let cancelled = loop.perform(after: .milliseconds(5)) { log.append("cancelled") }
            cancelled.invalidate()
            loop.run(mode: .default, timeout: .milliseconds(100))
            return (log.text, at.value)
        }
        #expect(trace == "ran")
        #expect(at == [.milliseconds(10)])
    }

    // ===== repeating timers: the grid =====

    @Test func aRepeatingTimerStaysOnItsGridAndSkipsMissedSlots() {
        // Rule 24's example: a 100 ms timer whose first callout takes 250 ms fires at 100, 400 and 500 ms; the
        // slots at 200 and 300 ms are skipped, not replayed.
        let fires = onVirtualLoop { kernel, loop -> [Duration] in
            let start = kernel.now
            let fires = Shared<[Duration]>([])
            let timer = LoopTimer(fireAt: start.advanced(by: .milliseconds(100)), interval: .milliseconds(100)) { timer in
                fires.value.append(kernel.elapsed(since: start))
                if fires.value.count == 1 { kernel.advanceTime(by: .milliseconds(250)) }
                if fires.value.count == 3 { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(2))
            return fires.value
        }
        #expect(fires == [.milliseconds(100), .milliseconds(400), .milliseconds(500)])
    }

    @Test func gridDatesAreArithmeticOnTheScheduledDate() {
        // A 20 ms grid from 10 ms whose first callout takes 45 ms: the slots at 30 and 50 ms are skipped and the
        // next fire date is 70 ms, not "callout end + interval" (100 ms).
        let (fires, next) = onVirtualLoop { kernel, loop -> ([Duration], Duration?) in
            let start = kernel.now
            let fires = Shared<[Duration]>([])
            let next = Shared<Duration?>(nil)
            let timer = LoopTimer(fireAt: start.advanced(by: .milliseconds(10)), interval: .milliseconds(20)) { timer in
                fires.value.append(kernel.elapsed(since: start))
                if fires.value.count == 1 { kernel.advanceTime(by: .milliseconds(45)) } else { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            loop.add(LoopObserver(activities: .beforeWaiting) { _, _ in
                if next.value == nil && !fires.value.isEmpty { next.value = start.duration(to: timer.nextFireDate) }
            }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return (fires.value, next.value)
        }
        #expect(next == .milliseconds(70))
        #expect(fires == [.milliseconds(10), .milliseconds(70)])
    }

    @Test func aCalloutThatEndsExactlyOnASlotSkipsThatSlot() {
        // "The first grid date later than the moment the callout returned": a callout returning at exactly 30 ms
        // moves a 10 ms grid to 40 ms.
        let fires = onVirtualLoop { kernel, loop -> [Duration] in
            let start = kernel.now
            let fires = Shared<[Duration]>([])
            let timer = LoopTimer(fireAt: start.advanced(by: .milliseconds(10)), interval: .milliseconds(10)) { timer in
                fires.value.append(kernel.elapsed(since: start))
                if fires.value.count == 1 { kernel.advanceTime(by: .milliseconds(20)) }
                if fires.value.count == 2 { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return fires.value
        }
        #expect(fires == [.milliseconds(10), .milliseconds(40)])
    }

    @Test func settingTheFireDateInsideTheCalloutWinsOverTheGrid() {
        let fires = onVirtualLoop { kernel, loop -> [Duration] in
            let start = kernel.now
            let fires = Shared<[Duration]>([])
            let timer = LoopTimer(fireAt: start.advanced(by: .milliseconds(10)), interval: .milliseconds(10)) { timer in
                fires.value.append(kernel.elapsed(since: start))
                if fires.value.count == 1 { timer.nextFireDate = start.advanced(by: .milliseconds(150)) }
                if fires.value.count == 3 { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return fires.value
        }
        // The grid continues from the date set in the callout.
        #expect(fires == [.milliseconds(10), .milliseconds(150), .milliseconds(160)])
    }

    @Test func aZeroToleranceTimerFiresExactlyOnEverySlot() {
        let (fires, sleeps) = onVirtualLoop { kernel, loop -> ([Duration], Int) in
            let start = kernel.now
            let fires = Shared<[Duration]>([])
            let timer = LoopTimer(fireAt: start.advanced(by: .milliseconds(2)), interval: .milliseconds(2)) { timer in
                fires.value.append(kernel.elapsed(since: start))
                if fires.value.count == 50 { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(5))
            return (fires.value, kernel.sleeps.count)
        }
        #expect(fires == (1...50).map { Duration.milliseconds(2 * $0) })
        #expect(sleeps == 50, "one wake-up per firing")
    }

    // ===== firing order =====

    @Test func aTimerAddedDuringATimerCalloutDoesNotFireInThatPass() {
        let (trace, elapsed) = onVirtualLoop { kernel, loop -> (String, Duration) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(LoopObserver(activities: .beforeTimers) { _, _ in log.append("BT") }, forMode: .default)
            loop.add(LoopTimer(fireAt: start) { _ in
                log.append("T1")
                loop.add(LoopTimer(fireAt: start) { _ in log.append("T2") }, forMode: .default)
            }, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(100))
            return (log.text, kernel.elapsed(since: start))
        }
        #expect(trace == "BT T1 BT T2")
        #expect(elapsed == .zero, "both were due: the loop never slept")
    }

    @Test func dueTimersFireInFireDateOrderTiesFirstAddedFirst() {
        let trace = onVirtualLoop { kernel, loop -> String in
            let log = TraceLog()
            let base = kernel.now
            loop.add(LoopTimer(fireAt: base.advanced(by: .milliseconds(2))) { _ in log.append("late") }, forMode: .default)
            loop.add(LoopTimer(fireAt: base, order: 9) { _ in log.append("tie1") }, forMode: .default)
            loop.add(LoopTimer(fireAt: base, order: -9) { _ in log.append("tie2") }, forMode: .default)
            loop.add(LoopTimer(fireAt: base.advanced(by: .milliseconds(-5))) { _ in log.append("early") }, forMode: .default)
            loop.add(LoopTimer(fireAt: base.advanced(by: .milliseconds(3))) { _ in log.append("notYet") }, forMode: .default)
            kernel.advanceTime(by: .milliseconds(2))
            loop.run(mode: .default, timeout: .zero)
            return log.text
        }
        // "early" was created with a date already past: like CF, it stores its creation instant, `base`, and
        // ties with the two created before it (PastFireDateTests).
        #expect(trace == "tie1 tie2 early late")
    }

    @Test func timersDueAtTheSameWakeUpFireInOneIteration() {
        let (trace, sleeps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in log.append(activity.short) },
                     forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10)), tolerance: .milliseconds(5)) { _ in log.append("A") },
                     forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10))) { _ in log.append("B") }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, kernel.sleepOffsets(since: start))
        }
        #expect(trace == "BW AW A B")
        #expect(sleeps == [.zero ... .milliseconds(10)])
    }

    // ===== tolerance: coalesced wake-ups =====

    @Test func toleranceWakesAtTheLargestFireDateInsideEveryWindow() {
        // 10 ms (tolerance 3) and 12 ms (tolerance 3) share one wake-up at 12 ms, the latest date inside both
        // windows ([10, 13] and [12, 15]); 14 ms is outside the first window and gets its own.
        let (fires, sleeps) = onVirtualLoop { kernel, loop -> ([String: Duration], [ClosedRange<Duration>]) in
            let start = kernel.now
            let fires = Shared<[String: Duration]>([:])
            for (name, ms) in [("a", 10), ("b", 12), ("c", 14)] {
                loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(ms)), tolerance: .milliseconds(3)) { _ in
                    fires.value[name] = kernel.elapsed(since: start)
                }, forMode: .default)
            }
            loop.run(mode: .default, timeout: .seconds(1))
            return (fires.value, kernel.sleepOffsets(since: start))
        }
        #expect(sleeps == [.zero ... .milliseconds(12), .milliseconds(12) ... .milliseconds(14)])
        #expect(fires == ["a": .milliseconds(12), "b": .milliseconds(12), "c": .milliseconds(14)])
    }

    @Test func toleranceCoalescesWakeUpsWithinEveryTimersWindow() {
        // A at 20 ms (tolerance 40 ms) and B at 50 ms (no tolerance) share one wake-up at 50 ms; C at 200 ms is
        // outside A's window and gets its own.
        let (fires, sleeps, wakeUps) = onVirtualLoop { kernel, loop -> ([String: Duration], [ClosedRange<Duration>], UInt64) in
            let start = kernel.now
            let fires = Shared<[String: Duration]>([:])
            func timer(_ name: String, _ ms: Int, tolerance: Duration) -> LoopTimer {
                LoopTimer(fireAt: start.advanced(by: .milliseconds(ms)), tolerance: tolerance) { _ in
                    fires.value[name] = kernel.elapsed(since: start)
                }
            }
            loop.add(timer("A", 20, tolerance: .milliseconds(40)), forMode: .default)
            loop.add(timer("B", 50, tolerance: .zero), forMode: .default)
            loop.add(timer("C", 200, tolerance: .zero), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return (fires.value, kernel.sleepOffsets(since: start), loop.statistics.wakeUps(.timer))
        }
        #expect(sleeps == [.zero ... .milliseconds(50), .milliseconds(50) ... .milliseconds(200)])
        #expect(fires == ["A": .milliseconds(50), "B": .milliseconds(50), "C": .milliseconds(200)])
        #expect(wakeUps == 2)
    }

    @Test func aLaterTimersTighterWindowLimitsTheGroup() {
        // A at 10 ms may wait until 110 ms, but B at 20 ms only until 25 ms: the group's hard deadline is 25 ms,
        // so C at 30 ms is not waited for and the loop wakes at 20 ms for A and B.
        let (fires, sleeps) = onVirtualLoop { kernel, loop -> ([String: Duration], [ClosedRange<Duration>]) in
            let start = kernel.now
            let fires = Shared<[String: Duration]>([:])
            for (name, ms, tolerance) in [("A", 10, 100), ("B", 20, 5), ("C", 30, 0)] {
                loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(ms)), tolerance: .milliseconds(tolerance)) { _ in
                    fires.value[name] = kernel.elapsed(since: start)
                }, forMode: .default)
            }
            loop.run(mode: .default, timeout: .seconds(1))
            return (fires.value, kernel.sleepOffsets(since: start))
        }
        #expect(sleeps == [.zero ... .milliseconds(20), .milliseconds(20) ... .milliseconds(30)])
        #expect(fires == ["A": .milliseconds(20), "B": .milliseconds(20), "C": .milliseconds(30)])
    }

    @Test func theRunTimeoutCutsATolerantWakeUpShort() {
        // The timer may fire as late as 80 ms, but the run ends at 30 ms; the loop wakes at the timeout, not later,
        // and the timer (not yet due) does not fire in that run.
        let (result, sleeps, fired) = onVirtualLoop { kernel, loop -> (Loop.RunResult, [ClosedRange<Duration>], Bool) in
            let start = kernel.now
            let fired = Shared(false)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(50)), tolerance: .milliseconds(30)) { _ in fired.value = true },
                     forMode: .default)
            let result = loop.run(mode: .default, timeout: .milliseconds(30))
            return (result, kernel.sleepOffsets(since: start), fired.value)
        }
        #expect(result == .timedOut)
        #expect(sleeps == [.zero ... .milliseconds(30)])
        #expect(!fired)
    }

    // ===== run timeouts and results =====

    @Test func aRunTimesOutExactlyAtItsDeadline() {
        let (result, sleeps, reasons) = onVirtualLoop { kernel, loop -> (Loop.RunResult, [ClosedRange<Duration>], [UInt64]) in
            let start = kernel.now
            loop.add(LoopSource {}, forMode: .default)
            let result = loop.run(mode: .default, timeout: .milliseconds(100))
            let stats = loop.statistics
            return (result, kernel.sleepOffsets(since: start), [stats.wakeUps(.timeout), stats.wakeUps(.timer)])
        }
        #expect(result == .timedOut)
        #expect(sleeps == [.zero ... .milliseconds(100)])
        #expect(reasons == [1, 0], "one wake-up, counted as the timeout, not a timer")
    }

    @Test func aTimerLaterThanTheTimeoutWaitsForTheNextRun() {
        let (results, fires) = onVirtualLoop { kernel, loop -> ([Loop.RunResult], [Duration]) in
            let start = kernel.now
            let fires = Shared<[Duration]>([])
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(200))) { _ in fires.value.append(kernel.elapsed(since: start)) },
                     forMode: .default)
            let first = loop.run(mode: .default, timeout: .milliseconds(100))
            let afterFirst = fires.value.count
            let second = loop.run(mode: .default, timeout: .seconds(1))
            return ([first, second], afterFirst == 0 ? fires.value : [])
        }
        #expect(results == [.timedOut, .finished])
        #expect(fires == [.milliseconds(200)])
    }

    @Test func aZeroTimeoutPollsWithoutSleepingOrMovingTheClock() {
        let (result, elapsed, sleeps, fired) = onVirtualLoop { kernel, loop -> (Loop.RunResult, Duration, Int, Bool) in
            let start = kernel.now
            let fired = Shared(false)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(1))) { _ in fired.value = true }, forMode: .default)
            let result = loop.run(mode: .default, timeout: .zero)
            return (result, kernel.elapsed(since: start), kernel.sleeps.count, fired.value)
        }
        #expect(result == .timedOut)
        #expect(elapsed == .zero)
        #expect(sleeps == 0)
        #expect(!fired)
    }

    @Test func aStopFromATimerEndsTheRunAtThatTime() {
        let (result, elapsed) = onVirtualLoop { kernel, loop -> (Loop.RunResult, Duration) in
            let start = kernel.now
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(30))) { _ in loop.stop() }, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(1))
            return (result, kernel.elapsed(since: start))
        }
        #expect(result == .stopped)
        #expect(elapsed == .milliseconds(30))
    }

    @Test func returnAfterSourceHandledIgnoresTimers() {
        // Timers never count as a handled source: the run goes on until its timeout.
        let (result, fires) = onVirtualLoop { kernel, loop -> (Loop.RunResult, Int) in
            let start = kernel.now
            let fires = Shared(0)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10)), interval: .milliseconds(10)) { _ in fires.value += 1 },
                     forMode: .default)
            let result = loop.run(mode: .default, timeout: .milliseconds(35), returnAfterSourceHandled: true)
            return (result, fires.value)
        }
        #expect(result == .timedOut)
        #expect(fires == 3)
    }

    @Test func aNestedRunDoesNotFireATimerThatIsInItsCallout() {
        let (count, inner, elapsed) = onVirtualLoop { kernel, loop -> (Int, Loop.RunResult?, Duration) in
            let start = kernel.now
            let count = Shared(0)
            let inner = Shared<Loop.RunResult?>(nil)
            let timer = LoopTimer(fireAt: start, interval: .milliseconds(1)) { timer in
                count.value += 1
                if count.value == 1 { inner.value = loop.run(mode: .default, timeout: .milliseconds(20)) }
                timer.invalidate()
            }
            loop.add(timer, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(50))
            return (count.value, inner.value, kernel.elapsed(since: start))
        }
        #expect(count == 1)
        #expect(inner == .timedOut)
        // The nested run slept to its own timeout (the timer in its callout does not hold it back), the outer one
        // to its own.
        #expect(elapsed == .milliseconds(50))
    }

    // ===== rescheduling a sleeping loop from another thread =====

    @Test func settingTheFireDateFromAnotherThreadReArmsASleepingLoop() {
        let kernel = VirtualKernel(autoAdvance: false)
        let start = kernel.now
        // BackgroundLoop runs 5 s runs: the loop never sleeps past that run's deadline.
        let background = BackgroundLoop(kernel: kernel)
        defer { background.stop() }
        let runDeadline = start.advanced(by: .seconds(5))
        let fired = Shared<Duration?>(nil)
        let timer = LoopTimer(fireAt: start.advanced(by: .seconds(3600))) { _ in fired.value = kernel.elapsed(since: start) }
        background.loop.add(timer, forMode: .default)
        #expect(eventually { background.loop.isWaiting && kernel.armedDate == runDeadline })

        timer.nextFireDate = start.advanced(by: .milliseconds(30))
        #expect(kernel.armedDate == start.advanced(by: .milliseconds(30)), "re-armed at once, while the loop sleeps")
        kernel.advanceTime(to: start.advanced(by: .milliseconds(30)))
        #expect(eventually { fired.value != nil })
        #expect(fired.value == .milliseconds(30))

        // Moved later than the armed deadline: the loop is re-armed for the later date, not woken at the old one.
        #expect(eventually { background.loop.isWaiting })
        let second = LoopTimer(fireAt: start.advanced(by: .milliseconds(50))) { _ in fired.value = nil }
        background.loop.add(second, forMode: .default)
        #expect(kernel.armedDate == start.advanced(by: .milliseconds(50)))
        second.nextFireDate = start.advanced(by: .seconds(3600))
        #expect(kernel.armedDate == runDeadline)
    }

    @Test func removingOrInvalidatingTheLastTimerReArmsForTheRunDeadline() {
        let kernel = VirtualKernel(autoAdvance: false)
        let start = kernel.now
        // BackgroundLoop runs 5 s runs: with no timer the loop is armed for that run's deadline.
        let background = BackgroundLoop(kernel: kernel)
        defer { background.stop() }
        let runDeadline = start.advanced(by: .seconds(5))
        #expect(eventually { background.loop.isWaiting && kernel.armedDate == runDeadline })

        let timer = LoopTimer(fireAt: start.advanced(by: .milliseconds(80))) { _ in }
        background.loop.add(timer, forMode: .default)
        #expect(kernel.armedDate == start.advanced(by: .milliseconds(80)))
        background.loop.remove(timer, forMode: .default)
        #expect(kernel.armedDate == runDeadline, "the removed timer's deadline is gone")

        let invalidated = LoopTimer(fireAt: start.advanced(by: .milliseconds(80))) { _ in }
        background.loop.add(invalidated, forMode: .default)
        #expect(kernel.armedDate == start.advanced(by: .milliseconds(80)))
        invalidated.invalidate()
        #expect(kernel.armedDate == runDeadline)

        // Past the old deadlines nothing wakes the loop; the run deadline does.
        let sleepsBefore = kernel.sleeps.count
        kernel.advanceTime(to: start.advanced(by: .milliseconds(200)))
        #expect(background.loop.statistics.wakeUps(.timer) == 0)
        kernel.advanceTime(to: runDeadline)
        #expect(eventually { kernel.sleeps.count > sleepsBefore })
        #expect(kernel.sleeps[sleepsBefore].until == runDeadline)
        #expect(background.loop.statistics.wakeUps(.timer) == 0)
        #expect(eventually { background.loop.statistics.wakeUps(.timeout) == 1 })
    }

    // ===== modes =====

    @Test func aTimerInSeveralModesIsRescheduledInAll() {
        let result = onVirtualLoop { kernel, loop -> [String] in
            let timer = LoopTimer(fireAt: kernel.now.advanced(by: .seconds(100))) { _ in }
            loop.add(timer, forMode: .default)
            loop.add(timer, forMode: "b")
            let soon = kernel.now.advanced(by: .seconds(1))
            timer.nextFireDate = soon
            return [loop.nextTimerFireDate(forMode: .default) == soon ? "ok" : "bad",
                    loop.nextTimerFireDate(forMode: "b") == soon ? "ok" : "bad",
                    loop.nextTimerFireDate(forMode: "c") == nil ? "ok" : "bad"]
        }
        #expect(result == ["ok", "ok", "ok"])
    }

    @Test func aTimerInAnotherModeNeitherFiresNorWakesTheLoop() {
        let (fired, sleeps) = onVirtualLoop { kernel, loop -> (Bool, [ClosedRange<Duration>]) in
            let start = kernel.now
            let fired = Shared(false)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10))) { _ in fired.value = true }, forMode: "other")
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(40))
            return (fired.value, kernel.sleepOffsets(since: start))
        }
        #expect(!fired)
        #expect(sleeps == [.zero ... .milliseconds(40)])
    }

    // ===== the real kernel: timerfd works at all (no timing asserted) =====

    @Test func onTheRealKernelADueTimerFiresAndARepeatingOneRepeats() {
        let (oneShot, repeats, result) = onThread { () -> (Int, Int, Loop.RunResult) in
            let loop = Loop.current
            let oneShot = Shared(0)
            let repeats = Shared(0)
            loop.add(LoopTimer(after: .milliseconds(1)) { _ in oneShot.value += 1 }, forMode: .default)
            loop.add(LoopTimer(after: .milliseconds(1), interval: .milliseconds(1)) { timer in
                repeats.value += 1
                if repeats.value == 3 { timer.invalidate() }
            }, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(30))
            return (oneShot.value, repeats.value, result)
        }
        #expect(oneShot == 1)
        #expect(repeats == 3)
        #expect(result == .finished)
    }

    @Test func onTheRealKernelATimerForTheDateThatJustFiredStillWakesTheLoop() {
        // Regression: the timerfd stayed "armed" for the expired date, so arming it again for that same date was
        // skipped and the loop slept for good. A watchdog wakes such a loop after 10 s so the test fails instead
        // of hanging.
        let (trace, timerWakeUps, manualWakeUps) = onThread { () -> (String, UInt64, UInt64) in
            let loop = Loop.current
            let log = TraceLog()
            let done = Shared(false)
            let watchdog = JoinableThread {
                let deadline = ContinuousClock.now + .seconds(10)
                while !done.value && ContinuousClock.now < deadline { usleep(1_000) }
                if !done.value { loop.wakeUp() }
            }
            watchdog.start()
            let date = Loop.Instant.now.advanced(by: .milliseconds(1))
            loop.add(LoopTimer(fireAt: date) { _ in
                log.append("T1")
                loop.add(LoopTimer(fireAt: date) { _ in log.append("T2") }, forMode: .default)
            }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
            done.value = true
            watchdog.join()
            return (log.text, loop.statistics.wakeUps(.timer), loop.statistics.wakeUps(.manual))
        }
        #expect(trace == "T1 T2")
        #expect(timerWakeUps == 2)
        #expect(manualWakeUps == 0)
    }

    @Test func onTheRealKernelAFireDateMovedFromAnotherThreadWakesASleepingLoop() {
        let background = BackgroundLoop(turn: .seconds(3600))   // no run's end wakes the loop instead
        defer { background.stop() }
        let fired = Shared(false)
        let timer = LoopTimer(after: .seconds(3600)) { _ in fired.value = true }
        background.loop.add(timer, forMode: .default)
        #expect(eventually { background.loop.isWaiting })
        timer.nextFireDate = .now
        #expect(eventually { fired.value })
        #expect(background.loop.statistics.wakeUps(.timer) >= 1)
    }
}

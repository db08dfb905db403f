import Glibc
import RunLoopCore
import Testing

/// Rulebook §7: timers. Timing assertions use generous bounds: the machine is shared and noisy.
@Suite struct TimerTests {
    @Test func aOneShotTimerFiresOnceAndIsInvalidated() {
        let (fires, valid, lateness) = onNewThread { () -> (Int, Bool, Double) in
            let loop = Loop.current
            let count = Shared(0)
            let late = Shared(0.0)
            let timer = LoopTimer(after: .milliseconds(10)) { timer in
                count.value += 1
                late.value = milliseconds(timer.nextFireDate, .now)
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(200))
            return (count.value, timer.isValid, late.value)
        }
        #expect(fires == 1)
        #expect(!valid)
        #expect(lateness >= 0 && lateness < 50)
    }

    @Test func movingAOneShotTimersFireDateInsideItsCalloutDoesNotReviveIt() {
        let (fires, valid) = onNewThread { () -> (Int, Bool) in
            let loop = Loop.current
            let count = Shared(0)
            let timer = LoopTimer(after: .zero) { timer in
                count.value += 1
                timer.nextFireDate = .now
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(50))
            return (count.value, timer.isValid)
        }
        #expect(fires == 1)
        #expect(!valid)
    }

    @Test func aRepeatingTimerStaysOnItsGridAndSkipsMissedSlots() {
        // Rule 24's example: a 100 ms timer whose first callout blocks for 250 ms fires at about 100, 400, 500 ms.
        let offsets = onNewThread { () -> [Double] in
            let loop = Loop.current
            let start = Loop.Instant.now
            let fires = Shared<[Double]>([])
            let timer = LoopTimer(fireAt: start.advanced(by: .milliseconds(100)), interval: .milliseconds(100)) { timer in
                fires.value.append(milliseconds(start, .now))
                if fires.value.count == 1 { usleep(250_000) }
                if fires.value.count == 3 { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(2))
            return fires.value
        }
        try? #require(offsets.count == 3)
        #expect(offsets[0] >= 100 && offsets[0] < 180)
        #expect(offsets[1] >= 400 && offsets[1] < 480)
        #expect(offsets[2] >= 500 && offsets[2] < 580)
    }

    @Test func gridDatesAreArithmeticOnTheScheduledDate() {
        // nextFireDate after a slow callout lands on the grid, not "now + interval".
        let (next, start) = onNewThread { () -> (Loop.Instant, Loop.Instant) in
            let loop = Loop.current
            let start = Loop.Instant.now.advanced(by: .milliseconds(10))
            let next = Shared<Loop.Instant?>(nil)
            let timer = LoopTimer(fireAt: start, interval: .milliseconds(20)) { _ in usleep(45_000) }
            loop.add(timer, forMode: .default)
            loop.add(LoopObserver(activities: .beforeTimers) { _, _ in
                if next.value == nil && timer.nextFireDate > start { next.value = timer.nextFireDate; loop.stop() }
            }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return (next.value!, start)
        }
        // 10 + 45 ms of callout: slots at 30 and 50 are skipped, next is 70 ms (= start + 3 × 20 ms).
        #expect(next == start.advanced(by: .milliseconds(60)))
    }

    @Test func settingTheFireDateInsideTheCalloutWinsOverTheGrid() {
        let offsets = onNewThread { () -> [Double] in
            let loop = Loop.current
            let start = Loop.Instant.now
            let fires = Shared<[Double]>([])
            let timer = LoopTimer(fireAt: start.advanced(by: .milliseconds(10)), interval: .milliseconds(10)) { timer in
                fires.value.append(milliseconds(start, .now))
                if fires.value.count == 1 { timer.nextFireDate = start.advanced(by: .milliseconds(150)) }
                if fires.value.count == 2 { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return fires.value
        }
        try? #require(offsets.count == 2)
        #expect(offsets[1] >= 150 && offsets[1] < 230)
    }

    @Test func settingTheFireDateFromAnotherThreadReschedulesASleepingLoop() {
        let background = BackgroundLoop()
        defer { background.stop() }
        let fired = Shared<Loop.Instant?>(nil)
        let timer = LoopTimer(after: .seconds(3600)) { _ in fired.value = .now }
        background.loop.add(timer, forMode: .default)
        #expect(eventually { background.loop.isWaiting })
        let target = Loop.Instant.now.advanced(by: .milliseconds(30))
        timer.nextFireDate = target
        #expect(eventually(timeout: .seconds(2)) { fired.value != nil })
        if let when = fired.value {
            #expect(when >= target)
            #expect(milliseconds(target, when) < 100)
        }
        // Later than the armed deadline: the loop must not fire at the old one.
        let wakeUpsBefore = background.loop.statistics.wakeUps(.timer)
        let second = LoopTimer(after: .milliseconds(20)) { _ in fired.value = nil }
        background.loop.add(second, forMode: .default)
        second.nextFireDate = .now.advanced(by: .seconds(3600))
        usleep(100_000)
        #expect(fired.value != nil)
        #expect(background.loop.statistics.wakeUps(.timer) == wakeUpsBefore)
    }

    @Test func aTimerAddedDuringATimerCalloutDoesNotFireInThatPass() {
        let trace = onNewThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            loop.add(LoopObserver(activities: .beforeTimers) { _, _ in log.append("BT") }, forMode: .default)
            loop.add(LoopTimer(after: .zero) { _ in
                log.append("T1")
                loop.add(LoopTimer(after: .zero) { _ in log.append("T2") }, forMode: .default)
            }, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(100))
            return log.text
        }
        #expect(trace == "BT T1 BT T2")
    }

    @Test func dueTimersFireInFireDateOrderTiesFirstAddedFirst() {
        let trace = onNewThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            let base = Loop.Instant.now
            loop.add(LoopTimer(fireAt: base.advanced(by: .milliseconds(2))) { _ in log.append("late") }, forMode: .default)
            loop.add(LoopTimer(fireAt: base, order: 9) { _ in log.append("tie1") }, forMode: .default)
            loop.add(LoopTimer(fireAt: base, order: -9) { _ in log.append("tie2") }, forMode: .default)
            loop.add(LoopTimer(fireAt: base.advanced(by: .milliseconds(-5))) { _ in log.append("early") }, forMode: .default)
            usleep(5_000)
            loop.run(mode: .default, timeout: .zero)
            return log.text
        }
        #expect(trace == "early tie1 tie2 late")
    }

    @Test func toleranceCoalescesWakeUpsWithinEveryTimersWindow() {
        // A at 20 ms (tolerance 40 ms) and B at 50 ms (no tolerance) can share one wake-up at 50 ms; C at 200 ms
        // is outside A's window and gets its own.
        let (offsets, sleeps) = onNewThread { () -> ([String: Double], UInt64) in
            let loop = Loop.current
            let start = Loop.Instant.now
            let fires = Shared<[String: Double]>([:])
            func timer(_ name: String, _ ms: Int, tolerance: Duration) -> LoopTimer {
                LoopTimer(fireAt: start.advanced(by: .milliseconds(ms)), tolerance: tolerance) { _ in
                    fires.value[name] = milliseconds(start, .now)
                }
            }
            loop.add(timer("A", 20, tolerance: .milliseconds(40)), forMode: .default)
            loop.add(timer("B", 50, tolerance: .zero), forMode: .default)
            loop.add(timer("C", 200, tolerance: .zero), forMode: .default)
            let sleepsBefore = loop.statistics.sleeps
            loop.run(mode: .default, timeout: .seconds(1))
            return (fires.value, loop.statistics.sleeps - sleepsBefore)
        }
        #expect(sleeps == 2, "A and B share one wake-up, C has its own")
        #expect((offsets["A"] ?? 0) >= 50 && (offsets["A"] ?? 0) <= 60 + 30)
        #expect((offsets["B"] ?? 0) >= 50 && (offsets["B"] ?? 0) < 50 + 30)
        #expect((offsets["C"] ?? 0) >= 200 && (offsets["C"] ?? 0) < 200 + 30)
    }

    @Test func zeroToleranceFiresOnTime() {
        let lateness = onNewThread { () -> [Double] in
            let loop = Loop.current
            let late = Shared<[Double]>([])
            let timer = LoopTimer(after: .milliseconds(2), interval: .milliseconds(2)) { timer in
                late.value.append(milliseconds(timer.nextFireDate, .now))
                if late.value.count == 50 { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(5))
            return late.value.sorted()
        }
        #expect(lateness.count == 50)
        #expect(lateness[25] < 2.0, "median lateness of a zero-tolerance timer should be far below a millisecond")
    }

    @Test func removingTheLastTimerCausesNoWakeUp() {
        let background = BackgroundLoop()
        defer { background.stop() }
        let timer = LoopTimer(after: .milliseconds(80)) { _ in }
        background.loop.add(timer, forMode: .default)
        #expect(eventually { background.loop.isWaiting })
        usleep(10_000)
        let before = background.loop.statistics
        background.loop.remove(timer, forMode: .default)
        usleep(200_000)
        let after = background.loop.statistics
        #expect(after.sleeps == before.sleeps, "the loop woke at the removed timer's old deadline")
        #expect(after.wakeUps(.timer) == before.wakeUps(.timer))
        #expect(background.loop.isWaiting)

        let invalidated = LoopTimer(after: .milliseconds(80)) { _ in }
        background.loop.add(invalidated, forMode: .default)
        usleep(10_000)
        let before2 = background.loop.statistics
        invalidated.invalidate()
        usleep(200_000)
        #expect(background.loop.statistics.sleeps == before2.sleeps)
    }

    @Test func aTimerInSeveralModesIsRescheduledInAll() {
        let result = onNewThread { () -> [String] in
            let loop = Loop.current
            let timer = LoopTimer(after: .seconds(100)) { _ in }
            loop.add(timer, forMode: .default)
            loop.add(timer, forMode: "b")
            let soon = Loop.Instant.now.advanced(by: .seconds(1))
            timer.nextFireDate = soon
            return [loop.nextTimerFireDate(forMode: .default) == soon ? "ok" : "bad",
                    loop.nextTimerFireDate(forMode: "b") == soon ? "ok" : "bad",
                    loop.nextTimerFireDate(forMode: "c") == nil ? "ok" : "bad"]
        }
        #expect(result == ["ok", "ok", "ok"])
    }

    @Test func aNestedRunDoesNotFireATimerThatIsInItsCallout() {
        let count = onNewThread { () -> Int in
            let loop = Loop.current
            let count = Shared(0)
            let timer = LoopTimer(after: .zero, interval: .milliseconds(1)) { timer in
                count.value += 1
                if count.value == 1 { loop.run(mode: .default, timeout: .milliseconds(20)) }
                timer.invalidate()
            }
            loop.add(timer, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(50))
            return count.value
        }
        #expect(count == 1)
    }

    @Test func delayedPerformsRunAndCanBeCancelled() {
        let trace = onNewThread { () -> String in
            let loop = Loop.current
            let log = TraceLog()
            loop.perform(after: .milliseconds(10)) { log.append("ran") }
            let cancelled = loop.perform(after: .milliseconds(5)) { log.append("cancelled") }
            cancelled.invalidate()
            loop.run(mode: .default, timeout: .milliseconds(100))
            return log.text
        }
        #expect(trace == "ran")
    }
}

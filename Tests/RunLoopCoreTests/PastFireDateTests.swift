@_spi(VirtualTime) import RunLoopCore
import Testing

/// Rule 22 as CFRunLoop reads it (issue 30 point 2): a timer given a fire date already past stores "now", when it
/// is created (CFRunLoopTimerCreate) or given the date (CFRunLoopTimerSetNextFireDate). Past timers then fire in
/// the order they were created, and a repeating timer's grid starts at that instant, not at the stale date.
@Suite struct PastFireDateTests {
    /// The first created has the later stale date; they are added in the other order. CF fires them in creation
    /// order (the second was created 1 ms later, so it stores a later "now").
    @Test func pastTimersFireInCreationOrder() {
        let (trace, dates) = onVirtualLoop { kernel, loop -> (String, [Loop.Instant]) in
            let log = TraceLog()
            let created = kernel.now
            let first = LoopTimer(fireAt: created.advanced(by: .milliseconds(-10))) { _ in log.append("first") }
            kernel.advanceTime(by: .milliseconds(1))
            let second = LoopTimer(fireAt: created.advanced(by: .milliseconds(-50))) { _ in log.append("second") }
            let dates = [first.nextFireDate, second.nextFireDate]
            loop.add(second, forMode: .default)
            loop.add(first, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, dates)
        }
        #expect(trace == "first second")
        #expect(dates == [Loop.Instant(nanoseconds: 1_000_000_000), Loop.Instant(nanoseconds: 1_001_000_000)])
    }

    /// A repeating 200 ms timer created 250 ms in the past: due at once, then on a grid from its creation
    /// (+200, +400 ms), not from the stale date (+150, +350). The same with a tolerance, which on its own moves
    /// no date here (the loop wakes at the earliest date a lone timer allows), and in a common mode.
    @Test(arguments: [(Duration.zero, Loop.Mode.default), (.milliseconds(50), .default), (.zero, "other"),
                      (.milliseconds(50), "other")])
    func aRepeatingTimersGridStartsAtItsCreation(_ tolerance: Duration, _ mode: Loop.Mode) {
        let fires = onVirtualLoop { kernel, loop -> [Duration] in
            let start = kernel.now
            let fires = Shared<[Duration]>([])
            loop.addCommonMode("other")
            let timer = LoopTimer(fireAt: start.advanced(by: .milliseconds(-250)), interval: .milliseconds(200),
                                  tolerance: tolerance) { timer in
                fires.mutate { $0.append(start.duration(to: kernel.now)) }
                if fires.value.count == 3 { timer.invalidate() }
            }
            loop.add(timer, forMode: .common)
            loop.run(mode: mode, timeout: .seconds(1))
            return fires.value
        }
        #expect(fires == [.zero, .milliseconds(200), .milliseconds(400)])
    }

    /// A one-shot timer with a past date, with and without a tolerance: due at once, and its date is the moment
    /// it was created.
    @Test(arguments: [Duration.zero, .milliseconds(30)])
    func aOneShotTimerWithAPastDateIsDueAtOnce(_ tolerance: Duration) {
        let (fired, stored, sleeps) = onVirtualLoop { kernel, loop -> (Duration?, Loop.Instant, Int) in
            kernel.advanceTime(by: .milliseconds(5))
            let start = kernel.now
            let fired = Shared<Duration?>(nil)
            let timer = LoopTimer(fireAt: Loop.Instant(nanoseconds: 1), tolerance: tolerance) { _ in
                fired.value = start.duration(to: kernel.now)
            }
            let stored = timer.nextFireDate
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return (fired.value, stored, kernel.sleeps.count)
        }
        #expect(fired == .zero)
        #expect(stored == Loop.Instant(nanoseconds: 1_005_000_000))
        #expect(sleeps == 1, "the wait that finds it due returns at once")
    }

    /// Timers created in a callout with past dates: not fired in that pass (rule 25), then in creation order on
    /// the next, at the callout's instant; the first created has the later stale date.
    @Test func pastTimersCreatedInACalloutFireInCreationOrderOnTheNextPass() {
        let trace = onVirtualLoop { kernel, loop -> String in
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            let start = kernel.now
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10))) { _ in
                log.append("T")
                let now = kernel.now
                let first = LoopTimer(fireAt: now.advanced(by: .milliseconds(-1))) { _ in log.append("first@\(milliseconds(start, kernel.now))") }
                kernel.advanceTime(by: .milliseconds(1))
                let second = LoopTimer(fireAt: now.advanced(by: .milliseconds(-100))) { _ in log.append("second@\(milliseconds(start, kernel.now))") }
                loop.add(second, forMode: .common)
                loop.add(first, forMode: .common)
            }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return log.text
        }
        #expect(trace == "Entry BT BS BW AW T BT BS BW AW first@11.0 second@11.0 Exit")
    }

    /// A past date given with `nextFireDate` is stored as now too (CFRunLoopTimerSetNextFireDate), bound or not:
    /// the timer given it first fires first.
    @Test func aPastNextFireDateIsStoredAsNow() {
        let (trace, dates) = onVirtualLoop { kernel, loop -> (String, [Loop.Instant]) in
            let log = TraceLog()
            let start = kernel.now
            let bound = LoopTimer(fireAt: start.advanced(by: .seconds(10))) { _ in log.append("bound") }
            let unbound = LoopTimer(fireAt: start.advanced(by: .seconds(10))) { _ in log.append("unbound") }
            loop.add(bound, forMode: .default)
            bound.nextFireDate = start.advanced(by: .milliseconds(-10))
            kernel.advanceTime(by: .milliseconds(1))
            unbound.nextFireDate = start.advanced(by: .milliseconds(-90))
            loop.add(unbound, forMode: .default)
            let dates = [bound.nextFireDate, unbound.nextFireDate]
            loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, dates)
        }
        #expect(trace == "bound unbound")
        #expect(dates == [Loop.Instant(nanoseconds: 1_000_000_000), Loop.Instant(nanoseconds: 1_001_000_000)])
    }

    /// A timer for a virtual loop created on a thread whose clock is the real one (no loop there): its date was
    /// checked against CLOCK_MONOTONIC, so the loop checks it again against its own clock when it is added. A
    /// future virtual date stays; a past one becomes the moment it was added.
    @Test func aDateCheckedOnAnotherClockIsCheckedAgainOnTheLoops() {
        let dates = onVirtualLoop { kernel, loop -> [Loop.Instant] in
            let start = kernel.now
            let (future, past) = onThread {
                (LoopTimer(fireAt: start.advanced(by: .milliseconds(20))) { _ in },
                 LoopTimer(fireAt: start.advanced(by: .milliseconds(-20))) { _ in })
            }
            kernel.advanceTime(by: .milliseconds(3))
            loop.add(future, forMode: .default)
            loop.add(past, forMode: .default)
            return [future.nextFireDate, past.nextFireDate]
        }
        #expect(dates == [Loop.Instant(nanoseconds: 1_020_000_000), Loop.Instant(nanoseconds: 1_003_000_000)])
    }
}

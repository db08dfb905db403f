import Synchronization

/// A timer: fires its handler on a loop's thread at its fire date, once or on a repeating grid.
///
/// - A fire date in the past means "due now", and the timer stores now, as CFRunLoop does: timers given past
///   dates fire in the order they were created (or given the date), and a repeating timer's grid starts there.
/// - A repeating timer stays on its original grid: after a callout the next fire date is the first
///   `previous scheduled date + k × interval` later than the moment the callout returned. Missed slots are
///   skipped, never replayed in a burst.
/// - `tolerance` lets the loop fire the timer anywhere in `[fireDate, fireDate + tolerance]` so that wake-ups of
///   several timers coalesce. Zero means "as soon as the clock allows".
/// - A timer belongs to one loop but may be in several of its modes; rescheduling moves it in all of them.
/// - A one-shot timer is invalidated after its callout, also when the callout moved its fire date or removed it
///   from its modes.
public final class LoopTimer: @unchecked Sendable {
    /// A process-unique id, as trace events report it.
    public let id: UInt64
    /// A name for traces and summaries ("which timer drifted").
    public let label: String?
    /// The repeat interval; nil for a one-shot timer.
    public let interval: Duration?
    /// Kept for CFRunLoop compatibility; like CF, timers fire in fire-date order whatever their order.
    public let order: Int

    let handler: @Sendable (LoopTimer) -> Void
    let binding = Binding()
    let intervalNanoseconds: UInt64
    private let valid = Atomic<Bool>(true)

    // Scheduling state: guarded by the owning loop's lock while bound, by `binding` while not.
    var fireDateNanoseconds: UInt64
    var toleranceNanoseconds: UInt64
    /// Tie-breaker for equal fire dates: first added, first fired.
    var sequence: UInt64 = 0
    var modes: Set<Loop.Mode> = []
    /// Grid slots skipped since the last firing, reported with the next one.
    var missedSlots: UInt64 = 0
    /// True while its callout runs (loop thread only): a nested run must not fire it again.
    var isFiring = false
    /// Set when the fire date is assigned during the callout, which then wins over the grid.
    var fireDateSetDuringCallout = false
    /// The date as given while unbound, and the clock it was checked against (past dates stored as now), until
    /// the timer first joins a loop: a loop on another clock checks it again against its own.
    var dateGivenUnbound: (date: UInt64, clock: ObjectIdentifier?)?

    /// Creates a timer that first fires `delay` from now.
    /// - Parameters:
    ///   - delay: time until the first firing; zero or less means due now.
    ///   - interval: the repeat interval, or nil (or zero) for a one-shot timer. Must not be negative.
    ///   - tolerance: how late the loop may fire it to coalesce wake-ups. Must not be negative.
    ///   - order: kept for CFRunLoop compatibility.
    ///   - label: a name shown in traces and summaries.
    ///   - handler: called on the loop's thread with the timer.
    public convenience init(after delay: Duration, interval: Duration? = nil, tolerance: Duration = .zero, order: Int = 0,
                            label: String? = nil, _ handler: @escaping @Sendable (LoopTimer) -> Void) {
        self.init(fireAt: Loop.Instant.now.advanced(by: max(delay, .zero)), interval: interval, tolerance: tolerance,
                  order: order, label: label, handler)
    }

    /// Creates a timer that first fires at an absolute date on the loop's clock.
    public init(fireAt date: Loop.Instant, interval: Duration? = nil, tolerance: Duration = .zero, order: Int = 0,
                label: String? = nil, _ handler: @escaping @Sendable (LoopTimer) -> Void) {
        if let interval {
            requireUsage(interval >= .zero, "LoopTimer: the interval must not be negative (got \(interval)); use nil for a one-shot timer")
        }
        requireUsage(tolerance >= .zero, "LoopTimer: the tolerance must not be negative (got \(tolerance))")
        let intervalNanoseconds = UInt64(interval.map { max($0.nanosecondsClamped, 0) } ?? 0)
        self.id = Sequence.next()
        self.label = label
        self.interval = intervalNanoseconds == 0 ? nil : interval
        self.intervalNanoseconds = intervalNanoseconds
        self.order = order
        self.handler = handler
        self.fireDateNanoseconds = 0
        self.toleranceNanoseconds = UInt64(tolerance.nanosecondsClamped)
        setDateUnbound(date.nanoseconds)
    }

    /// Stores a date given while the timer belongs to no loop (guarded as the scheduling state is): a past date
    /// on the calling thread's clock (its loop's, or CLOCK_MONOTONIC) is stored as now, as CF does at creation.
    private func setDateUnbound(_ date: UInt64) {
        let clock = currentThreadClock()
        fireDateNanoseconds = max(date, clock.now)
        dateGivenUnbound = (date, clock.identity)
    }

    /// When the timer joins its first loop (that loop's lock held): a date checked against another clock (a
    /// virtual loop's timer created on a thread with a real clock) is checked again against the loop's.
    func settleDateGivenUnbound(on loop: Loop) {
        guard let given = dateGivenUnbound else { return }
        dateGivenUnbound = nil
        if given.clock != loop.kernel.clockIdentity { fireDateNanoseconds = max(given.date, loop.now()) }
    }

    /// Whether the timer can still fire. Invalidation is permanent.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// The date the timer fires next. Setting it reschedules the timer in every mode it is in, from any thread;
    /// set inside the timer's own callout, it replaces the grid's next date. A date in the past is stored as now
    /// (on the loop's clock), as CFRunLoopTimerSetNextFireDate does.
    public var nextFireDate: Loop.Instant {
        get { binding.withStateLocked { _ in Loop.Instant(nanoseconds: fireDateNanoseconds) } }
        set {
            binding.withStateLocked { loop in
                if let loop {
                    loop.reschedule(self, to: max(newValue.nanoseconds, loop.now()))
                } else {
                    setDateUnbound(newValue.nanoseconds)
                }
            }
        }
    }

    /// How late the loop may fire the timer to coalesce wake-ups. Must not be negative.
    public var tolerance: Duration {
        get { binding.withStateLocked { _ in .nanoseconds(Int64(clamping: toleranceNanoseconds)) } }
        set {
            requireUsage(newValue >= .zero, "LoopTimer.tolerance must not be negative (got \(newValue))")
            binding.withStateLocked { loop in
                toleranceNanoseconds = UInt64(newValue.nanosecondsClamped)
                loop?.timersDidChange()
            }
        }
    }

    /// Stops the timer for good and removes it from every mode of its loop. Safe from any thread.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        binding.withStateLocked { loop in
            loop?.detach(self)
        }
    }

    func markInvalid() {
        valid.store(false, ordering: .releasing)
    }
}

// ===== grid and tolerance arithmetic =====

extension LoopTimer {
    /// The next date on this timer's grid after `now`, counting the slots skipped on the way.
    static func nextGridDate(after scheduled: UInt64, interval: UInt64, now: UInt64) -> (date: UInt64, skipped: UInt64) {
        precondition(interval > 0, "BUG IN RunLoopCore (please report): grid step of a one-shot timer")
        guard now >= scheduled else { return (scheduled &+ interval, 0) }
        let steps = (now - scheduled) / interval + 1
        let (offset, overflow) = steps.multipliedReportingOverflow(by: interval)
        let (date, overflow2) = scheduled.addingReportingOverflow(offset)
        if overflow || overflow2 { return (Loop.Instant.distantFuture.nanoseconds, steps - 1) }
        return (date, steps - 1)
    }
}

/// The moment to wake for a mode's timers, coalescing with tolerances.
///
/// `timers` is sorted by fire date. The hard deadline H is the earliest `fireDate + tolerance`; every timer with
/// `fireDate <= H` can fire together, and the earliest moment they are all due is the largest such fire date,
/// which is inside every member's window. Zero-tolerance timers therefore wake the loop exactly on time.
func coalescedWakeDate(_ timers: [LoopTimer]) -> UInt64? {
    var hardDeadline = UInt64.max
    var wake: UInt64?
    for timer in timers where !timer.isFiring {
        let fire = timer.fireDateNanoseconds
        if fire > hardDeadline { break }
        let (limit, overflow) = fire.addingReportingOverflow(timer.toleranceNanoseconds)
        hardDeadline = min(hardDeadline, overflow ? UInt64.max : limit)
        wake = fire
    }
    return wake
}

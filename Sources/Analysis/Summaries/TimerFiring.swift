import TraceModel

/// One firing of a timer as a trace tells it: the date it was due, the tolerance it allowed, and when its callout
/// began. The one definition of lateness, shared by the summaries and the exports, so a firing is equally late
/// in `summarize` and in the Chrome trace.
public struct TimerFiring: Sendable, Equatable {
    /// The fire date (`scheduled` of `timer_fire_begin`).
    public var scheduled: UInt64
    public var tolerance: UInt64
    /// The callout's start (the event's timestamp).
    public var firedAt: UInt64

    public init(scheduled: UInt64, tolerance: UInt64, firedAt: UInt64) {
        self.scheduled = scheduled
        self.tolerance = tolerance
        self.firedAt = firedAt
    }

    public init?(_ event: TraceEvent) {
        guard case .timerFireBegin(_, _, let scheduled, let tolerance, _, _) = event.payload else { return nil }
        self.init(scheduled: scheduled, tolerance: tolerance, firedAt: event.timestamp)
    }

    /// Callout start − fire date; a firing never counts as early (a loop fires timers only once they are due).
    public var lateness: UInt64 { firedAt >= scheduled ? firedAt - scheduled : 0 }

    /// Lateness past the tolerance window.
    public var beyondTolerance: UInt64 {
        let lateness = self.lateness
        return lateness > tolerance ? lateness - tolerance : 0
    }

    /// Within [fire date, fire date + tolerance] (a firing with no tolerance only when exactly on time).
    public var isWithinTolerance: Bool { lateness <= tolerance }

    /// Later than its tolerance by more than `threshold`: a late firing, whose cause summaries look up.
    public func isLate(threshold: UInt64) -> Bool { beyondTolerance > threshold }
}

/// How long a block or job waited in its loop's queue: its callout's start − its enqueue, never negative; nil
/// when the enqueue was not traced (0). The one definition for the summaries and the exports, like lateness.
func queueWait(enqueued: UInt64, ranAt start: UInt64) -> UInt64? {
    enqueued == 0 ? nil : (start >= enqueued ? start - enqueued : 0)
}

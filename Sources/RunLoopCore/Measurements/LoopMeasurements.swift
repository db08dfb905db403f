import Synchronization

/// What a loop measures of itself for a reader on another thread (RunLoopMetrics' updater): the time it slept in its
/// waits, the iterations busy past ``Loop/stallThreshold``, and each callout's wake-up delay (from due or signalled to
/// the callout). Given to a loop with ``Loop/measure(into:)``; a loop without one measures nothing and reads no clock
/// for it.
///
/// The loop measures in place, at the steps that already hold what a figure needs (the clock read of a timer's due
/// check, a signal's timestamp, step 10's deadline read), instead of through the event seam: a seam's sink is called
/// for every activity of every iteration, which is what tracing needs and metrics do not (the metrics benchmark:
/// Benchmarks/README.md). An adapted loop (RunLoopNIO's), whose events come only through the seam, is measured into
/// one of these by the sink that receives them, so every loop's figures are read the same way.
///
/// One writer (the loop's thread, or the adapter's sink on it) and one reader at a time (whoever holds the reader's
/// lock). The counters are atomics written with a load and a store; the delays wait in a ring allocated once.
package final class LoopMeasurements: @unchecked Sendable {
    /// Nanoseconds asleep in the loop's waits since measuring began, the sleep in progress left out.
    private let sleptTotal = Atomic<UInt64>(0)
    /// When the sleep in progress began (the loop's clock), 0 while the loop is awake: a reader counts a long sleep
    /// as idle while it lasts, not all at once when it ends.
    private let sleepingSince = Atomic<UInt64>(0)
    /// Iterations busy past the stall threshold since measuring began.
    private let stallTotal = Atomic<UInt64>(0)
    private let delays = DelayRing()
    /// Called on the loop's thread when half the delay ring waits: the reader should come now.
    private let halfFull: @Sendable () -> Void
    /// Called on the loop's thread with a delay the full ring cannot keep (the reader was asked at half and has not
    /// come): recorded there and then, so that none is lost.
    private let overflow: @Sendable (_ delay: UInt64, _ timer: Bool) -> Void

    package init(halfFull: @escaping @Sendable () -> Void,
                 overflow: @escaping @Sendable (_ delay: UInt64, _ timer: Bool) -> Void) {
        self.halfFull = halfFull
        self.overflow = overflow
    }

    /// Nanoseconds asleep in the loop's waits that have ended.
    package var slept: UInt64 { sleptTotal.load(ordering: .relaxed) }

    /// Nanoseconds asleep so far at `now` (the loop's clock): the waits that ended, and the one in progress up to
    /// `now`. Never less than an earlier answer for an earlier `now`.
    package func idle(at now: UInt64) -> UInt64 {
        while true {
            let since = sleepingSince.load(ordering: .acquiring)
            let ended = sleptTotal.load(ordering: .acquiring)
            // The loop clears `sleepingSince` before it adds the sleep: the same start read on both sides means the
            // sleep had not ended when `ended` was read.
            guard sleepingSince.load(ordering: .acquiring) == since else { continue }
            return ended &+ (since != 0 && now > since ? now - since : 0)
        }
    }

    /// Stalls so far.
    package var stalls: UInt64 { stallTotal.load(ordering: .relaxed) }

    // ===== the loop's thread =====

    /// A sleep begins at `start` (the loop's clock).
    @inline(__always)
    func beganSleep(at start: UInt64) {
        sleepingSince.store(max(start, 1), ordering: .releasing)
    }

    /// A wait ended after `nanoseconds` asleep (for an adapted loop, whose sleeps are reported once they ended).
    @inline(__always)
    package func addSleep(_ nanoseconds: UInt64) {
        sleepingSince.store(0, ordering: .releasing)
        sleptTotal.store(sleptTotal.load(ordering: .relaxed) &+ nanoseconds, ordering: .releasing)
    }

    /// An iteration was busy past the stall threshold.
    @inline(__always)
    package func countStall() {
        stallTotal.store(stallTotal.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    /// A callout began `delay` ns after what it serves was due (`timer`) or signalled.
    @inline(__always)
    package func wokeLate(_ delay: UInt64, timer: Bool) {
        let value = min(delay, DelayRing.timerFlag - 1) | (timer ? DelayRing.timerFlag : 0)
        switch delays.push(value) {
        case .stored: break
        case .storedHalfFull: halfFull()
        case .full: overflow(delay, timer)
        }
    }

    /// A callout that began at `now` served something due or signalled at `since` (0: nothing to measure from).
    @inline(__always)
    func calloutBegan(at now: UInt64, since: UInt64, timer: Bool) {
        guard since != 0 else { return }
        wokeLate(now > since ? now - since : 0, timer: timer)
    }

    // ===== the reader =====

    /// Every delay waiting, oldest first, with whether it was a timer's.
    package func drainDelays(_ body: (_ delay: UInt64, _ timer: Bool) -> Void) {
        delays.drain { value in body(value & (DelayRing.timerFlag - 1), value & DelayRing.timerFlag != 0) }
    }
}

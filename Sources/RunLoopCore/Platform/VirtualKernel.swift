import Glibc

// A fake kernel and clock for tests, in the spirit of SwiftNIO's EmbeddedEventLoop.advanceTime and tokio's
// time::pause: the clock moves only when a test advances it, or, with auto-advance, when the loop would
// otherwise sleep, so timer, tolerance, grid and timeout rules are checked to the nanosecond and at once.
//
// It mirrors the epoll backend's observable behaviour: the timer reports an expiry once per arming, many
// wake-ups collapse into one, and descriptor readiness is level-triggered.

/// A fake kernel and clock for one loop. Create a loop on it with ``Loop/makeCurrent(on:)``.
///
/// A wait that would block returns at once when the wake-up, the armed deadline or a watched descriptor is
/// ready. Otherwise, with `autoAdvance` (the default), the clock jumps to the armed deadline (the next timer's
/// coalesced wake date or the run's timeout) and the wait returns with it: a run on one thread completes
/// instantly and deterministically. Without `autoAdvance` the wait blocks (for real) until another thread
/// advances the clock past the deadline, wakes the loop or makes a descriptor ready.
///
/// - Note: `LoopTimer(after:)` and `Loop.Instant.now` read CLOCK_MONOTONIC, not this clock; on a virtual loop
///   date timers with `LoopTimer(fireAt: kernel.now.advanced(by: …))`. `Loop.perform(after:)` uses the loop's
///   clock and needs nothing special. A fire date in the past is stored as "now" on the clock of the thread that
///   gives it (rule 22); a timer created on a thread without a virtual loop is checked again against this clock
///   when it is first added to the loop.
@_spi(VirtualTime)
public final class VirtualKernel: @unchecked Sendable {
    /// One blocking wait of the loop: when it started and the virtual time it returned at.
    public struct Sleep: Sendable, Equatable, CustomStringConvertible {
        public let from: Loop.Instant
        public let until: Loop.Instant
        public var description: String { "\(from)→\(until)" }
    }

    private let lock = ConditionLock()
    private let autoAdvance: Bool
    // Guarded by lock.
    private var current: UInt64
    private var armedDeadline: UInt64 = 0
    private var wakeUpPending = false
    private var wakeUpWrites = 0
    private var readiness: [Int32: Readiness] = [:]
    private var waitSets: [Int32: [Int32: (interest: Readiness, token: UInt64)]] = [:]
    private var nextWaitSet: Int32 = 1
    private var log: [Sleep] = []
    private var hasLoop = false
    /// Weak: the loop holds the queue it serves; the queue holds this kernel.
    private weak var attachedMainQueue: VirtualMainQueue?

    /// - Parameters:
    ///   - start: the clock's first reading; away from zero, which the loop reads as "no deadline".
    ///   - autoAdvance: whether a wait with nothing ready moves the clock to the armed deadline.
    public init(start: Loop.Instant = Loop.Instant(nanoseconds: 1_000_000_000), autoAdvance: Bool = true) {
        requireUsage(start.nanoseconds > 0, "VirtualKernel: the clock must start after zero")
        current = start.nanoseconds
        self.autoAdvance = autoAdvance
    }

    /// How many wake-ups were written (the eventfd's writes on a real kernel): what a perform or a `wakeUp()`
    /// cost in system calls. Safe from any thread.
    public var wakeUpsWritten: Int {
        lock.withLock { wakeUpWrites }
    }

    /// The virtual time. Safe from any thread.
    public var now: Loop.Instant {
        lock.withLock { Loop.Instant(nanoseconds: current) }
    }

    /// Moves the clock forward by `duration` and wakes a loop blocked on a deadline that has passed.
    public func advanceTime(by duration: Duration) {
        requireUsage(duration >= .zero, "VirtualKernel.advanceTime(by:): time only moves forward (got \(duration))")
        lock.withLock { moveClock(to: Loop.Instant(nanoseconds: current).advanced(by: duration).nanoseconds) }
    }

    /// Moves the clock to `instant`; a date already past leaves the clock where it is.
    public func advanceTime(to instant: Loop.Instant) {
        lock.withLock { moveClock(to: instant.nanoseconds) }
    }

    /// Sets what a descriptor reports from now on (level-triggered, like epoll); `[]` makes it quiet again.
    public func setReadiness(_ events: DescriptorSource.Events, of fileDescriptor: Int32) {
        var bits: Readiness = []
        if events.contains(.readable) { bits.insert(.readable) }
        if events.contains(.writable) { bits.insert(.writable) }
        if events.contains(.hangUp) { bits.insert(.hangUp) }
        if events.contains(.error) { bits.insert(.error) }
        lock.withLock {
            readiness[fileDescriptor] = bits.isEmpty ? nil : bits
            lock.broadcast()
        }
    }

    /// Every blocking wait so far, oldest first (polls are not sleeps).
    public var sleeps: [Sleep] {
        lock.withLock { log }
    }

    /// The deadline the loop armed last; nil when disarmed.
    public var armedDate: Loop.Instant? {
        lock.withLock { armedDeadline == 0 ? nil : Loop.Instant(nanoseconds: armedDeadline) }
    }

    /// One loop per kernel: the wake-up and the timer are the loop's own.
    func attachLoop() {
        lock.withLock {
            requireUsage(!hasLoop, "VirtualKernel: this kernel already serves a loop; create one kernel per loop")
            hasLoop = true
        }
    }

    /// The fake main queue a loop on this kernel serves like the main loop serves the main dispatch queue
    /// (VirtualMainQueue.swift), if a test attached one before the loop was created.
    var mainQueue: VirtualMainQueue? {
        lock.withLock { attachedMainQueue }
    }

    func attachMainQueue(_ queue: VirtualMainQueue) {
        lock.withLock {
            requireUsage(!hasLoop && attachedMainQueue == nil,
                         "VirtualMainQueue: create it before the loop on this kernel, one per kernel")
            attachedMainQueue = queue
        }
    }

    /// Lock held.
    private func moveClock(to date: UInt64) {
        guard date > current else { return }
        current = date
        lock.broadcast()
    }

    /// Fills `set`'s buffer with what is ready now (lock held); returns how many.
    private func collectReady(_ set: WaitSet) -> Int {
        set.ready.count = 0
        if wakeUpPending { _ = set.ready.append(token: SelectorToken.wakeUp, readiness: .readable) }
        if timerExpired { _ = set.ready.append(token: SelectorToken.timer, readiness: .readable) }
        if !readiness.isEmpty, let watched = waitSets[set.handle] {
            for (fd, watch) in watched {
                guard let bits = readiness[fd] else { continue }
                // epoll reports errors and hang-ups whether asked for or not.
                let reported = bits.intersection(watch.interest.union([.error, .hangUp]))
                if !reported.isEmpty && !set.ready.append(token: watch.token, readiness: reported) { break }
            }
        }
        return set.ready.count
    }

    private var timerExpired: Bool {
        armedDeadline != 0 && armedDeadline <= current
    }
}

extension VirtualKernel: LoopKernel {
    func nowNanoseconds() -> UInt64 {
        lock.withLock { current }
    }

    func wakeUp() {
        lock.withLock {
            wakeUpPending = true
            wakeUpWrites += 1
            lock.broadcast()
        }
    }

    func consumeWakeUp() {
        lock.withLock { wakeUpPending = false }
    }

    func arm(deadline: UInt64) {
        lock.withLock {
            guard deadline != armedDeadline else { return }
            armedDeadline = deadline
            lock.broadcast()
        }
    }

    func consumeTimerExpiry() {
        lock.withLock {
            if timerExpired { armedDeadline = 0 }
        }
    }

    func makeWaitSet() -> WaitSet {
        lock.withLock {
            let handle = nextWaitSet
            nextWaitSet += 1
            waitSets[handle] = [:]
            return WaitSet(handle: handle)
        }
    }

    func watch(_ fd: Int32, for interest: Readiness, token: UInt64, in set: WaitSet) -> KernelError? {
        lock.withLock {
            guard waitSets[set.handle]?[fd] == nil else { return KernelError(call: "epoll_ctl(ADD)", errno: EEXIST) }
            waitSets[set.handle, default: [:]][fd] = (interest, token)
            return nil
        }
    }

    func unwatch(_ fd: Int32, in set: WaitSet) {
        lock.withLock { _ = waitSets[set.handle]?.removeValue(forKey: fd) }
    }

    func currentReadiness(of fd: Int32, for interest: Readiness) -> Readiness {
        lock.withLock { (readiness[fd] ?? []).intersection(interest.union([.error, .hangUp])) }
    }

    func wait(_ set: WaitSet, poll: Bool) -> ReadyEvents {
        lock.lock()
        defer { lock.unlock() }
        let from = current
        while collectReady(set) == 0 && !poll {
            if autoAdvance && armedDeadline > current {
                current = armedDeadline
            } else {
                _ = lock.wait(until: nil)
            }
        }
        if !poll { log.append(Sleep(from: Loop.Instant(nanoseconds: from), until: Loop.Instant(nanoseconds: current))) }
        return set.ready
    }

    func close(_ set: WaitSet) {
        lock.withLock { _ = waitSets.removeValue(forKey: set.handle) }
    }

    func close() {}
}

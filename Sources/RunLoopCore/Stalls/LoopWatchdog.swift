import Glibc
import CRunLoopLinux
import Synchronization

/// Reports a loop that has been busy past a threshold while it is still stuck: a hang that never ends is the worst
/// stall, and the loop's own `loop_stall` comes only when its iteration ends.
///
/// A thread of the watchdog's own looks at every watched loop every `checkInterval`. It reads what the loop
/// publishes anyway (whether it is running, whether it waits, its iteration and wait counters, all relaxed atomics
/// the loop writes with plain stores), so the loop's path does not change. A loop seen running in the same
/// iteration, with no wait in between, for `threshold` is reported once for that iteration: to the installed
/// tracer as `loop_hang`, and to `onHang`. The stretch is measured from the first look that saw it, so a hang is
/// reported between `threshold` and `threshold + checkInterval` after it began, with a busy time that is a lower
/// bound.
///
/// ```swift
/// let watchdog = LoopWatchdog(threshold: .milliseconds(500)) { hang in log(hang) }
/// watchdog.watch(Loop.main)
/// ```
/// `RLCTL_WATCHDOG=500ms` in the environment starts one over every loop of a program that calls
/// `LoopEventSink.installFromEnvironment()` (module Tracing).
public final class LoopWatchdog: @unchecked Sendable {
    public struct Hang: Sendable, Equatable {
        public var loopID: UInt64
        public var threadID: Int32
        /// The loop's iteration number, as its events and its `loop_stall` carry it.
        public var iteration: UInt64
        /// How long the loop had been busy at least, when reported.
        public var busyAtLeast: Duration
        public var threshold: Duration
    }

    public let threshold: Duration
    public let checkInterval: Duration
    private let onHang: (@Sendable (Hang) -> Void)?
    private let lock = ConditionLock()
    // Guarded by lock.
    private var watched: [Watched] = []
    private var watchesEveryLoop = false
    private var stopped = false
    private var thread: pthread_t?

    /// What the watchdog saw of one loop at its last look.
    private struct Watched {
        weak var loop: Loop?
        let loopID: UInt64
        let threadID: Int32
        var iteration: UInt64 = 0
        var waits: UInt64 = 0
        /// The loop's clock at the first look that saw this iteration running since its last wait; nil when not.
        var busySince: UInt64?
        var reportedIteration: UInt64?
    }

    /// - Parameters:
    ///   - threshold: how long a loop may stay busy in one iteration before it is reported.
    ///   - checkInterval: how often the watchdog looks; by default a quarter of the threshold (at least 1 ms).
    ///   - startsThread: false for tests that call ``check()`` themselves.
    ///   - onHang: called on the watchdog's thread for each report, after the tracer's event.
    /// - Precondition: a threshold and an interval longer than zero.
    public init(threshold: Duration, checkInterval: Duration? = nil, startsThread: Bool = true,
                onHang: (@Sendable (Hang) -> Void)? = nil) {
        requireUsage(threshold > .zero, "LoopWatchdog: the threshold must be longer than zero (got \(threshold))")
        let interval = checkInterval ?? max(threshold / 4, .milliseconds(1))
        requireUsage(interval > .zero, "LoopWatchdog: the check interval must be longer than zero (got \(interval))")
        self.threshold = threshold
        self.checkInterval = interval
        self.onHang = onHang
        if startsThread { startThread() }
    }

    deinit {
        stop()
    }

    /// Watches `loop` from now on (until it is freed or the watchdog stops).
    public func watch(_ loop: Loop) {
        lock.withLock {
            guard !watched.contains(where: { $0.loopID == loop.id }) else { return }
            watched.append(Watched(loop: loop, loopID: loop.id, threadID: loop.threadID))
        }
    }

    /// Watches every loop of the process: those that exist and those created later.
    public func watchEveryLoop() {
        lock.withLock { watchesEveryLoop = true }
        for loop in LoopRegistry.shared.loops() { watch(loop) }
    }

    /// Stops the watchdog's thread and waits for it; nothing is reported afterwards.
    public func stop() {
        let joining: pthread_t? = lock.withLock {
            stopped = true
            lock.broadcast()
            defer { thread = nil }
            return thread
        }
        if let joining, pthread_equal(joining, pthread_self()) == 0 { pthread_join(joining, nil) }
    }

    /// One look at every watched loop, as the watchdog's thread takes every ``checkInterval``: for tests that
    /// drive a virtual clock (each loop is judged on its own clock).
    public func check() {
        if lock.withLock({ watchesEveryLoop }) {
            for loop in LoopRegistry.shared.loops() { watch(loop) }
        }
        var hangs: [Hang] = []
        lock.withLock {
            watched.removeAll { $0.loop == nil }
            for index in watched.indices {
                guard let loop = watched[index].loop else { continue }
                if let hang = look(at: loop, &watched[index]) { hangs.append(hang) }
            }
        }
        for hang in hangs {
            LoopEventSink.current?.loopHang(loopID: hang.loopID, iteration: hang.iteration,
                                            busy: UInt64(hang.busyAtLeast.nanosecondsClamped),
                                            threshold: UInt64(hang.threshold.nanosecondsClamped))
            onHang?(hang)
        }
    }

    private func look(at loop: Loop, _ seen: inout Watched) -> Hang? {
        // The counters first: a loop that begins waiting after they were read looks running at most once more.
        let iteration = loop.iteration
        let waits = loop.waitCount
        let running = loop.activeRuns.load(ordering: .acquiring) > 0 && !loop.isWaiting
        let now = loop.now()
        guard running else {
            seen.busySince = nil
            return nil
        }
        guard let since = seen.busySince, seen.iteration == iteration, seen.waits == waits else {
            seen.iteration = iteration
            seen.waits = waits
            seen.busySince = now
            return nil
        }
        let busy = now > since ? now - since : 0
        guard busy >= UInt64(threshold.nanosecondsClamped), seen.reportedIteration != iteration else { return nil }
        seen.reportedIteration = iteration
        return Hang(loopID: seen.loopID, threadID: seen.threadID, iteration: iteration,
                    busyAtLeast: .nanoseconds(Int64(clamping: busy)), threshold: threshold)
    }

    private func startThread() {
        var handle = pthread_t()
        let context = Unmanaged.passRetained(WeakWatchdog(self)).toOpaque()
        let rc = pthread_create(&handle, nil, { argument in
            let box = Unmanaged<WeakWatchdog>.fromOpaque(argument!).takeRetainedValue()
            _ = crl_set_thread_name("rlctl-watchdog")
            while let watchdog = box.watchdog, watchdog.waitForNextLook() {
                watchdog.check()
            }
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<WeakWatchdog>.fromOpaque(context).release()
            usageFailure("LoopWatchdog: pthread_create failed (\(rc)); the process cannot start more threads")
        }
        lock.withLock { thread = handle }
    }

    /// Sleeps one interval; false once stopped.
    private func waitForNextLook() -> Bool {
        lock.withLock {
            let deadline = Loop.Instant.now.advanced(by: checkInterval).nanoseconds
            while !stopped {
                if !lock.wait(until: deadline) { break }
            }
            return !stopped
        }
    }
}

/// The watchdog's thread holds its watchdog weakly, so dropping the last reference stops it.
private final class WeakWatchdog: @unchecked Sendable {
    weak var watchdog: LoopWatchdog?
    init(_ watchdog: LoopWatchdog) { self.watchdog = watchdog }
}

/// Every live loop of the process, for ``LoopWatchdog/watchEveryLoop()``: loops register when created.
final class LoopRegistry: @unchecked Sendable {
    static let shared = LoopRegistry()
    private let lock = ConditionLock()
    private var entries: [WeakLoop] = []

    private struct WeakLoop {
        weak var loop: Loop?
    }

    func register(_ loop: Loop) {
        lock.withLock {
            entries.removeAll { $0.loop == nil }
            entries.append(WeakLoop(loop: loop))
        }
    }

    func loops() -> [Loop] {
        lock.withLock { entries.compactMap(\.loop) }
    }
}

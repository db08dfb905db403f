import Foundation
import Glibc
import TraceModel

/// Where `rlctl top` gets its rows: a relay daemon's live sessions (``LiveRelayView``), this machine's embedded
/// recordings being written (``LiveEmbeddedView``), or both (``LiveViews``).
public protocol LiveView: AnyObject, Sendable {
    /// Looks for new sources (sessions, recordings) when due, and starts following them.
    func refresh()
    /// The rows of the interval that ends now (since the last call).
    func takeInterval() -> LiveInterval
    /// Waits until every source found so far is followed, at most `timeout`.
    func waitUntilAttached(timeout: Duration)
    /// Stops following (reader threads end within a moment).
    func stop()
    /// The kernel recorder's events, complete up to `completeThrough` (``LiveLoopSource/consumeKernel(_:completeThrough:)``):
    /// for the late-time causes of the loops of this machine's processes.
    func consumeKernel(_ events: [TraceEvent], completeThrough: UInt64)
}

extension LiveView {
    /// A view of loops the kernel view cannot see (another host's) takes none.
    public func consumeKernel(_ events: [TraceEvent], completeThrough: UInt64) {}
}

/// What one interval showed.
public struct LiveInterval: Sendable {
    public var rows: [LiveLoopRow]
    /// Sources being followed (live sessions, recordings).
    public var sessions: Int
    /// Why a source cannot be read now, nil when all answer.
    public var problem: String?
    /// What the view would show and has none of, for an empty table ("no live session on the relay daemon").
    public var nothingToWatch: String
    /// Sources seen and not followed, each with why (a session another viewer follows).
    public var notShown: [String]
    /// Whether the rows have the kernel view's columns (``LiveKernelColumn``), and why not.
    public var kernel: LiveKernelStatus = .notAvailable("no kernel view was asked for")
    /// Records the kernel recorder lost in the interval (its losses are not per thread: every row shares them).
    public var kernelLostRecords: UInt64 = 0

    public init(rows: [LiveLoopRow], sessions: Int, problem: String?, nothingToWatch: String, notShown: [String] = []) {
        self.rows = rows
        self.sessions = sessions
        self.problem = problem
        self.nothingToWatch = nothingToWatch
        self.notShown = notShown
    }
}

/// Several views as one: their rows side by side.
public final class LiveViews: LiveView, @unchecked Sendable {
    private let views: [any LiveView]

    public init(_ views: [any LiveView]) { self.views = views }

    public func refresh() { views.forEach { $0.refresh() } }

    public func takeInterval() -> LiveInterval {
        let intervals = views.map { $0.takeInterval() }
        let problems = intervals.compactMap(\.problem)
        return LiveInterval(rows: intervals.flatMap(\.rows), sessions: intervals.reduce(0) { $0 + $1.sessions },
                            problem: problems.isEmpty ? nil : problems.joined(separator: "; "),
                            nothingToWatch: intervals.map(\.nothingToWatch).joined(separator: ", "),
                            notShown: intervals.flatMap(\.notShown))
    }

    public func waitUntilAttached(timeout: Duration) { views.forEach { $0.waitUntilAttached(timeout: timeout) } }

    public func stop() { views.forEach { $0.stop() } }

    public func consumeKernel(_ events: [TraceEvent], completeThrough: UInt64) {
        views.forEach { $0.consumeKernel(events, completeThrough: completeThrough) }
    }
}

/// What a view follows: one ``LiveLoopSource`` per thing (a live session's URL, a recording's registration), each
/// read by a thread of its own, and the things whose reading ended, so that they are not followed again. The
/// views say what to list and how to read; this keeps the rest.
final class LiveFollowers: @unchecked Sendable {
    private let relistEvery: Duration
    private let lock = NSLock()
    private var sources: [String: LiveLoopSource] = [:]
    /// Sources whose reading ended since the last interval: their last events are that interval's.
    private var endedSinceInterval: [LiveLoopSource] = []
    private var finished: Set<String> = []
    private var lastListing = ContinuousClock.now - .seconds(3600)
    private var stopped = false

    init(relistEvery: Duration) { self.relistEvery = relistEvery }

    /// Whether it is time to list again (and the view was not stopped); counts this as the listing. `now` lists
    /// again at once.
    func listingDue(now: Bool = false) -> Bool {
        lock.withLock {
            guard !stopped, now || ContinuousClock.now - lastListing >= relistEvery else { return false }
            lastListing = ContinuousClock.now
            return true
        }
    }

    /// Starts following each listed thing not followed yet and not ended: `read` runs on a new thread, feeds the
    /// source, and returns why it stopped; a thing whose reading `endsForGood` is not followed again.
    func follow<Thing: Sendable>(_ listed: [Thing], key: (Thing) -> String, source: (Thing) -> LiveLoopSource,
                                 endsForGood: @escaping @Sendable (String) -> Bool,
                                 read: @escaping @Sendable (Thing, LiveLoopSource) -> String) {
        lock.withLock {
            for thing in listed {
                let name = key(thing)
                guard sources[name] == nil && !finished.contains(name) else { continue }
                let follower = source(thing)
                sources[name] = follower
                Thread.detachNewThread { [self] in
                    let why = read(thing, follower)
                    follower.end(why)
                    lock.withLock {
                        sources[name] = nil
                        endedSinceInterval.append(follower)
                        if endsForGood(why) { finished.insert(name) }
                    }
                }
            }
        }
    }

    /// Lets every thing whose reading ended be followed again when listed (a relay daemon that came back).
    func forgetEnded() {
        lock.withLock { finished.removeAll() }
    }

    var isStopped: Bool { lock.withLock { stopped } }

    /// Whether `name` is followed now, or was read to its end.
    func isFollowedOrDone(_ name: String) -> Bool { lock.withLock { sources[name] != nil || finished.contains(name) } }

    /// The rows of the interval that ends now, every source's (those that ended since the last one included, for
    /// the events of their last read), and how many sources there are.
    func takeInterval() -> (rows: [LiveLoopRow], sources: Int) {
        let (current, ended) = lock.withLock {
            defer { endedSinceInterval.removeAll() }
            return (Array(sources.values), endedSinceInterval)
        }
        return ((current + ended).flatMap { $0.takeInterval() }, current.count)
    }

    func consumeKernel(_ events: [TraceEvent], completeThrough: UInt64) {
        for source in lock.withLock({ Array(sources.values) }) { source.consumeKernel(events, completeThrough: completeThrough) }
    }

    func waitUntilAttached(timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if lock.withLock({ Array(sources.values) }).allSatisfy(\.isSettled) { return }
            usleep(20_000)
        }
    }

    func stop() {
        lock.withLock { stopped = true }
    }
}

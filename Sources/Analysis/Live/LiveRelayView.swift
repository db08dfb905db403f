import Foundation
import TraceModel
import TraceReading

/// Every loop a relay daemon's live sessions show, interval by interval (`rlctl top --relayd`). A thread per
/// session follows it (``CTFTraceReader/init(liveSession:stallTimeout:)``); the sessions are listed again every
/// `relistEvery`, so a program that starts later is picked up and one that ends drops out. A relay that stops
/// answering is said in ``Interval/problem``, and its sessions are followed again once it answers (a session read
/// to its end is not read again).
public final class LiveRelayView: @unchecked Sendable {
    public let relay: String
    private let stallThreshold: UInt64
    private let relistEvery: Duration
    private let lock = NSLock()
    private var sources: [String: LiveLoopSource] = [:]
    private var finished: Set<String> = []
    private var problem: String?
    private var lastListing = ContinuousClock.now - .seconds(3600)
    private var stopped = false

    /// What one interval showed.
    public struct Interval: Sendable {
        public var rows: [LiveLoopRow]
        /// Sessions being followed.
        public var sessions: Int
        /// Why the relay cannot be read now, nil when it answers.
        public var problem: String?

        public init(rows: [LiveLoopRow], sessions: Int, problem: String?) {
            self.rows = rows
            self.sessions = sessions
            self.problem = problem
        }
    }

    public init(relay: String, stallThresholdNanoseconds: UInt64, relistEvery: Duration = .seconds(2)) {
        self.relay = relay
        self.stallThreshold = stallThresholdNanoseconds
        self.relistEvery = relistEvery
    }

    /// Lists the relay's sessions (when due) and starts following the new ones.
    public func refreshSessions() {
        lock.lock()
        guard !stopped, ContinuousClock.now - lastListing >= relistEvery else { lock.unlock(); return }
        lastListing = ContinuousClock.now
        lock.unlock()
        let listed: [LiveSession]
        do {
            listed = try LiveSessions.list(relay: relay)
        } catch {
            lock.lock()
            problem = "\(error.reason)"
            // The relay may come back with the same sessions, whose readers failed: read them again then.
            finished.removeAll()
            lock.unlock()
            return
        }
        lock.lock()
        problem = nil
        let fresh = listed.filter { sources[$0.url] == nil && !finished.contains($0.url) }
        for session in fresh {
            let source = LiveLoopSource(host: session.host, session: session.name, stallThresholdNanoseconds: stallThreshold)
            sources[session.url] = source
            Thread.detachNewThread { [weak self] in self?.follow(session.url, into: source) }
        }
        lock.unlock()
    }

    private func follow(_ url: String, into source: LiveLoopSource) {
        let why: String
        do {
            let reader = try CTFTraceReader(liveSession: url)
            var lost: UInt64 = 0
            // A live reader starts where the session is when it attaches (the relay sends no past): from here
            // every event belongs to the view.
            source.markAttached()
            reading: while true {
                if isStopped { why = "stopped"; break }
                let next = try reader.nextAvailable()
                let nowLost = reader.health.eventsLost
                if nowLost > lost {
                    source.noteLoss(events: nowLost - lost)
                    lost = nowLost
                }
                switch next {
                case .event(let event): source.consume(event)
                case .nothingYet: continue
                case .end: why = "ended"; break reading
                }
            }
        } catch {
            why = error.reason
        }
        source.end(why)
        lock.lock()
        sources[url] = nil
        if why == "ended" { finished.insert(url) }
        lock.unlock()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    /// The rows of the interval that ends now (since the last call), every source's.
    public func takeInterval() -> Interval {
        refreshSessions()
        lock.lock()
        let current = Array(sources.values)
        let problem = self.problem
        lock.unlock()
        return Interval(rows: current.flatMap { $0.takeInterval() }, sessions: current.count, problem: problem)
    }

    /// Waits until every session listed so far has its reader attached (or ended), at most `timeout`: a view
    /// that shows one interval (`--once`) must not spend it starting readers.
    public func waitUntilAttached(timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            lock.lock()
            let current = Array(sources.values)
            lock.unlock()
            if current.allSatisfy(\.isSettled) { return }
            usleep(20_000)
        }
    }

    /// Stops following (the reader threads end within a moment).
    public func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }
}

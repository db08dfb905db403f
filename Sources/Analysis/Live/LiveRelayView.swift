import Foundation
import TraceModel
import TraceReading

/// Every loop a relay daemon's live sessions show, interval by interval (`rlctl top --relayd`). A thread per
/// session follows it (``LTTngLiveReader``); the sessions are listed again every
/// `relistEvery`, so a program that starts later is picked up and one that ends drops out. A relay that stops
/// answering is said in ``problem`` and each ``LiveInterval/problem``, and its sessions are followed again once it
/// answers (a session read to its end is not read again).
public final class LiveRelayView: LiveView, @unchecked Sendable {
    public let relay: String
    private let stallThreshold: UInt64
    private let followers: LiveFollowers
    private let lock = NSLock()
    private var listingProblem: String?
    /// What to say of the sessions another viewer follows.
    private var followedElsewhere: [String] = []

    public init(relay: String, stallThresholdNanoseconds: UInt64, relistEvery: Duration = .seconds(2)) {
        self.relay = relay
        self.stallThreshold = stallThresholdNanoseconds
        followers = LiveFollowers(relistEvery: relistEvery)
    }

    /// Lists the relay's sessions (when due, or `now`) and starts following the new ones.
    public func refresh() { refresh(now: false) }

    private func refresh(now: Bool) {
        guard followers.listingDue(now: now) else { return }
        let listed: [LiveSession]
        do {
            listed = try LiveSessions.list(relay: relay)
        } catch {
            lock.withLock { listingProblem = "\(error.reason)" }
            // The relay may come back with the same sessions, whose readers failed: read them again then.
            followers.forgetEnded()
            return
        }
        // A relay daemon lets one viewer follow a session: one that another viewer follows (another rlctl top, or
        // one that just quit and is not detached yet) is said, and tried again at the next listing.
        let elsewhere = listed.filter { $0.clients > 0 && !followers.isFollowedOrDone($0.url) }
        lock.withLock {
            listingProblem = nil
            followedElsewhere = elsewhere.map { "\($0.name) on \($0.host): \(LiveSession.followedElsewhere)" }.sorted()
        }
        let threshold = stallThreshold
        followers.follow(listed.filter { $0.clients == 0 }, key: \.url,
                         source: { LiveLoopSource(host: $0.host, session: $0.name, stallThresholdNanoseconds: threshold) },
                         endsForGood: { $0 == "ended" },
                         read: { [weak self] session, source in self?.read(session.url, into: source) ?? "stopped" })
    }

    private func read(_ url: String, into source: LiveLoopSource) -> String {
        do {
            let reader = try LTTngLiveReader(liveSession: url)
            defer { reader.close() }
            var lost: UInt64 = 0
            // A live reader starts where the session is when it attaches (the relay sends no past): from here
            // every event belongs to the view.
            source.markAttached()
            while true {
                if followers.isStopped { return "stopped" }
                let next = try reader.nextBatch()
                let nowLost = reader.health.eventsLost
                if nowLost > lost {
                    source.noteLoss(events: nowLost - lost)
                    lost = nowLost
                }
                switch next {
                case .events(let events): source.consume(events)
                case .nothingYet: continue
                case .end: return "ended"
                }
            }
        } catch {
            return error.reason
        }
    }

    /// The rows of the interval that ends now (since the last call), every source's.
    public func takeInterval() -> LiveInterval {
        refresh()
        let (rows, sessions) = followers.takeInterval()
        return LiveInterval(rows: rows, sessions: sessions, problem: problem.map { "RELAY NOT ANSWERING: \($0)" },
                            nothingToWatch: "no live session on the relay daemon",
                            notShown: lock.withLock { followedElsewhere })
    }

    /// Why the relay daemon could not be listed at the last try, nil when it answered.
    public var problem: String? { lock.withLock { listingProblem } }

    /// Waits until every session listed so far has its reader attached (or ended), at most `timeout`: a view
    /// that shows one interval (`--once`) must not spend it starting readers.
    /// A session another viewer follows is listed again meanwhile, for at most 3 s: a viewer that just quit (an
    /// earlier `rlctl top --once`) is detached by the relay a moment later.
    public func waitUntilAttached(timeout: Duration) {
        let start = ContinuousClock.now
        while lock.withLock({ !followedElsewhere.isEmpty }) && ContinuousClock.now - start < min(timeout, .seconds(3)) {
            usleep(100_000)
            refresh(now: true)
        }
        followers.waitUntilAttached(timeout: timeout - (ContinuousClock.now - start))
    }

    /// Stops following (the reader threads end within a moment).
    public func stop() { followers.stop() }

    /// (Given only when its sessions are this machine's: `rlctl top` takes no kernel view with `--relayd`.)
    public func consumeKernel(_ events: [TraceEvent], completeThrough: UInt64) {
        followers.consumeKernel(events, completeThrough: completeThrough)
    }
}

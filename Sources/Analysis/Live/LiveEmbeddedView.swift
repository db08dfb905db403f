import Foundation
import Glibc
import TraceModel
import TraceReading

/// Every loop of this machine's embedded recordings being written (``LiveRecordings``), interval by interval
/// (`rlctl top`). The registry is read again every `relistEvery`; a thread per recording polls its trace folder
/// every `pollEvery` (``LiveEmbeddedTraceReader``): a recording already there when the view started from where it
/// was then, one that began since from its start (so that `top --serve`'s counters hold all of it). A recording
/// that stops (its end file) or whose process is gone drops out.
public final class LiveEmbeddedView: LiveView, @unchecked Sendable {
    private let stallThreshold: UInt64
    private let pollEvery: Duration
    private let host = HostName.local
    private let followers: LiveFollowers
    private let lock = NSLock()
    private var problems: [String] = []
    /// Whether the registry was listed once: recordings found after that began while the view ran.
    private var listedOnce = false

    public init(stallThresholdNanoseconds: UInt64, relistEvery: Duration = .seconds(2), pollEvery: Duration = .milliseconds(200)) {
        stallThreshold = stallThresholdNanoseconds
        self.pollEvery = pollEvery
        followers = LiveFollowers(relistEvery: relistEvery)
    }

    public func refresh() {
        guard followers.listingDue() else { return }
        let (threshold, host) = (stallThreshold, host)
        let fromStart = lock.withLock { () -> Bool in
            defer { listedOnce = true }
            return listedOnce
        }
        followers.follow(LiveRecordings.list(), key: \.file,
                         source: { LiveLoopSource(host: host, session: "embedded \($0.path)", stallThresholdNanoseconds: threshold) },
                         endsForGood: { _ in true },
                         read: { [weak self] entry, source in self?.read(entry, into: source, fromStart: fromStart) ?? "stopped" })
    }

    private func read(_ entry: LiveRecordings.Entry, into source: LiveLoopSource, fromStart: Bool) -> String {
        do {
            let reader = try LiveEmbeddedTraceReader(path: entry.path, processID: entry.processID)
            if !fromStart {
                for event in try reader.names() { source.learnName(event) }
                try reader.skipPast()
            }
            source.markAttached()
            var lost: UInt64 = 0
            while !followers.isStopped {
                let ended = reader.ended
                source.consume(try reader.poll())
                let nowLost = reader.health.eventsLost
                if nowLost > lost {
                    source.noteLoss(events: nowLost - lost)
                    lost = nowLost
                }
                // The end file is written after the last packet: read once more after seeing it, then stop.
                if ended || kill(entry.processID, 0) != 0 && errno == ESRCH { return "ended" }
                usleep(UInt32(pollEvery.components.seconds * 1_000_000 + pollEvery.components.attoseconds / 1_000_000_000_000))
            }
            return "stopped"
        } catch {
            lock.withLock { problems.append("\(entry.path): \(error.reason)") }
            return error.reason
        }
    }

    public func takeInterval() -> LiveInterval {
        refresh()
        let (rows, recordings) = followers.takeInterval()
        let problem = lock.withLock { () -> String? in
            defer { problems.removeAll() }
            return problems.isEmpty ? nil : "cannot read " + problems.sorted().joined(separator: "; ")
        }
        return LiveInterval(rows: rows, sessions: recordings, problem: problem, nothingToWatch: "no embedded recording being written")
    }

    public func waitUntilAttached(timeout: Duration) { followers.waitUntilAttached(timeout: timeout) }

    public func stop() { followers.stop() }

    public func consumeKernel(_ events: [TraceEvent], completeThrough: UInt64) {
        followers.consumeKernel(events, completeThrough: completeThrough)
    }
}

import Foundation
import Glibc
import Testing
import TestSupport
import TraceModel
import TraceReading
@testable import Tracing

/// Reading an LTTng live session while it records with rlctl's own viewer-protocol client and packet decoder
/// (``LTTngLiveReader``, what `rlctl top` is built on): a relay daemon of the test's own on loopback ports, a live
/// session of this process streaming to it, events read as they arrive, in timestamp order across the per-CPU
/// streams, and the end of the reading when the session is destroyed.
@Suite(.serialized, .enabled(if: LTTngTestEnvironment.shouldRun, LTTngTestEnvironment.skipComment))
struct LTTngLiveReadingTests {
    /// The signals of `range` read from `reader` within `limit`, in order; stops early once all came.
    static func readSignals(_ reader: LTTngLiveReader, _ range: Range<UInt64>, within limit: Duration) throws -> [UInt64] {
        var seen: [UInt64] = []
        let deadline = ContinuousClock.now + limit
        while seen.count < range.count && ContinuousClock.now < deadline {
            switch try reader.nextBatch() {
            case .events(let events):
                for event in events {
                    if case .sourceSignal(let id) = event.payload, range.contains(id) {
                        seen.append(id)
                        #expect(event.processID == getpid(), "the vpid context names this process")
                    }
                }
            case .nothingYet: continue
            case .end: return seen
            }
        }
        return seen
    }

    @Test func eventsArriveWhileTheSessionRecordsAndTheReadingEndsWithIt() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        let relay = try LocalRelayDaemon()
        defer { relay.stop(); relay.removeOutput() }
        let name = LTTngSession.uniqueName("live-test")
        let session = try LTTngSession.create(name: name, relay: relay.recordURL, trackedProcess: getpid(), liveTimer: .milliseconds(100),
                                              contexts: ["vtid", "vpid"])
        defer { session.destroy() }
        try session.startForThisProcess()
        let sink = LTTngSink()
        // A live reader starts where the session is when it attaches (earlier events are not sent): attach first.
        sink.sourceSignaled(sourceID: 9_000_000, at: 0)
        let sessions = try LiveSessions.list(relay: relay.liveURL)
        let listed = try #require(sessions.first { $0.name == name }, "\(sessions)")
        #expect(listed.host == HostName.local)
        #expect(listed.url == "\(relay.liveURL)/host/\(listed.host)/\(name)")
        let reader = try LTTngLiveReader(liveSession: listed.url)
        while case .events = try reader.nextBatch() {}

        let first: Range<UInt64> = 9_100_000..<9_101_000
        for id in first { sink.sourceSignaled(sourceID: id, at: 0) }
        #expect(try Self.readSignals(reader, first, within: .seconds(15)) == Array(first))
        // More events while the reader follows: they come too, in order, while the session still records.
        let second: Range<UInt64> = 9_200_000..<9_200_500
        for id in second { sink.sourceSignaled(sourceID: id, at: 0) }
        #expect(try Self.readSignals(reader, second, within: .seconds(15)) == Array(second))

        _ = try session.stopStreaming()
        let deadline = ContinuousClock.now + .seconds(20)
        var ended = false
        while !ended && ContinuousClock.now < deadline {
            if case .end = try reader.nextBatch() { ended = true }
        }
        #expect(ended, "a destroyed session ends the live reading")
        #expect(reader.health.eventsLost == 0 && reader.health.packetsLost == 0, "\(reader.health)")
    }

    /// A live session of this process, on a relay daemon of the test's own, and its URL.
    static func liveSession(_ relay: LocalRelayDaemon, _ prefix: String) throws -> (LTTngSession, url: String) {
        let name = LTTngSession.uniqueName(prefix)
        let session = try LTTngSession.create(name: name, relay: relay.recordURL, trackedProcess: getpid(), liveTimer: .milliseconds(100),
                                              contexts: ["vtid", "vpid"])
        try session.startForThisProcess()
        return (session, "\(relay.liveURL)/host/\(HostName.local)/\(name)")
    }

    /// Four threads signalling at once, on both CPUs' streams: every event comes, each thread's in its order, all
    /// in timestamp order (the merge waits for every stream to show it has nothing earlier).
    @Test func eventsOfManyThreadsComeInTimestampOrder() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        let relay = try LocalRelayDaemon()
        defer { relay.stop(); relay.removeOutput() }
        let (session, url) = try Self.liveSession(relay, "live-order")
        defer { session.destroy() }
        let sink = LTTngSink()
        sink.sourceSignaled(sourceID: 1, at: 0)
        let reader = try LTTngLiveReader(liveSession: url)
        let perThread: UInt64 = 3_000
        let threads = (0..<4).map { (thread: UInt64) in
            Thread {
                for index in 0..<perThread {
                    sink.sourceSignaled(sourceID: (thread + 1) * 10_000_000 + index, at: 0)
                    if index % 100 == 0 { usleep(200) }   // let the scheduler move threads between CPUs
                }
            }
        }
        threads.forEach { $0.start() }
        var next: [UInt64: UInt64] = [:]
        var tids: [UInt64: Int32] = [:]
        var last: UInt64 = 0
        var count: UInt64 = 0
        var outOfOrder = 0
        let deadline = ContinuousClock.now + .seconds(30)
        while count < 4 * perThread && ContinuousClock.now < deadline {
            guard case .events(let events) = try reader.nextBatch() else { continue }
            for event in events {
                guard case .sourceSignal(let id) = event.payload, id >= 10_000_000 else { continue }
                let thread = id / 10_000_000
                #expect(id % 10_000_000 == next[thread, default: 0], "thread \(thread)'s events in order")
                next[thread] = id % 10_000_000 + 1
                #expect(tids[thread].map { $0 == event.threadID } ?? true, "one thread id per thread")
                tids[thread] = event.threadID
                if event.timestamp < last { outOfOrder += 1 }
                last = event.timestamp
                count += 1
            }
        }
        #expect(count == 4 * perThread)
        #expect(outOfOrder == 0)
        #expect(Set(tids.values).count == 4)
        #expect(reader.health.eventsLost == 0 && reader.health.packetsLost == 0, "\(reader.health)")
    }

    /// A relay daemon lets one viewer follow a session: a second reader is refused, saying so; once the first
    /// closes (it detaches at once), a new one attaches.
    @Test func aSessionFollowedByAnotherViewerIsRefusedUntilItLets() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        let relay = try LocalRelayDaemon()
        defer { relay.stop(); relay.removeOutput() }
        let (session, url) = try Self.liveSession(relay, "live-viewers")
        defer { session.destroy() }
        LTTngSink().sourceSignaled(sourceID: 1, at: 0)
        let first = try LTTngLiveReader(liveSession: url)
        let refused = try #require(throws: TraceReadError.self) { try LTTngLiveReader(liveSession: url) }
        #expect(refused.reason == "another viewer follows it (a relay daemon lets one viewer follow a session at a time)", "\(refused)")
        #expect(try LiveSessions.list(relay: relay.liveURL).first { url.hasSuffix("/\($0.name)") }?.clients == 1)
        first.close()
        _ = try LTTngLiveReader(liveSession: url)
        let missing = try #require(throws: TraceReadError.self) { try LTTngLiveReader(liveSession: "\(relay.liveURL)/host/\(HostName.local)/no-such-session") }
        #expect(missing.reason == "no such live session on the relay daemon")
    }

    @Test func aRelayThatIsNotThereIsAnError() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        #expect(throws: TraceReadError.self) { try LiveSessions.list(relay: "net://127.0.0.1:1") }
        let error = try #require(throws: TraceReadError.self) { try LiveSessions.list(relay: "net://127.0.0.1:1") }
        #expect(error.reason.hasPrefix("cannot connect to the relay daemon's live port (127.0.0.1 port 1: Connection refused)"), "\(error)")
    }
}

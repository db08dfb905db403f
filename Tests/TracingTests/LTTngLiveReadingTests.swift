import Foundation
import Glibc
import Testing
import TestSupport
import TraceModel
import TraceReading
@testable import Tracing

/// Reading an LTTng live session while it records (what `rlctl top` is built on): a relay daemon of the test's
/// own on loopback ports, a live session of this process streaming to it, events read as they arrive, and the
/// end of the reading when the session is destroyed.
@Suite(.serialized, .enabled(if: LTTngTestEnvironment.shouldRun, LTTngTestEnvironment.skipComment))
struct LTTngLiveReadingTests {
    /// The signals of `range` read from `reader` within `limit`, in order; stops early once all came.
    static func readSignals(_ reader: CTFTraceReader, _ range: Range<UInt64>, within limit: Duration) throws -> [UInt64] {
        var seen: [UInt64] = []
        let deadline = ContinuousClock.now + limit
        while seen.count < range.count && ContinuousClock.now < deadline {
            switch try reader.nextAvailable() {
            case .event(let event):
                if case .sourceSignal(let id) = event.payload, range.contains(id) {
                    seen.append(id)
                    #expect(event.processID == getpid(), "the vpid context names this process")
                }
            case .nothingYet: continue
            case .end: return seen
            }
        }
        return seen
    }

    @Test func eventsArriveWhileTheSessionRecordsAndTheReadingEndsWithIt() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
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
        let reader = try CTFTraceReader(liveSession: listed.url)
        while case .event = try reader.nextAvailable() {}

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
            if case .end = try reader.nextAvailable() { ended = true }
        }
        #expect(ended, "a destroyed session ends the live reading")
        #expect(reader.health.eventsLost == 0 && reader.health.packetsLost == 0, "\(reader.health)")
    }

    @Test func aRelayThatIsNotThereIsAnError() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        #expect(throws: TraceReadError.self) { try LiveSessions.list(relay: "net://127.0.0.1:1") }
        let error = try #require(throws: TraceReadError.self) { try LiveSessions.list(relay: "net://127.0.0.1:1") }
        #expect(error.reason.hasPrefix("cannot connect to the relay daemon's live port (127.0.0.1 port 1: Connection refused)"), "\(error)")
    }
}

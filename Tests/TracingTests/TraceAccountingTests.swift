import Foundation
import Glibc
import Testing
import TraceModel
@testable import TraceReading

/// A trace's own accounting decides whether it is complete: the embedded recorder's end file lists what each
/// stream holds, LTTng's packet index lists each stream's packets, and what the reader does not find is a loss,
/// named in the health, never a complete trace with fewer events.
@Suite(.serialized) struct TraceAccountingTests {
    static let sample = EmbeddedReaderCorruptionTests.sample

    private func copy(_ name: String) -> String {
        let target = temporaryPath(name)
        try! FileManager.default.copyItem(atPath: Self.sample.folder, toPath: target)
        return target
    }

    private func streams(of folder: String) -> [String] {
        try! FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("stream-") }.sorted {
            size(folder + "/" + $0) > size(folder + "/" + $1)
        }
    }

    private func size(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    private func accounting(_ folder: String) throws -> TraceAccounting {
        try TraceAccounting(parsing: String(contentsOfFile: folder + "/.end", encoding: .utf8))
    }

    @Test func theEndFileListsEveryStreamWithItsEventsAndBytes() throws {
        let written = try accounting(Self.sample.folder)
        #expect(written.eventsRecorded == UInt64(Self.sample.events))
        #expect(written.streams.keys.sorted() == streams(of: Self.sample.folder).sorted())
        for (name, stream) in written.streams {
            #expect(stream.bytes == UInt64(size(Self.sample.folder + "/" + name)), "\(name)")
        }
        #expect(written.streams.values.reduce(0) { $0 + ($1.events ?? 0) } == UInt64(Self.sample.events))
    }

    @Test func aDeletedStreamIsALossOfEveryEventItHeld() throws {
        let folder = copy("accounting-deleted")
        let name = streams(of: folder)[0]
        let held = try #require(try accounting(folder).streams[name]?.events)
        try FileManager.default.removeItem(atPath: folder + "/" + name)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(UInt64(events.count) == UInt64(Self.sample.events) - held)
        #expect(reader.health.eventsLost == held)
        #expect(!reader.health.isComplete)
        #expect(reader.health.damage == ["\(name) is missing (it held \(size(Self.sample.folder + "/" + name)) bytes)"])
        let thread = name.dropFirst("stream-".count)
        #expect(reader.health.lossWindows.contains { $0.stream == "tid \(thread)" && $0.events == held })
    }

    @Test func anEmptiedStreamIsALoss() throws {
        let folder = copy("accounting-emptied")
        let name = streams(of: folder)[0]
        #expect(truncate(folder + "/" + name, 0) == 0)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(UInt64(events.count) + reader.health.eventsLost == UInt64(Self.sample.events))
        #expect(reader.health.damage.count == 1 && reader.health.damage[0].hasPrefix("\(name) holds 0 of its"))
    }

    /// A packet whose content size was made smaller hides its last events from the stream's own checks: the
    /// per-stream event count finds them.
    @Test func eventsHiddenByASmallerContentSizeAreLost() throws {
        let folder = copy("accounting-content")
        let stream = folder + "/" + streams(of: folder)[0]
        let handle = try #require(FileHandle(forUpdatingAtPath: stream))
        defer { try? handle.close() }
        try handle.seek(toOffset: 36)
        var bits = try #require(try handle.read(upToCount: 8)).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        bits -= 8 * 9                     // the last event at least: 9 bytes of header
        try handle.seek(toOffset: 36)
        try handle.write(contentsOf: withUnsafeBytes(of: bits) { Data($0) })
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        if error == nil {
            #expect(events.count < Self.sample.events)
            #expect(!reader.health.isComplete && !reader.health.damage.isEmpty, "\(reader.health)")
        }
    }

    /// An event of the schema renamed in the metadata: its events are lost, not skipped as a newer recorder's.
    @Test func aRenamedEventInTheMetadataIsALoss() throws {
        let folder = copy("accounting-renamed")
        let metadata = try String(contentsOfFile: folder + "/metadata", encoding: .utf8)
        try metadata.replacingOccurrences(of: "\"runloop:timer_fire_begin\"", with: "\"runloop:timer_fire_bgein\"")
            .write(toFile: folder + "/metadata", atomically: true, encoding: .utf8)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(!events.isEmpty && events.allSatisfy { $0.short != "timer_fire_begin" })
        #expect(UInt64(events.count) + reader.health.eventsLost == UInt64(Self.sample.events))
        #expect(reader.health.eventsLost > 0 && reader.health.eventsSkipped == 0)
        #expect(reader.health.damage.count == 1 && reader.health.damage[0].contains("timer_fire_begin"))
    }

    @Test func aDamagedEndFileIsAnErrorNamingItsLine() throws {
        let folder = copy("accounting-damaged-end")
        let name = streams(of: folder)[0]
        try "events_recorded = 12;\n\(name) = many events;\n".write(toFile: folder + "/.end", atomically: true, encoding: .utf8)
        do {
            _ = try EmbeddedTraceReader(path: folder)
            Issue.record("a damaged end file was believed")
        } catch {
            #expect(error.path == folder + "/.end")
            #expect(error.reason.hasPrefix("line 2: \(name): expected \"N events, M bytes\""), "\(error.reason)")
        }
    }

    @Test func theEndFileRoundTrips() throws {
        let written = TraceAccounting(eventsRecorded: 10, eventsLost: 2,
                                      streams: ["stream-7": .init(events: 4, bytes: 300), "stream-9-2": .init(events: nil, bytes: 76)])
        #expect(try TraceAccounting(parsing: written.text) == written)
        #expect(try TraceAccounting(parsing: "snapshot_written_at = 5;\r\nstream-3 = 80 bytes;\r\n").streams == ["stream-3": .init(events: nil, bytes: 80)])
        #expect(throws: TraceAccountingError.self) { try TraceAccounting(parsing: "stream-1 = 3 bytes;\nstream-1 = 3 bytes;\n") }
        #expect(throws: TraceAccountingError.self) { try TraceAccounting(parsing: "events_recorded = -1;\n") }
    }

    /// One flipped value must not size memory: a run depth of 536870913 (seen making `summarize` allocate 5 GB)
    /// is refused by the reader with the file and offset.
    @Test func anImpossibleRunDepthIsAnErrorNamingTheFile() throws {
        let folder = copy("accounting-depth")
        let stream = folder + "/" + streams(of: folder)[0]
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: stream)))
        let at = try #require(Self.depthOfFirstBeforeSources(in: bytes), "no before_sources event found")
        withUnsafeBytes(of: UInt32(536_870_913).littleEndian) { bytes.replaceSubrange(at..<at + 4, with: $0) }
        try Data(bytes).write(to: URL(fileURLWithPath: stream))
        let failure = embeddedReadFailure(folder)
        let error = try #require(failure, "the depth was read as it was")
        #expect(error.path == stream && error.offset != nil)
        #expect(error.reason.contains("field `depth` = 536870913 is not a run depth"), "\(error.reason)")
    }

    /// The depth field of the first `before_sources` event (id 2: loop_id u64, mode string, iteration u64, depth
    /// u32) at depth 1 in the first packet.
    static func depthOfFirstBeforeSources(in bytes: [UInt8]) -> Int? {
        let header = TraceSchema.packetHeaderSize
        var index = header
        while index + 40 < bytes.count {
            defer { index += 1 }
            guard bytes[index] == 2 else { continue }
            var end = index + 17
            while end < bytes.count, bytes[end] != 0, end - index < 80 { end += 1 }
            let mode = bytes[(index + 17)..<end]
            guard mode.count >= 3, mode.allSatisfy({ (0x20..<0x7F).contains($0) }), end + 13 <= bytes.count else { continue }
            let depth = end + 9
            if bytes[depth..<depth + 4].elementsEqual([1, 0, 0, 0]) { return depth }
        }
        return nil
    }

    // ===== LTTng: the packet index and the stream list =====

    private func lttngCopy(_ name: String) -> (root: String, streams: String) {
        let target = temporaryPath(name)
        try! FileManager.default.copyItem(atPath: FixtureCompatibilityTests.fixtures + "/demo-lttng-v1", toPath: target)
        return (target, target + "/ust/uid/0/64-bit")
    }

    @Test(.enabled(if: CTFTraceReader.isAvailable)) func anLTTngStreamMissingBesideItsIndexIsALoss() throws {
        let (root, streams) = lttngCopy("accounting-lttng-missing")
        let indexed = try #require(CTFPreflight.indexedPackets(streams + "/index/rlctl_1.idx"))
        try FileManager.default.removeItem(atPath: streams + "/rlctl_1")
        let reader = try CTFTraceReader(path: root)
        var events = 0
        while try reader.next() != nil { events += 1 }
        #expect(reader.health.packetsLost == UInt64(indexed.count) && indexed.count > 0)
        #expect(reader.health.damage == ["rlctl_1 is missing while its packet index lists \(indexed.count) packet(s)"])
        #expect(!reader.health.isComplete)
    }

    @Test(.enabled(if: CTFTraceReader.isAvailable)) func anLTTngStreamMissingWithItsIndexIsALoss() throws {
        let (root, streams) = lttngCopy("accounting-lttng-gap")
        try FileManager.default.removeItem(atPath: streams + "/rlctl_0")
        try FileManager.default.removeItem(atPath: streams + "/index/rlctl_0.idx")
        let reader = try CTFTraceReader(path: root)
        while try reader.next() != nil {}
        #expect(reader.health.packetsLost >= 1)
        #expect(reader.health.damage == ["rlctl_0 is missing, with its index: stream rlctl_1 exists"])
    }

    @Test(.enabled(if: CTFTraceReader.isAvailable)) func anLTTngRenamedEventIsALoss() throws {
        let (root, streams) = lttngCopy("accounting-lttng-renamed")
        var metadata = [UInt8](try Data(contentsOf: URL(fileURLWithPath: streams + "/metadata")))
        let name = Array("runloop:before_sources\"".utf8), renamed = Array("runloop:before_sourcse\"".utf8)
        var index = 0
        while index + name.count <= metadata.count {
            if metadata[index..<index + name.count].elementsEqual(name) { metadata.replaceSubrange(index..<index + name.count, with: renamed) }
            index += 1
        }
        try Data(metadata).write(to: URL(fileURLWithPath: streams + "/metadata"))
        let reader = try CTFTraceReader(path: root)
        while try reader.next() != nil {}
        #expect(!reader.health.isComplete)
        #expect(reader.health.damage.count == 1 && reader.health.damage[0].contains("before_sources"))
    }

    // ===== LTTng: babeltrace2's discard counts =====

    /// LTTng closes packets out of timestamp order under a flood, so consecutive packets' cumulative discard
    /// counters can go down; babeltrace2's unsigned difference then wraps to nearly 2^64 (seen as
    /// 18446744073709551615 events lost). The loss is the highest counter, not the sum.
    @Test func discardCountersThatGoDownAreNotAWrappedLoss() {
        var counters = LossCounters()
        let deltas: [UInt64] = [189_957, 0 &- 189_957, 431_472, 0 &- 431_472 &+ 418_229, 1_000]
        let losses = deltas.map { counters.newLoss(stream: "rlctl_1", packets: false, delta: $0) }
        #expect(losses == [189_957, 0, 241_515, 0, 0])
        #expect(losses.reduce(0, +) == 431_472, "the highest counter the stream reached")
        #expect(counters.newLoss(stream: "rlctl_0", packets: false, delta: 5) == 5, "each stream has its own counter")
        #expect(counters.newLoss(stream: "rlctl_0", packets: true, delta: 2) == 2, "and packets their own")
    }
}

import Foundation
import Glibc
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// `CTFTraceReader` on hand-written CTF 1.8 traces (no LTTng needed), and on every kind of bad input.
@Suite(.enabled(if: BabeltraceTestEnvironment.shouldRun, BabeltraceTestEnvironment.skipComment))
struct CTFReaderTests {
    private func readTrace(_ path: String) throws(TraceReadError) -> (events: [TraceEvent], health: TraceHealth) {
        let reader = try CTFTraceReader(path: path)
        var events: [TraceEvent] = []
        while let event = try reader.next() { events.append(event) }
        return (events, reader.health)
    }

    private func withTrace<T>(_ name: String, _ options: CTFTestTrace.Options = .init(),
                              _ body: (String, [TraceEvent]) throws -> T) throws -> T {
        let folder = CTFTestFiles.scratchFolder(name)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let expected = try CTFTestTrace.write(to: folder, options)
        return try body(folder, expected)
    }

    // ===== reading =====

    @Test(arguments: ["", "runloop:"])
    func readsEveryEventByNameWithTheRightThreadAndOrder(prefix: String) throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        try withTrace("generic", .init(prefix: prefix)) { folder, expected in
            let (events, health) = try readTrace(folder)
            #expect(events == expected)
            #expect(Set(events.map(\.payload.eventName)).count == TraceSchema.events.count, "every event kind is in the trace")
            #expect(health == { var h = TraceHealth(); h.eventsRead = UInt64(expected.count); return h }())
        }
    }

    @Test func findsTheTraceBelowAnOutputFolderAndFromItsMetadataFile() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        let output = CTFTestFiles.scratchFolder("layout")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let trace = output + "/ust/uid/0/64-bit"
        let expected = try CTFTestTrace.write(to: trace, .init(prefix: "runloop:", packetizedMetadata: true, writeIndex: true))
        let canonical = URL(fileURLWithPath: trace).resolvingSymlinksInPath().path
        for path in [output, output + "/ust", trace, trace + "/metadata"] {
            let reader = try CTFTraceReader(path: path)
            #expect(reader.traceDirectories == [canonical])
            var events: [TraceEvent] = []
            while let event = try reader.next() { events.append(event) }
            #expect(events == expected, "via \(path)")
        }
    }

    @Test func twoTracesUnderOneFolderAreMergedByTime() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        let output = CTFTestFiles.scratchFolder("two")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let first = try CTFTestTrace.write(to: output + "/ust/uid/0/64-bit")
        let second = try CTFTestTrace.write(to: output + "/ust/uid/0/32-bit", .init(prefix: "runloop:"))
        let (events, _) = try readTrace(output)
        #expect(events.count == first.count + second.count)
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
    }

    @Test func discardedEventsAndLostPacketsGoIntoHealth() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        try withTrace("losses", .init(discardedEvents: 5, losePacket: true)) { folder, expected in
            let (events, health) = try readTrace(folder)
            #expect(events == expected)
            #expect(health.eventsRead == UInt64(expected.count))
            #expect(health.eventsLost == 5)
            #expect(health.packetsLost == 1)
            #expect(!health.isComplete)
            #expect(health.lossWindows.count == 2)
            if let window = health.lossWindows.first(where: { $0.events == 5 }) {
                #expect(window.stream.contains("stream_0"), "\(window.stream)")
                #expect(window.from < window.to)
                // The window runs from the end of the packet before the loss to the end of the next one.
                let secondPacket = expected.filter { $0.threadID == CTFTestTrace.packetThread }[10]
                #expect(window.from < secondPacket.timestamp && secondPacket.timestamp < window.to)
            } else {
                Issue.record("no window with the 5 discarded events: \(health.lossWindows)")
            }
            #expect(health.lossWindows.contains { $0.events == 0 && $0.from < $0.to })
        }
    }

    @Test func readsTheEmbeddedRecordersTracesLikeItsOwnReader() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        let (folder, _) = try record("ctf-compat") {
            onThread {
                let loop = Loop.current
                let timer = LoopTimer(after: .milliseconds(1), label: "t") { _ in }
                loop.add(timer, forMode: .default)
                loop.perform { }
                loop.run(mode: .default, timeout: .milliseconds(20))
            }
        }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var own = try EmbeddedTraceReader(path: folder)
        let (ownEvents, ownError) = readAll(&own)
        #expect(ownError == nil)
        let (events, health) = try readTrace(folder)
        #expect(!events.isEmpty)
        #expect(events == ownEvents)
        #expect(health.eventsLost == own.health.eventsLost)
    }

    // ===== bad input =====

    @Test func aFolderWithoutMetadataIsAnError() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        let folder = CTFTestFiles.scratchFolder("empty")
        try FileManager.default.createDirectory(atPath: folder + "/ust/uid", withIntermediateDirectories: true)
        try Data("not a trace".utf8).write(to: URL(fileURLWithPath: folder + "/notes.txt"))
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let error = try #require(throws: TraceReadError.self) { try CTFTraceReader(path: folder) }
        #expect(error.path == folder)
        #expect(error.reason.contains("no `metadata` file"), "\(error)")
        let file = try #require(throws: TraceReadError.self) { try CTFTraceReader(path: folder + "/notes.txt") }
        #expect(file.reason.contains("not a CTF trace"), "\(file)")
    }

    @Test(arguments: [false, true])
    func aTruncatedStreamFileIsAnErrorNamingIt(withIndex: Bool) throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        try withTrace("truncated", .init(writeIndex: withIndex)) { folder, _ in
            let stream = folder + "/stream_0"
            let size = try FileManager.default.attributesOfItem(atPath: stream)[.size] as! Int
            truncate(stream, off_t(size - 40))
            let error = try #require(throws: TraceReadError.self) { try readTrace(folder) }
            #expect(error.path.hasSuffix("/stream_0"), "\(error)")
            if withIndex { #expect(error.offset == UInt64(size - 40), "\(error)") }
        }
    }

    @Test func corruptTextMetadataIsAnErrorNamingIt() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        try withTrace("badtsdl") { folder, _ in
            let metadata = folder + "/metadata"
            var text = try String(contentsOfFile: metadata, encoding: .utf8)
            text = text.replacingOccurrences(of: "stream {\n    id = 1;", with: "stream {\n    id = = 1;")
            try text.write(toFile: metadata, atomically: true, encoding: .utf8)
            let error = try #require(throws: TraceReadError.self) { try readTrace(folder) }
            #expect(error.path.hasSuffix("/metadata"), "\(error)")
        }
    }

    /// babeltrace2 2.0.4 would loop for ever on this one: the reader's own check catches it first.
    @Test func truncatedPacketizedMetadataIsAnErrorWithItsOffset() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        try withTrace("cutmeta", .init(packetizedMetadata: true)) { folder, _ in
            let metadata = folder + "/metadata"
            truncate(metadata, 1024 + 500)
            let error = try #require(throws: TraceReadError.self) { try readTrace(folder) }
            #expect(error.path.hasSuffix("/metadata"), "\(error)")
            #expect(error.offset == 1024 + 500, "\(error)")
            #expect(error.reason.contains("truncated metadata"))
        }
    }

    /// babeltrace2 2.0.4 would abort the process on this one (an index entry past the end of its stream).
    @Test func aCorruptPacketIndexIsAnErrorNamingIt() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        try withTrace("badindex", .init(writeIndex: true)) { folder, _ in
            let index = folder + "/index/stream_0.idx"
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: index)))
            // Entry 1's offset (bytes 16 + 56 ...) moved far past the end; sizes untouched.
            bytes[16 + 56 + 3] = 0x7F
            try Data(bytes).write(to: URL(fileURLWithPath: index))
            let error = try #require(throws: TraceReadError.self) { try readTrace(folder) }
            #expect(error.path.hasSuffix("/index/stream_0.idx"), "\(error)")
            #expect(error.offset == 16 + 56, "\(error)")
        }
    }

    @Test func aBadEnumerationValueIsAnErrorNotACrash() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        try withTrace("badenum") { folder, expected in
            // The wakeup's reason byte: find the event's bytes and set the reason to 9.
            let stream = folder + "/stream_0"
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: stream)))
            let slept: UInt64 = 4_000_000
            let pattern = withUnsafeBytes(of: slept.littleEndian) { Array($0) } + [Loop.WakeReason.timer.rawValue]
            guard let at = (0...(bytes.count - pattern.count)).first(where: { Array(bytes[$0 ..< $0 + pattern.count]) == pattern }) else {
                Issue.record("wakeup event not found")
                return
            }
            bytes[at + 8] = 9
            try Data(bytes).write(to: URL(fileURLWithPath: stream))
            let reader = try CTFTraceReader(path: folder)
            var read = 0
            let error = try #require(throws: TraceReadError.self) { while try reader.next() != nil { read += 1 } }
            #expect(error.reason.contains("not a wake reason"), "\(error)")
            #expect(error.path.hasSuffix("/stream_0"), "\(error)")
            #expect(read == expected.firstIndex { $0.payload.eventName == "wakeup" })
        }
    }

    @Test func aTraceWithoutTheFieldsOfItsEventNameIsAnError() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        try withTrace("badfields") { folder, _ in
            let metadata = folder + "/metadata"
            var text = try String(contentsOfFile: metadata, encoding: .utf8)
            text = text.replacingOccurrences(of: "uint64_t timer_id; uint64_t scheduled_ns;", with: "uint64_t timer_id; uint64_t scheduled;")
            try text.write(toFile: metadata, atomically: true, encoding: .utf8)
            let error = try #require(throws: TraceReadError.self) { try readTrace(folder) }
            #expect(error.reason.contains("scheduled_ns"), "\(error)")
            #expect(error.path.hasSuffix("/metadata"), "\(error)")
        }
    }

    /// ~200 random mutations of a hand-written trace (packetized metadata and index files included): every
    /// read ends with events or a `TraceReadError` naming a file of the trace, never a crash or a hang.
    @Test func mutatedTracesGiveEventsOrErrorsNamingAFile() throws {
        guard BabeltraceTestEnvironment.requireAvailable() else { return }
        try withTrace("fuzz", .init(prefix: "runloop:", packetizedMetadata: true, writeIndex: true, discardedEvents: 3)) { folder, _ in
            let outcome = try CTFMutationFuzzer.run(trace: folder, mutations: 200, seed: 0xC7F_2024)
            #expect(outcome.read + outcome.failed == 200)
            #expect(outcome.failed > 20, "mutations are detected")
            #expect(outcome.unnamedErrors.isEmpty, "\(outcome.unnamedErrors.prefix(5))")
        }
    }

}

/// What the reader says in every build, with or without libbabeltrace2.
@Suite struct CTFReaderBuildTests {
    @Test func aMissingPathIsAnError() throws {
        let path = "/nonexistent/rlctl-\(getpid())/trace"
        let error = try #require(throws: TraceReadError.self) { try CTFTraceReader(path: path) }
        #expect(error.path == path)
        if CTFTraceReader.isAvailable { #expect(error.reason.contains("does not exist"), "\(error)") }
    }

    /// Without libbabeltrace2 the reader says so (the build option of docs/lttng.md).
    @Test func aBuildWithoutBabeltraceSaysSo() throws {
        guard !CTFTraceReader.isAvailable else { return }
        let folder = CTFTestFiles.scratchFolder("nobt")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let error = try #require(throws: TraceReadError.self) { try CTFTraceReader(path: folder) }
        #expect(error.reason.contains("built without libbabeltrace2"))
    }
}

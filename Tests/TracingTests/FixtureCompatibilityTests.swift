import Foundation
import RunLoopCore
import Testing
@testable import TraceReading

/// Traces of today's format stay readable, and a trace with fields or events this build does not know is read
/// anyway. Fixtures/mixed-v1.rltrace was recorded by the recorder of commit 088a5cc (before the schema had one
/// definition) and Fixtures/mixed-v1.jsonl is what that commit's `rlctl export --format jsonl` made of it;
/// Fixtures/regenerate.sh makes both again.
@Suite struct FixtureCompatibilityTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").path
    static let trace = fixtures + "/mixed-v1.rltrace"

    static func readAll(_ path: String) throws -> (events: [TraceEvent], health: TraceHealth) {
        var reader = try EmbeddedTraceReader(path: path)
        var events: [TraceEvent] = []
        while let event = try reader.next() { events.append(event) }
        return (events, reader.health)
    }

    /// The event as the JSONL export of 088a5cc writes it (its keys, empty values left out).
    static func exported(_ event: TraceEvent) -> [String: String] {
        var row = ["timestamp_ns": "\(event.timestamp)", "thread_id": "\(event.threadID)", "event": event.payload.eventName]
        func set(_ key: String, _ value: Any) { row[key] = "\(value)" }
        switch event.payload {
        case .activity(_, let place):
            set("loop_id", place.loopID); set("mode", place.mode); set("iteration", place.iteration); set("depth", place.depth)
        case .runBegin(let loop, let mode, _, _):
            set("loop_id", loop); set("mode", mode)
        case .runEnd(let loop, let mode, let result):
            set("loop_id", loop); set("mode", mode); set("result", result)
        case .timerFireBegin(let loop, let id, let scheduled, let tolerance, let interval, let missed):
            set("loop_id", loop); set("id", id); set("scheduled_ns", scheduled); set("tolerance_ns", tolerance)
            set("interval_ns", interval); set("missed", missed)
        case .timerFireEnd(let loop, let id), .sourcePerformEnd(let loop, let id), .blockEnd(let loop, let id), .observerEnd(let loop, let id):
            set("loop_id", loop); set("id", id)
        case .sourceSignal(let id):
            set("id", id)
        case .sourcePerformBegin(let loop, let id, let kind, _, let signaled):
            set("loop_id", loop); set("id", id); set("kind", kind); set("signaled_ns", signaled)
        case .blockBegin(let loop, let id, let enqueued):
            set("loop_id", loop); set("id", id); set("enqueued_ns", enqueued)
        case .observerBegin(let loop, let id, let activity):
            set("loop_id", loop); set("id", id); set("kind", activity)
        case .wakeUp(let loop, let reason, let slept):
            set("loop_id", loop); set("reason", reason); set("slept_ns", slept)
        case .loopCreate(let loop, _, let name):
            set("loop_id", loop); set("label", name)
        case .itemLabel(let id, let kind, let label):
            set("id", id); set("kind", kind); set("label", label)
        case .mainQueueBegin(let loop), .mainQueueEnd(let loop):
            set("loop_id", loop)
        case .jobBegin(let loop, let id, let enqueued, let priority):
            set("loop_id", loop); set("id", id); set("enqueued_ns", enqueued); set("priority", priority)
        case .jobEnd(let loop, let id):
            set("loop_id", loop); set("id", id)
        case .loopAdapted, .nioTick, .nioIO, .probeFire, .waitBegin, .waitEnd, .waitThread, .loopStall, .loopHang, .waitBatch,
             .kernelBegin, .kernelTask, .kernelTimer, .kernelRunQueue, .kernelOffCPU, .kernelLost:
            Issue.record("the fixtures predate the adapters', the wait interposer's, the stall and the kernel events: \(event.payload.eventName) cannot be in them")
        }
        return row.filter { !$0.value.isEmpty }
    }

    /// The rows of a JSONL export, every value as text.
    static func golden(_ name: String) throws -> [[String: String]] {
        try String(contentsOfFile: fixtures + "/" + name, encoding: .utf8).split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            return object.mapValues { "\($0)" }
        }
    }

    /// Records an issue at the first event that differs from what the old reader read.
    static func expectSameAsOldReader(_ events: [TraceEvent], golden: [[String: String]]) {
        #expect(events.count == golden.count)
        for (index, (event, expected)) in zip(events, golden).enumerated() where exported(event) != expected {
            Issue.record("event \(index): read \(exported(event)), the old reader read \(expected)")
            break
        }
    }

    @Test func todaysFormatReadsExactlyAsTheOldReaderReadIt() throws {
        let (events, health) = try Self.readAll(Self.trace)
        #expect(events.count == 604)
        Self.expectSameAsOldReader(events, golden: try Self.golden("mixed-v1.jsonl"))
        #expect(Set(events.map(\.payload.eventName)).count == 18)
        #expect(health.isComplete && health.eventsSkipped == 0 && health.eventsRead == 604)
    }

    /// Fixtures/demo-lttng-v1 is an LTTng trace of runloop-demo recorded through the LTTng provider of commit
    /// 088a5cc (`rlctl record --subbuf-size 4096 -- runloop-demo 0.3`), and demo-lttng-v1.jsonl that commit's
    /// export of it: the CTF reader still reads LTTng traces of that provider, field by field.
    @Test(.enabled(if: BabeltraceTestEnvironment.shouldRun, BabeltraceTestEnvironment.skipComment))
    func anLTTngTraceOfTheOldProviderReadsExactlyAsTheOldReaderReadIt() throws {
        let reader = try CTFTraceReader(path: Self.fixtures + "/demo-lttng-v1")
        var events: [TraceEvent] = []
        while let event = try reader.next() { events.append(event) }
        #expect(events.count == 826)
        Self.expectSameAsOldReader(events, golden: try Self.golden("demo-lttng-v1.jsonl"))
        #expect(reader.health.isComplete && reader.health.eventsRead == 826)
    }

    // ===== a newer recorder's trace =====

    /// The fixture as a newer recorder would write it: `timer_fire_begin` with a u32 `future_count` at its end,
    /// `wakeup` with a string `future_note` between `reason` and `slept_ns`, and after every wakeup an event
    /// `runloop:future_event` (id 42) this build does not know.
    static func extendedFixture(named name: String, dropSleptNanoseconds: Bool = false) throws -> (path: String, futureEvents: Int) {
        let folder = NSTemporaryDirectory() + "/rlctl-fixture-\(name)-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.copyItem(atPath: trace, toPath: folder)
        var metadata = try String(contentsOfFile: folder + "/metadata", encoding: .utf8)
        metadata = metadata.replacingOccurrences(of: "        uint64_t missed;\n", with: "        uint64_t missed;\n        uint32_t future_count;\n")
        metadata = metadata.replacingOccurrences(
            of: "        uint64_t slept_ns;\n",
            with: dropSleptNanoseconds ? "        string future_note;\n" : "        string future_note;\n        uint64_t slept_ns;\n")
        metadata += "\nevent {\n    name = \"runloop:future_event\";\n    id = 42;\n    fields := struct {\n        uint64_t loop_id;\n        string text;\n    };\n};\n"
        try metadata.write(toFile: folder + "/metadata", atomically: true, encoding: .utf8)

        let timerFireBegin = TraceSchema.EventID.timerFireBegin.rawValue, wakeUp = TraceSchema.EventID.wakeUp.rawValue
        var futureEvents = 0
        for stream in try FileManager.default.contentsOfDirectory(atPath: folder) where stream.hasPrefix("stream-") {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + "/" + stream)))
            var output: [UInt8] = []
            var packetStart = 0
            while packetStart < bytes.count {
                let packetBytes = Int(load(bytes, packetStart + 44) / 8)
                var packet = Array(bytes[packetStart..<(packetStart + TraceSchema.packetHeaderSize)])
                var position = packetStart + TraceSchema.packetHeaderSize
                let end = packetStart + Int(load(bytes, packetStart + 36) / 8)
                while position < end {
                    let id = bytes[position]
                    let timestamp = bytes[(position + 1)..<(position + 9)]
                    var event = Array(bytes[position..<(position + TraceSchema.eventHeaderSize)])
                    position += TraceSchema.eventHeaderSize
                    for field in TraceSchema.events[Int(id)].fields {
                        let size = field.type.fixedSize ?? (bytes[position...].firstIndex(of: 0)! - position + 1)
                        if id == wakeUp && field.name == "slept_ns" {
                            event += Array("later\0".utf8)
                            if dropSleptNanoseconds { position += size; continue }
                        }
                        event += bytes[position..<(position + size)]
                        position += size
                    }
                    if id == timerFireBegin { event += [0xEF, 0xBE, 0xAD, 0xDE] }
                    packet += event
                    if id == wakeUp {
                        packet += [42] + timestamp + [7, 0, 0, 0, 0, 0, 0, 0] + Array("from the future\0".utf8)
                        futureEvents += 1
                    }
                }
                let bits = UInt64(packet.count * 8)
                withUnsafeBytes(of: bits.littleEndian) { packet.replaceSubrange(36..<44, with: $0) }
                withUnsafeBytes(of: bits.littleEndian) { packet.replaceSubrange(44..<52, with: $0) }
                output += packet
                packetStart += packetBytes
            }
            try Data(output).write(to: URL(fileURLWithPath: folder + "/" + stream))
        }
        return (folder, futureEvents)
    }

    static func load(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * $1) }
    }

    @Test func unknownFieldsAndEventsAreSkippedAndEveryKnownFieldReadExactly() throws {
        let (expected, _) = try Self.readAll(Self.trace)
        let (folder, futureEvents) = try Self.extendedFixture(named: "extended")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (events, health) = try Self.readAll(folder)
        #expect(futureEvents == 66)
        #expect(events == expected)
        #expect(health.eventsSkipped == UInt64(futureEvents))
        #expect(health.eventsRead == UInt64(expected.count))
        #expect(health.isComplete)
    }

    @Test func aKnownEventWithoutAFieldTheModelNeedsNamesTheEventAndTheField() throws {
        let (folder, _) = try Self.extendedFixture(named: "missing-field", dropSleptNanoseconds: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        do {
            _ = try Self.readAll(folder)
            Issue.record("a wakeup event without slept_ns was read")
        } catch let error as TraceReadError {
            #expect(error.reason == "event runloop:wakeup: field `slept_ns` is missing (the metadata declares loop_id, reason, future_note)")
            #expect(error.path.hasPrefix(folder + "/stream-"))
            #expect(!error.description.contains("\n"))
        }
    }

    @Test func aFieldOfATypeTheFormatCannotHoldIsAClearError() throws {
        let (folder, _) = try Self.extendedFixture(named: "bad-type")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var metadata = try String(contentsOfFile: folder + "/metadata", encoding: .utf8)
        metadata = metadata.replacingOccurrences(of: "uint32_t future_count;", with: "floating_point { exp_dig = 8; mant_dig = 24; align = 8; } future_count;")
        try metadata.write(toFile: folder + "/metadata", atomically: true, encoding: .utf8)
        do {
            _ = try Self.readAll(folder)
            Issue.record("a float field was walked over")
        } catch let error as TraceReadError {
            #expect(error.reason == "event runloop:timer_fire_begin: field `future_count` has a type this rlctl cannot read (floating_point)")
        }
    }

    @Test func aHigherFormatVersionIsStillRefused() throws {
        let (folder, _) = try Self.extendedFixture(named: "version-2")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let metadata = try String(contentsOfFile: folder + "/metadata", encoding: .utf8)
        try metadata.replacingOccurrences(of: "rlctl_trace_format = 1", with: "rlctl_trace_format = 2")
            .write(toFile: folder + "/metadata", atomically: true, encoding: .utf8)
        #expect(throws: TraceReadError(path: folder + "/metadata", reason: "trace format version 2 is not supported (this rlctl reads version 1)")) {
            _ = try EmbeddedTraceReader(path: folder)
        }
    }
}

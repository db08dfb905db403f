import Testing
import TraceModel
@testable import TraceReading

/// What the LTTng live reader takes from an lttng-ust trace's metadata, and what it refuses rather than misread.
struct LTTngPacketLayoutTests {
    static func metadata(byteOrder: String = "le", header: String = "event_header_large", frequency: String = "1000000000",
                         cpuField: String = "uint32_t cpu_id;") -> String {
        """
        /* CTF 1.8 */
        typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
        typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
        typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
        typealias integer { size = 64; align = 8; signed = false; } := unsigned long;
        trace {
            major = 1; minor = 8;
            uuid = "015b07a7-d26d-446e-a8c7-1f58d7670066";
            byte_order = \(byteOrder);
            packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; uint64_t stream_instance_id; };
        };
        clock { name = "monotonic"; freq = \(frequency); offset = 1795615070021308410; };
        typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;
        struct packet_context {
            uint64_clock_monotonic_t timestamp_begin;
            uint64_clock_monotonic_t timestamp_end;
            uint64_t content_size;
            uint64_t packet_size;
            uint64_t packet_seq_num;
            unsigned long events_discarded;
            \(cpuField)
        };
        struct event_header_large {
            enum : uint16_t { compact = 0 ... 65534, extended = 65535 } id;
            variant <id> { struct { uint32_t timestamp; } compact; struct { uint32_t id; uint64_t timestamp; } extended; } v;
        } align(8);
        stream {
            id = 0;
            event.header := struct \(header);
            packet.context := struct packet_context;
            event.context := struct {
                integer { size = 32; align = 8; signed = 1; encoding = none; base = 10; } _vtid;
                integer { size = 32; align = 8; signed = 1; encoding = none; base = 10; } _vpid;
            };
        };
        event {
            name = "runloop:source_signal";
            id = 7;
            stream_id = 0;
            loglevel = 13;
            fields := struct {
                integer { size = 64; align = 8; signed = 0; encoding = none; base = 10; } _source_id;
            };
        };
        """
    }

    @Test func theHeaderTheContextAndTheEventsComeFromTheMetadata() throws {
        let layout = try LTTngPacketLayout(metadata: Self.metadata(), path: "m")
        #expect(layout.header == .large)
        #expect(layout.context.map(\.bytes) == [4, 4])
        #expect(layout.context.map(\.role) == [.thread, .process])
        #expect(layout.frequency == 1_000_000_000)
        let entry = layout.plan.entries[7]
        #expect(entry.declared && entry.known == TraceSchema.EventID.sourceSignal.rawValue && entry.problem == -1,
                "the fields' leading underscores are TSDL's, not the schema's")
        #expect(try LTTngPacketLayout(metadata: Self.metadata(header: "event_header_compact"), path: "m").header == .compact)
    }

    @Test func whatTheReaderCannotReadIsRefusedSayingWhat() {
        let cases: [(String, String)] = [
            (Self.metadata(byteOrder: "be"), "the trace's byte order is be; rlctl reads little-endian LTTng traces"),
            (Self.metadata(header: "my_header"), "the stream's event header is neither lttng-ust's compact nor its large one"),
            (Self.metadata(cpuField: "uint32_t cpu_id; uint64_t extra;"), "the packet context is not lttng-ust 2.13's"),
            (Self.metadata(frequency: "0"), "the clock's frequency is 0"),
        ]
        for (text, reason) in cases {
            let error = #expect(throws: TraceReadError.self) { try LTTngPacketLayout(metadata: text, path: "m") }
            #expect(error?.reason.hasPrefix(reason) == true, "\(String(describing: error))")
        }
    }

    @Test func compactTimestampsCarryIntoTheHighBits() {
        #expect(LTTngPacketLayout.extend(0x1_0000_0010, low: 0x20, bits: 32) == 0x1_0000_0020)
        #expect(LTTngPacketLayout.extend(0x1_FFFF_FFF0, low: 0x10, bits: 32) == 0x2_0000_0010, "wrapped")
        #expect(LTTngPacketLayout.extend(0x7FF_FFFF, low: 0x7FF_FFFF, bits: 27) == 0x7FF_FFFF, "the same time")
        #expect(LTTngPacketLayout.nanoseconds(3_000, frequency: 1_000) == 3_000_000_000)
    }

    /// lttng-ust's metadata stream is packetized: a 37-byte header per packet (sizes in bits), then text, then
    /// padding; a packet not whole yet is left for later.
    @Test func packetizedMetadataIsUnwrapped() {
        func packet(_ text: String, padding: Int) -> [UInt8] {
            let content = (37 + text.utf8.count) * 8, size = content + padding * 8
            var bytes: [UInt8] = [0x57, 0x1D, 0xD1, 0x75] + [UInt8](repeating: 0, count: 20)
            for value in [UInt32(content), UInt32(size)] { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
            bytes += [0, 0, 0, 1, 8]
            return bytes + Array(text.utf8) + [UInt8](repeating: 0, count: padding)
        }
        let stream = packet("/* CTF 1.8 */\n", padding: 3) + packet("trace { };", padding: 0)
        #expect(LTTngPacketLayout.metadataText(stream) == "/* CTF 1.8 */\ntrace { };")
        #expect(LTTngPacketLayout.metadataText(Array(stream.dropLast(2))) == "/* CTF 1.8 */\n")
        #expect(LTTngPacketLayout.metadataText(Array("plain".utf8)) == "plain")
    }
}

/// lttng-ust's packets decoded by ``LTTngPacketLayout/decode(_:with:after:into:naming:)``: every event header
/// form, timestamps extended from their low bits, the thread and process from the event context, and corrupt
/// packets refused with the byte where they go wrong, never read past their end.
struct LTTngPacketDecodingTests {
    /// A `source_signal` (id 7) packet: the header and context lttng-ust writes, then `events` as given.
    static func packet(begin: UInt64, events: [UInt8], sequence: UInt64 = 3, discarded: UInt64 = 2) -> [UInt8] {
        var bytes: [UInt8] = []
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        put(UInt32(0xC1FC_1FC1)); bytes += [UInt8](repeating: 0, count: 16); put(UInt32(0)); put(UInt64(1))
        let content = UInt64(32 + 52 + events.count) * 8
        put(begin); put(begin + 1_000); put(content); put(content + 64); put(sequence); put(discarded); put(UInt32(1))
        return bytes + events + [UInt8](repeating: 0, count: 8)
    }

    /// One event's bytes: `header`, then vtid and vpid, then the source id.
    static func event(_ header: [UInt8], thread: Int32 = 41, process: Int32 = 40, source: UInt64) -> [UInt8] {
        var bytes = header
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        put(thread); put(process); put(source)
        return bytes
    }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

    static func decode(_ packet: [UInt8], header: String, after previous: UInt64 = 0) throws -> ([TraceEvent], LTTngPacketLayout.PacketFacts) {
        let layout = try LTTngPacketLayout(metadata: LTTngPacketLayoutTests.metadata(header: header), path: "m")
        var events: [TraceEvent] = []
        let facts = try packet.withUnsafeBytes {
            try layout.decode($0, with: PayloadDecoder(plan: layout.plan), after: previous, into: &events, naming: "stream 1")
        }
        return (events, facts)
    }

    @Test func largeHeadersCompactAndExtended() throws {
        let begin: UInt64 = 0x5_FFFF_FF00
        let events = Self.event([7, 0] + Self.le(UInt32(0xFFFF_FF80)), source: 1)        // low 32 bits, same high bits
            + Self.event([7, 0] + Self.le(UInt32(0x0000_0010)), source: 2)              // wrapped: high bits + 1
            + Self.event([0xFF, 0xFF] + Self.le(UInt32(7)) + Self.le(UInt64(0x7_0000_0000)), source: 3)   // extended
        let (decoded, facts) = try Self.decode(Self.packet(begin: begin, events: events), header: "event_header_large")
        #expect(decoded.map(\.timestamp) == [0x5_FFFF_FF80, 0x6_0000_0010, 0x7_0000_0000])
        #expect(decoded.map(\.payload) == [.sourceSignal(sourceID: 1), .sourceSignal(sourceID: 2), .sourceSignal(sourceID: 3)])
        #expect(decoded.allSatisfy { $0.threadID == 41 && $0.processID == 40 })
        #expect(facts.begin == begin && facts.sequence == 3 && facts.discarded == 2 && facts.lastClock == 0x7_0000_0000 && facts.skipped == 0)
    }

    @Test func compactHeadersCompactAndExtended() throws {
        let begin: UInt64 = 0x100_0000_0000
        // id 7 in the low 5 bits, the timestamp's low 27 bits above them; id 31: a byte, a 32-bit id, a 64-bit time.
        let compact = Self.le(UInt32(7) | UInt32(0x00_0123) << 5)
        let extended: [UInt8] = [31] + Self.le(UInt32(7)) + Self.le(UInt64(0x100_0800_0000))
        let (decoded, _) = try Self.decode(Self.packet(begin: begin, events: Self.event(compact, source: 1) + Self.event(extended, source: 2)),
                                           header: "event_header_compact")
        #expect(decoded.map(\.timestamp) == [0x100_0000_0123, 0x100_0800_0000])
        #expect(decoded.map(\.payload) == [.sourceSignal(sourceID: 1), .sourceSignal(sourceID: 2)])
    }

    @Test func corruptPacketsAreErrorsNamingTheByte() throws {
        let good = Self.packet(begin: 10, events: Self.event([7, 0] + Self.le(UInt32(20)), source: 1))
        var badMagic = good
        badMagic[0] = 0
        var unknownID = good
        unknownID[84] = 9
        var pastTheEnd = good   // content size claims more than the packet holds
        pastTheEnd.replaceSubrange(48..<56, with: Self.le(UInt64(good.count * 8 + 64)))
        var cutEvent = good     // content ends inside the event's payload
        cutEvent.replaceSubrange(48..<56, with: Self.le(UInt64((84 + 6 + 8 + 4) * 8)))
        let cases: [([UInt8], String)] = [
            (badMagic, "packet at byte 0 of \(good.count): not an LTTng packet"),
            (unknownID, "packet at byte 84 of \(good.count): unknown event id 9"),
            (pastTheEnd, "packet at byte 48 of \(good.count): impossible content size"),
            (cutEvent, "packet at byte 98 of \(good.count): event field runs past the end of the packet"),
            (Array(good.prefix(40)), "packet at byte 0 of 40: not an LTTng packet"),
        ]
        for (packet, reason) in cases {
            let error = #expect(throws: TraceReadError.self) { try Self.decode(packet, header: "event_header_large") }
            #expect(error?.path == "stream 1" && error?.reason.hasPrefix(reason) == true, "\(String(describing: error))")
        }
    }
}

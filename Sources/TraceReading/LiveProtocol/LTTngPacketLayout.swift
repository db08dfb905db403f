import TraceModel

/// How to read the packets of an lttng-ust trace, worked out from its metadata: the event header (compact or
/// large), the stream's event context (`vtid`, `vpid`), the clock's frequency, and a ``DecodingPlan`` of the
/// `runloop` events. Only what lttng-ust 2.13 writes on a little-endian machine is accepted, byte-aligned
/// (its metadata says `align = 8` for every field): anything else is an error naming what differs, never a
/// silent misreading.
struct LTTngPacketLayout {
    enum EventHeader {
        /// 5-bit id and 27-bit timestamp in one 32-bit word; id 31: a 32-bit id and a 64-bit timestamp follow.
        case compact
        /// 16-bit id and 32-bit timestamp; id 65535: a 32-bit id and a 64-bit timestamp follow.
        case large
    }

    /// One field of the stream's event context: its size in bytes (0: a string), and whether it is the thread or
    /// process id.
    struct ContextField {
        enum Role { case thread, process, other }
        var bytes: Int
        var role: Role
    }

    let header: EventHeader
    let context: [ContextField]
    let frequency: UInt64
    let plan: DecodingPlan

    /// The packet header lttng-ust writes: magic, uuid, stream_id, stream_instance_id.
    static let packetHeaderSize = 4 + 16 + 4 + 8
    /// Then its packet context: timestamp_begin, timestamp_end, content_size, packet_size, packet_seq_num,
    /// events_discarded, cpu_id.
    static let packetContextSize = 8 * 6 + 4
    static let packetContextFields: [TraceMetadataEvents.DeclaredField] = [
        .init(name: "timestamp_begin", type: .integer(bytes: 8, signed: false)), .init(name: "timestamp_end", type: .integer(bytes: 8, signed: false)),
        .init(name: "content_size", type: .integer(bytes: 8, signed: false)), .init(name: "packet_size", type: .integer(bytes: 8, signed: false)),
        .init(name: "packet_seq_num", type: .integer(bytes: 8, signed: false)), .init(name: "events_discarded", type: .integer(bytes: 8, signed: false)),
        .init(name: "cpu_id", type: .integer(bytes: 4, signed: false)),
    ]
    static let magic: UInt32 = 0xC1FC_1FC1

    init(metadata text: String, path: String) throws(TraceReadError) {
        var parser = TraceMetadataEvents.Parser(tokens: TraceMetadataEvents.Tokenizer.tokens(text), path: path)
        let declared = try parser.parseTopLevel(keepingStreams: true)
        let facts = parser.lttng
        guard facts.byteOrder == "le" else {
            throw TraceReadError(path: path, reason: "the trace's byte order is \(facts.byteOrder ?? "not given"); rlctl reads little-endian LTTng traces")
        }
        // Names and sizes: a 32-bit program's `unsigned long events_discarded` has the name and 4 bytes.
        guard facts.packetContext == Self.packetContextFields else {
            throw TraceReadError(path: path, reason: "the packet context is not lttng-ust 2.13's 64-bit one (\(facts.packetContext.map(\.name).joined(separator: ", ")))")
        }
        guard let stream = facts.stream, facts.streamCount == 1 else {
            throw TraceReadError(path: path, reason: "the trace has \(facts.streamCount) stream classes; rlctl's live sessions have one channel")
        }
        guard let header = stream.header else {
            throw TraceReadError(path: path, reason: "the stream's event header is neither lttng-ust's compact nor its large one")
        }
        self.header = header
        context = try stream.context.map { field throws(TraceReadError) in
            let role: ContextField.Role = field.name == "_vtid" ? .thread : field.name == "_vpid" ? .process : .other
            switch field.type {
            case .integer(let bytes, _): return ContextField(bytes: bytes, role: role)
            case .string: return ContextField(bytes: 0, role: role)
            case .sequence:
                throw TraceReadError(path: path, reason: "the event context's field `\(field.name)` is a sequence, which rlctl cannot read there")
            case .unsupported(let what):
                throw TraceReadError(path: path, reason: "the event context's field `\(field.name)` has a type rlctl cannot read (\(what))")
            }
        }
        frequency = facts.frequency ?? 1_000_000_000
        guard frequency > 0 else { throw TraceReadError(path: path, reason: "the clock's frequency is 0") }
        // lttng-ust names every field with a leading underscore (TSDL escaping).
        let events = declared.map { event in
            TraceMetadataEvents.DeclaredEvent(id: event.id, name: event.name, fields: event.fields.map {
                .init(name: $0.name.hasPrefix("_") ? String($0.name.dropFirst()) : $0.name, type: $0.type)
            }, problem: event.problem)
        }
        plan = try DecodingPlan(TraceMetadataEvents(events: events), path: path)
    }

    /// The text of a metadata stream: lttng-ust's is packetized (each packet a 37-byte header, then text);
    /// only whole packets count. Plain text is taken as it is.
    static func metadataText(_ bytes: [UInt8]) -> String {
        guard bytes.count >= 4, bytes[0] == 0x57, bytes[1] == 0x1D, bytes[2] == 0xD1, bytes[3] == 0x75 else {
            return String(decoding: bytes, as: UTF8.self)
        }
        var text: [UInt8] = []
        var offset = 0
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        while offset + 37 <= bytes.count, u32(offset) == 0x75D1_1D57 {
            let content = u32(offset + 24) / 8, packet = u32(offset + 28) / 8
            guard content >= 37, packet >= content, offset + packet <= bytes.count else { break }
            text += bytes[(offset + 37)..<(offset + content)]
            offset += packet
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension LTTngPacketLayout {
    /// A timestamp whose low `bits` are `low`, the first at or after `previous` (CTF's compact timestamps).
    @inline(__always)
    static func extend(_ previous: UInt64, low: UInt64, bits: UInt64) -> UInt64 {
        let mask: UInt64 = (1 << bits) - 1
        var value = (previous & ~mask) | low
        if value < previous { value &+= 1 << bits }
        return value
    }

    static func nanoseconds(_ cycles: UInt64, frequency: UInt64) -> UInt64 {
        let (high, low) = cycles.multipliedFullWidth(by: 1_000_000_000)
        guard high < frequency else { return .max }
        return frequency.dividingFullWidth((high, low)).quotient
    }

    /// What a packet's context says, and what its decoding found besides the events.
    struct PacketFacts {
        var begin: UInt64
        var sequence: UInt64
        var discarded: UInt64
        /// The clock (in its own cycles) at the packet's last event, where the next packet's timestamps extend from.
        var lastClock: UInt64
        /// Events of kinds this build does not know, walked over.
        var skipped: UInt64
    }

    /// Decodes one packet's events into `events` (timestamps in nanoseconds); `previousClock` is the stream's
    /// clock at its previous packet's last event. Errors name `path` (a stream) and the byte of the packet.
    func decode(_ packet: UnsafeRawBufferPointer, with decoder: PayloadDecoder, after previousClock: UInt64,
                into events: inout [TraceEvent], naming path: String) throws(TraceReadError) -> PacketFacts {
        func fail(_ reason: String, at offset: Int) -> TraceReadError {
            TraceReadError(path: path, reason: "packet at byte \(offset) of \(packet.count): \(reason)")
        }
        @inline(__always) func load<T: FixedWidthInteger>(_ type: T.Type, _ offset: Int) -> T { packet.littleEndian(type, at: offset) }
        let headers = Self.packetHeaderSize + Self.packetContextSize
        guard packet.count >= headers, load(UInt32.self, 0) == Self.magic else {
            throw fail("not an LTTng packet (bad magic or too short)", at: 0)
        }
        let packetContext = Self.packetHeaderSize
        let begin = load(UInt64.self, packetContext), contentBits = load(UInt64.self, packetContext + 16)
        let sequence = load(UInt64.self, packetContext + 32), discarded = load(UInt64.self, packetContext + 40)
        guard contentBits % 8 == 0, Int(clamping: contentBits / 8) <= packet.count, contentBits / 8 >= UInt64(headers) else {
            throw fail("impossible content size (\(contentBits) bits)", at: packetContext + 16)
        }
        let end = Int(contentBits / 8)
        var skipped: UInt64 = 0
        var offset = headers
        var clock = max(begin, previousClock)
        while offset < end {
            let eventStart = offset
            guard offset + 4 <= end else { throw fail("event header runs past the end of the packet", at: offset) }
            var id: Int
            switch header {
            case .large:
                guard offset + 6 <= end else { throw fail("event header runs past the end of the packet", at: offset) }
                id = Int(load(UInt16.self, offset))
                if id == 65535 {
                    guard offset + 14 <= end else { throw fail("event header runs past the end of the packet", at: offset) }
                    id = Int(load(UInt32.self, offset + 2))
                    clock = load(UInt64.self, offset + 6)
                    offset += 14
                } else {
                    clock = Self.extend(clock, low: UInt64(load(UInt32.self, offset + 2)), bits: 32)
                    offset += 6
                }
            case .compact:
                let word = load(UInt32.self, offset)
                id = Int(word & 31)
                if id == 31 {
                    // The 5-bit id's byte, then (byte-aligned) a 32-bit id and a 64-bit timestamp.
                    guard offset + 13 <= end else { throw fail("event header runs past the end of the packet", at: offset) }
                    id = Int(load(UInt32.self, offset + 1))
                    clock = load(UInt64.self, offset + 5)
                    offset += 13
                } else {
                    clock = Self.extend(clock, low: UInt64(word >> 5), bits: 27)
                    offset += 4
                }
            }
            var thread: Int32 = 0, process: Int32 = 0
            for field in context {
                if field.bytes == 0 {
                    while offset < end && packet[offset] != 0 { offset += 1 }
                    offset += 1
                    continue
                }
                guard offset + field.bytes <= end else { throw fail("event context runs past the end of the packet", at: offset) }
                if field.role != .other && field.bytes == 4 {
                    if field.role == .thread { thread = load(Int32.self, offset) } else { process = load(Int32.self, offset) }
                }
                offset += field.bytes
            }
            guard offset <= end else { throw fail("event context runs past the end of the packet", at: offset) }
            let payload: TraceEvent.Payload?
            do {
                payload = try decoder.payload(rawID: id, eventStart: eventStart, in: packet, offset: &offset, end: end)
            } catch {
                throw fail(error.reason, at: error.offset)
            }
            guard let payload else {
                skipped += 1
                continue
            }
            let nanoseconds = frequency == 1_000_000_000 ? clock : Self.nanoseconds(clock, frequency: frequency)
            events.append(TraceEvent(timestamp: nanoseconds, threadID: thread, processID: process, payload: payload))
        }
        return PacketFacts(begin: begin, sequence: sequence, discarded: discarded, lastClock: clock, skipped: skipped)
    }
}

extension TraceMetadataEvents {
    /// What the LTTng reader needs beyond the events: gathered by ``Parser/parseTopLevel(keepingStreams:)``.
    struct LTTngFacts {
        struct Stream {
            var header: LTTngPacketLayout.EventHeader?
            var context: [DeclaredField] = []
        }

        var byteOrder: String?
        var frequency: UInt64?
        var packetContext: [DeclaredField] = []
        var stream: Stream?
        var streamCount = 0
    }

    init(events: [DeclaredEvent]) { self.events = events }
}

extension TraceMetadataEvents.Parser {
    /// The `trace`, `clock`, `stream` and `struct packet_context` blocks, read into ``lttng``; the caller is at
    /// the block's keyword. Returns false for anything else (left where it was).
    mutating func lttngBlock() throws(TraceReadError) -> Bool {
        guard case .word(let keyword)? = current else { return false }
        let next = position + 1 < tokens.count ? tokens[position + 1] : nil
        switch (keyword, next) {
        case ("trace", .symbol("{")?), ("clock", .symbol("{")?):
            position += 2
            while !skip("}") {
                guard case .word(let key)? = current else { try skipStatement(); continue }
                position += 1
                if skip("=") {
                    if key == "byte_order", case .word(let order)? = current { lttng.byteOrder = order }
                    if key == "freq", case .number(let number)? = current, number >= 0 { lttng.frequency = UInt64(number) }
                }
                try skipStatement()
            }
            _ = skip(";")
            return true
        case ("struct", .word("packet_context")?):
            position += 2
            lttng.packetContext = try structMembers()
            try skipStatement()
            return true
        case ("stream", .symbol("{")?):
            position += 2
            var stream = TraceMetadataEvents.LTTngFacts.Stream()
            while !skip("}") {
                var key: [String] = []
                while case .word(let word)? = current {
                    key.append(word)
                    position += 1
                    if !skip(".") { break }
                }
                if skip(":="), current == .word("struct") {
                    position += 1
                    switch key.joined(separator: ".") {
                    case "event.header":
                        if case .word(let name)? = current {
                            stream.header = name == "event_header_large" ? .large : name == "event_header_compact" ? .compact : nil
                        }
                    case "event.context":
                        stream.context = try structMembers()
                    default: break
                    }
                }
                try skipStatement()
            }
            _ = skip(";")
            lttng.stream = stream
            lttng.streamCount += 1
            return true
        default:
            return false
        }
    }
}

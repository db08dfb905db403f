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
    static let packetContextFields = ["timestamp_begin", "timestamp_end", "content_size", "packet_size", "packet_seq_num",
                                      "events_discarded", "cpu_id"]
    static let magic: UInt32 = 0xC1FC_1FC1

    init(metadata text: String, path: String) throws(TraceReadError) {
        var parser = TraceMetadataEvents.Parser(tokens: TraceMetadataEvents.Tokenizer.tokens(text), path: path)
        let declared = try parser.parseTopLevel(keepingStreams: true)
        let facts = parser.lttng
        guard facts.byteOrder == "le" else {
            throw TraceReadError(path: path, reason: "the trace's byte order is \(facts.byteOrder ?? "not given"); rlctl reads little-endian LTTng traces")
        }
        guard facts.packetContext == Self.packetContextFields else {
            throw TraceReadError(path: path, reason: "the packet context is not lttng-ust 2.13's (\(facts.packetContext.joined(separator: ", ")))")
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

extension TraceMetadataEvents {
    /// What the LTTng reader needs beyond the events: gathered by ``Parser/parseTopLevel(keepingStreams:)``.
    struct LTTngFacts {
        struct Stream {
            var header: LTTngPacketLayout.EventHeader?
            var context: [DeclaredField] = []
        }

        var byteOrder: String?
        var frequency: UInt64?
        var packetContext: [String] = []
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
            lttng.packetContext = try structMembers().map(\.name)
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

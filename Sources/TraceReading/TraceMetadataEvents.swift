import TraceModel

/// The event declarations of an embedded trace's `metadata`: the TSDL ``TraceSchema/metadata(uuid:clockOffsetNanoseconds:hostname:)``
/// writes, or a newer recorder's with more events or fields. Only what the recorder's format can hold is
/// understood (byte-aligned integers of 8 to 64 bits, enumerations over them, strings, sequences of such integers
/// whose length is an earlier integer field, as LTTng-UST and the recorder write them); a field of any other
/// type makes its event undecodable, which is an error only if such an event is met.
struct TraceMetadataEvents {
    enum DeclaredType: Equatable {
        case integer(bytes: Int, signed: Bool)
        case string
        /// A sequence of integers, as many as the event's field at index `length` (declared before it) says.
        case sequence(bytes: Int, signed: Bool, length: Int)
        /// What the declaration says, for the error message.
        case unsupported(String)
    }

    struct DeclaredField: Equatable {
        let name: String
        let type: DeclaredType
    }

    struct DeclaredEvent: Equatable {
        let id: Int
        /// Without the `runloop:` provider prefix.
        let name: String
        let fields: [DeclaredField]
        /// Why the event's payload cannot be walked (an event context, a field of an unknown type), if so.
        let problem: String?
    }

    let events: [DeclaredEvent]

    /// Parses `text`; a syntax this parser does not follow is an error naming `path` and what was expected.
    init(parsing text: String, path: String) throws(TraceReadError) {
        var parser = Parser(tokens: Tokenizer.tokens(text), path: path)
        events = try parser.parseTopLevel()
    }

    // ===== tokens =====

    enum Token: Equatable {
        case word(String)
        case number(Int64)
        case text(String)
        case symbol(String)
    }

    enum Tokenizer {
        static func tokens(_ text: String) -> [Token] {
            let bytes = Array(text.utf8)
            var tokens: [Token] = []
            var index = 0
            func isWord(_ byte: UInt8) -> Bool {
                (byte >= 97 && byte <= 122) || (byte >= 65 && byte <= 90) || (byte >= 48 && byte <= 57) || byte == 95
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 32 || byte == 9 || byte == 10 || byte == 13 {
                    index += 1
                } else if byte == 47, index + 1 < bytes.count, bytes[index + 1] == 42 {   // /* … */
                    index += 2
                    while index + 1 < bytes.count && !(bytes[index] == 42 && bytes[index + 1] == 47) { index += 1 }
                    index += 2
                } else if byte == 47, index + 1 < bytes.count, bytes[index + 1] == 47 {   // // …
                    while index < bytes.count && bytes[index] != 10 { index += 1 }
                } else if byte == 34 {   // "…"
                    var end = index + 1
                    while end < bytes.count && bytes[end] != 34 { end += bytes[end] == 92 ? 2 : 1 }
                    tokens.append(.text(String(decoding: bytes[(index + 1)..<min(end, bytes.count)], as: UTF8.self)))
                    index = end + 1
                } else if byte == 45 || (byte >= 48 && byte <= 57) {   // -12, 0x1F
                    var end = index + 1
                    while end < bytes.count && isWord(bytes[end]) { end += 1 }
                    let literal = String(decoding: bytes[index..<end], as: UTF8.self)
                    let number = literal.hasPrefix("0x") ? Int64(literal.dropFirst(2), radix: 16) : Int64(literal)
                    tokens.append(number.map { .number($0) } ?? .word(literal))
                    index = end
                } else if isWord(byte) {
                    var end = index + 1
                    while end < bytes.count && isWord(bytes[end]) { end += 1 }
                    tokens.append(.word(String(decoding: bytes[index..<end], as: UTF8.self)))
                    index = end
                } else if byte == 58, index + 1 < bytes.count, bytes[index + 1] == 61 {   // :=
                    tokens.append(.symbol(":="))
                    index += 2
                } else {
                    tokens.append(.symbol(String(UnicodeScalar(byte))))
                    index += 1
                }
            }
            return tokens
        }
    }

    // ===== declarations =====

    struct Parser {
        let tokens: [Token]
        let path: String
        var position = 0
        /// `typealias integer { … } := name;`, by name.
        var aliases: [String: DeclaredType] = [:]
        /// The blocks an LTTng trace's reader needs (``parseTopLevel(keepingStreams:)``).
        var lttng = LTTngFacts()

        init(tokens: [Token], path: String) {
            self.tokens = tokens
            self.path = path
        }

        var current: Token? { position < tokens.count ? tokens[position] : nil }

        func fail(_ expected: String) -> TraceReadError {
            let found: String
            switch current {
            case .word(let word)?: found = "`\(word)`"
            case .number(let number)?: found = "\(number)"
            case .text(let text)?: found = "\"\(text)\""
            case .symbol(let symbol)?: found = "`\(symbol)`"
            case nil: found = "the end"
            }
            return TraceReadError(path: path, reason: "cannot parse the metadata: expected \(expected), found \(found) (token \(position))")
        }

        mutating func expect(_ symbol: String) throws(TraceReadError) {
            guard current == .symbol(symbol) else { throw fail("`\(symbol)`") }
            position += 1
        }

        mutating func skip(_ symbol: String) -> Bool {
            guard current == .symbol(symbol) else { return false }
            position += 1
            return true
        }

        mutating func word() throws(TraceReadError) -> String {
            guard case .word(let word)? = current else { throw fail("a name") }
            position += 1
            return word
        }

        /// Skips a `{ … }` block (its opening brace is current), nested blocks included.
        mutating func skipBlock() throws(TraceReadError) {
            try expect("{")
            var depth = 1
            while depth > 0 {
                guard let token = current else { throw fail("`}`") }
                position += 1
                if token == .symbol("{") { depth += 1 } else if token == .symbol("}") { depth -= 1 }
            }
        }

        /// Skips to just after the next `;` at this nesting level.
        mutating func skipStatement() throws(TraceReadError) {
            while let token = current {
                if token == .symbol("{") { try skipBlock(); continue }
                position += 1
                if token == .symbol(";") { return }
            }
            throw fail("`;`")
        }

        /// The events; with `keepingStreams`, also the trace, clock and stream blocks into ``lttng``.
        mutating func parseTopLevel(keepingStreams: Bool = false) throws(TraceReadError) -> [DeclaredEvent] {
            var events: [DeclaredEvent] = []
            while let token = current {
                switch token {
                case .word("typealias"):
                    position += 1
                    let type = try typeSpecifier()
                    try expect(":=")
                    var name: [String] = []
                    while case .word(let word)? = current { name.append(word); position += 1 }
                    try expect(";")
                    aliases[name.joined(separator: " ")] = type
                case .word("event"):
                    position += 1
                    events.append(try event())
                case .symbol(";"):
                    position += 1
                default:
                    if keepingStreams, try lttngBlock() { continue }
                    try skipStatement()   // trace, env, clock, stream, callsite, top-level enums and structs
                }
            }
            return events
        }

        mutating func event() throws(TraceReadError) -> DeclaredEvent {
            try expect("{")
            var name: String?, id: Int?, fields: [DeclaredField]?, problem: String?
            while !skip("}") {
                let key = try word()
                if skip("=") {
                    switch current {
                    case .text(let text)? where key == "name":
                        name = text.hasPrefix("runloop:") ? String(text.dropFirst("runloop:".count)) : text
                    case .number(let number)? where key == "id":
                        guard (0...255).contains(number) else { throw fail("an event id from 0 to 255 (the header's id is one byte)") }
                        id = Int(number)
                    default: break
                    }
                    try skipStatement()
                } else if skip(":=") {
                    if key == "fields" {
                        guard current == .word("struct") else { throw fail("`struct` for the event's fields") }
                        position += 1
                        fields = try structMembers()
                        try skipStatement()   // `align(…)` and the `;`
                    } else {
                        problem = "its metadata declares an event \(key), which the recorder's format does not have"
                        try skipStatement()
                    }
                } else {
                    throw fail("`=` or `:=` after `\(key)`")
                }
            }
            _ = skip(";")
            guard let name else { throw fail("a name for the event") }
            guard let id else { throw TraceReadError(path: path, reason: "cannot parse the metadata: event `\(name)` has no id") }
            let declared = fields ?? []
            if problem == nil, let field = declared.first(where: { if case .unsupported = $0.type { return true }; return false }),
               case .unsupported(let what) = field.type {
                problem = "field `\(field.name)` has a type this rlctl cannot read (\(what))"
            }
            return DeclaredEvent(id: id, name: name, fields: declared, problem: problem)
        }

        mutating func structMembers() throws(TraceReadError) -> [DeclaredField] {
            try expect("{")
            var members: [DeclaredField] = []
            while !skip("}") {
                var type = try typeSpecifier()
                let name = try word()
                if skip("[") {
                    // `name[length]`: a sequence whose length is an earlier integer member. Fixed-size arrays and
                    // sequences of other types are not in the formats rlctl reads.
                    if case .word(let lengthName)? = current, case .integer(let bytes, let signed) = type,
                       let length = members.lastIndex(where: { $0.name == lengthName }),
                       case .integer = members[length].type {
                        position += 1
                        type = .sequence(bytes: bytes, signed: signed, length: length)
                    } else {
                        type = .unsupported("an array or sequence")
                    }
                    while current != .symbol(";") && current != nil { position += 1 }
                }
                try expect(";")
                members.append(DeclaredField(name: name, type: type))
            }
            return members
        }

        mutating func typeSpecifier() throws(TraceReadError) -> DeclaredType {
            let keyword = try word()
            switch keyword {
            case "integer":
                return try integerAttributes()
            case "string":
                if current == .symbol("{") { try skipBlock() }
                return .string
            case "enum":
                if case .word? = current { position += 1 }   // a named enum
                try expect(":")
                let container = try typeSpecifier()
                try skipBlock()
                return container
            case "struct", "variant", "floating_point":
                if case .word? = current { position += 1 }
                if current == .symbol("<") { while !skip(">") { guard current != nil else { throw fail("`>`") }; position += 1 } }
                if current == .symbol("{") { try skipBlock() }
                return .unsupported(keyword)
            default:
                // An alias, maybe of several words (`unsigned long`): the longest one declared.
                var words = [keyword]
                while case .word(let next)? = current, aliases[(words + [next]).joined(separator: " ")] != nil || isTypeWord(next) {
                    words.append(next)
                    position += 1
                }
                let name = words.joined(separator: " ")
                return aliases[name] ?? .unsupported("type `\(name)`, not declared in the metadata")
            }
        }

        private func isTypeWord(_ word: String) -> Bool {
            ["unsigned", "signed", "long", "short", "int", "char"].contains(word)
        }

        mutating func integerAttributes() throws(TraceReadError) -> DeclaredType {
            try expect("{")
            var size: Int64?, signed = false, align: Int64 = 8
            while !skip("}") {
                let key = try word()
                try expect("=")
                switch (key, current) {
                case ("size", .number(let number)?): size = number
                case ("align", .number(let number)?): align = number
                case ("signed", .word(let word)?): signed = word == "true" || word == "1"
                case ("signed", .number(let number)?): signed = number != 0
                default: break
                }
                try skipStatement()
            }
            guard let size, [8, 16, 32, 64].contains(size), align == 8 || align == 1 else {   // the format has no padding
                return .unsupported("an integer of \(size.map(String.init) ?? "no") bits aligned on \(align) bits")
            }
            return .integer(bytes: Int(size / 8), signed: signed)
        }
    }
}

import Foundation
import Yams

/// A workload file's values as written, with the line of each: JSONDecoder and YAMLDecoder keep the last of two
/// equal keys and take an empty or null value for a missing key (its default), both without a word.
indirect enum WrittenValue {
    case mapping([(key: String, line: Int, value: WrittenValue)])
    case sequence([(line: Int, value: WrittenValue)])
    case scalar(isEmpty: Bool)

    /// The first duplicate key or empty value, as `file:line: what, where`; nil when there is none.
    func firstAmbiguity(file: String) -> String? {
        firstAmbiguity(file: file, path: [])
    }

    private func firstAmbiguity(file: String, path: [String]) -> String? {
        switch self {
        case .scalar:
            return nil
        case .mapping(let entries):
            var firstLines: [String: Int] = [:]
            for entry in entries {
                if let first = firstLines[entry.key] {
                    return "\(file):\(entry.line): duplicate key \"\(entry.key)\" \(Self.place(path)) (first on line \(first))"
                }
                firstLines[entry.key] = entry.line
                if case .scalar(isEmpty: true) = entry.value {
                    return "\(file):\(entry.line): empty value for \"\(entry.key)\" \(Self.place(path)) (write a value, or leave the key out for its default)"
                }
                if let found = entry.value.firstAmbiguity(file: file, path: path + [entry.key]) { return found }
            }
            return nil
        case .sequence(let items):
            for (index, item) in items.enumerated() {
                if case .scalar(isEmpty: true) = item.value {
                    let what = path == ["elements"] ? "element \(index + 1)" : "item \(index + 1) of \(path.last ?? "the list") \(Self.place(path.dropLast()))"
                    return "\(file):\(item.line): \(what) is empty"
                }
                if let found = item.value.firstAmbiguity(file: file, path: path + ["[\(index)]"]) { return found }
            }
            return nil
        }
    }

    /// The line of the deepest part of `codingPath` written in the file: where a decoding error points.
    func line(at codingPath: [any CodingKey]) -> Int? {
        guard let first = codingPath.first else { return nil }
        let found: (line: Int, value: WrittenValue)?
        switch self {
        case .mapping(let entries): found = entries.last { $0.key == first.stringValue }.map { ($0.line, $0.value) }
        case .sequence(let items): found = first.intValue.flatMap { items.indices.contains($0) ? items[$0] : nil }
        case .scalar: found = nil
        }
        guard let found else { return nil }
        return found.value.line(at: Array(codingPath.dropFirst())) ?? found.line
    }

    /// Where a value is, in a workload's words: `in element 2` rather than `elements[1]`.
    private static func place(_ path: some Collection<String>) -> String {
        let components = Array(path)
        if components.isEmpty { return "in the workload" }
        if components.count == 2, components[0] == "elements", components[1].hasPrefix("[") {
            return "in element \((Int(components[1].dropFirst().dropLast()) ?? 0) + 1)"
        }
        return "at " + components.reduce("") { $0.isEmpty || $1.hasPrefix("[") ? $0 + $1 : $0 + "." + $1 }
    }
}

extension WrittenValue {
    /// The YAML document's tree (Yams' `compose`); nil for an empty document.
    /// - Throws: a one-line `file:line: not valid YAML: …` when it is not YAML.
    init?(yaml: String, file: String) throws(Failure) {
        let composed: Node?
        do { composed = try Yams.compose(yaml: yaml) } catch {
            throw Failure.input(Self.describe(error, in: yaml, file: file))
        }
        guard let composed else { return nil }
        self.init(composed)
    }

    private static func describe(_ error: any Error, in yaml: String, file: String) -> String {
        switch error as? YamlError {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            let lines = yaml.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
            let line = mark.line <= lines.count ? lines[mark.line - 1] : ""
            let atTab = line.unicodeScalars.dropFirst(mark.column - 1).first == "\t"
            return "\(file):\(mark.line): not valid YAML: \(atTab ? "a tab, where YAML takes spaces only" : problem)"
        default:
            return "\(file): not valid YAML: \(String(describing: error).split(separator: "\n").first ?? "")"
        }
    }

    private init(_ node: Node) {
        switch node {
        case .scalar(let scalar):
            // Yams decodes these as nil whatever their quotes, so `count: ''` and `count: "~"` took the default.
            self = .scalar(isEmpty: NSNull.construct(from: scalar) != nil)
        case .mapping(let mapping):
            self = .mapping(mapping.map { pair in
                (key: pair.key.string ?? "\(pair.key)", line: pair.key.mark?.line ?? 0, value: WrittenValue(pair.value))
            })
        case .sequence(let sequence):
            self = .sequence(sequence.map { (line: $0.mark?.line ?? 0, value: WrittenValue($0)) })
        }
    }
}

extension WrittenValue {
    /// The JSON document's tree. JSONSerialization keeps neither lines nor duplicate keys, hence this reader.
    /// - Throws: a one-line `file:line: not valid JSON` when it is not JSON (JSONDecoder says which, not where;
    ///   it also takes a trailing comma, which JSON does not).
    init(json: Data, file: String) throws(Failure) {
        var reader = JSONReader(bytes: Array(json))
        guard let value = reader.document() else { throw Failure.input("\(file):\(reader.line): not valid JSON") }
        self = value
    }
}

/// Just enough of JSON (RFC 8259) to see its structure, keys and lines.
private struct JSONReader {
    let bytes: [UInt8]
    var position = 0
    var line = 1

    init(bytes: [UInt8]) {
        self.bytes = bytes
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
    }

    mutating func document() -> WrittenValue? {
        guard let value = value() else { return nil }
        skipSpace()
        return position == bytes.count ? value : nil
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    /// Counts `\n`, `\r\n` and a lone `\r` as one line each, as the budget parser and libyaml do.
    private mutating func skipSpace() {
        while let byte = current {
            switch byte {
            case UInt8(ascii: "\n"): line += 1
            case UInt8(ascii: "\r"): if position + 1 >= bytes.count || bytes[position + 1] != UInt8(ascii: "\n") { line += 1 }
            case UInt8(ascii: " "), UInt8(ascii: "\t"): break
            default: return
            }
            position += 1
        }
    }

    private mutating func value() -> WrittenValue? {
        skipSpace()
        guard let byte = current else { return nil }
        switch byte {
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return string().map { .scalar(isEmpty: $0.isEmpty) }
        case UInt8(ascii: "n"): return literal("null") ? .scalar(isEmpty: true) : nil
        case UInt8(ascii: "t"): return literal("true") ? .scalar(isEmpty: false) : nil
        case UInt8(ascii: "f"): return literal("false") ? .scalar(isEmpty: false) : nil
        default:
            let start = position
            while let digit = current, "+-.0123456789eE".utf8.contains(digit) { position += 1 }
            return position > start ? .scalar(isEmpty: false) : nil
        }
    }

    private mutating func literal(_ word: String) -> Bool {
        guard bytes[position...].starts(with: word.utf8) else { return false }
        position += word.utf8.count
        return true
    }

    private mutating func object() -> WrittenValue? {
        members(closing: UInt8(ascii: "}")) { reader -> (key: String, line: Int, value: WrittenValue)? in
            let keyLine = reader.line
            guard reader.current == UInt8(ascii: "\""), let key = reader.string() else { return nil }
            reader.skipSpace()
            guard reader.current == UInt8(ascii: ":") else { return nil }
            reader.position += 1
            return reader.value().map { (key: key, line: keyLine, value: $0) }
        }.map { .mapping($0) }
    }

    private mutating func array() -> WrittenValue? {
        members(closing: UInt8(ascii: "]")) { reader -> (line: Int, value: WrittenValue)? in
            let itemLine = reader.line
            return reader.value().map { (line: itemLine, value: $0) }
        }.map { .sequence($0) }
    }

    /// An object's or an array's members, from its opening bracket to `closing`; nil unless well formed (JSON has
    /// no trailing comma).
    private mutating func members<Member>(closing: UInt8, _ member: (inout JSONReader) -> Member?) -> [Member]? {
        position += 1
        var members: [Member] = []
        skipSpace()
        if current == closing {
            position += 1
            return members
        }
        while true {
            skipSpace()
            guard let next = member(&self) else { return nil }
            members.append(next)
            skipSpace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case closing: position += 1; return members
            default: return nil
            }
        }
    }

    /// A string with its escapes decoded, so that `"co\u0075nt"` is seen as the key `count`, as the decoder sees it.
    private mutating func string() -> String? {
        position += 1
        var units: [UInt16] = []
        while let byte = current {
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: units, as: UTF16.self)
            case UInt8(ascii: "\\"):
                guard let escaped = current else { return nil }
                position += 1
                switch escaped {
                case UInt8(ascii: "u"):
                    guard position + 4 <= bytes.count,
                          let unit = UInt16(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16) else { return nil }
                    units.append(unit)
                    position += 4
                case UInt8(ascii: "b"): units.append(0x08)
                case UInt8(ascii: "f"): units.append(0x0C)
                case UInt8(ascii: "n"): units.append(0x0A)
                case UInt8(ascii: "r"): units.append(0x0D)
                case UInt8(ascii: "t"): units.append(0x09)
                default: units.append(UInt16(escaped))
                }
            case 0..<0x20:
                return nil
            default:
                // A multi-byte UTF-8 sequence: its bytes up to the next ASCII one, decoded together.
                let start = position - 1
                while let next = current, next >= 0x80 { position += 1 }
                units.append(contentsOf: String(decoding: bytes[start..<position], as: UTF8.self).utf16)
            }
        }
        return nil
    }
}

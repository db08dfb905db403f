/// A duration as users write it: `250us`, `1.5ms`, `2s` (units ns, us, µs, ms, s, m). In files a bare number
/// is seconds.
public struct DurationValue: Codable, Sendable, Equatable, Comparable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    public static let zero = DurationValue(nanoseconds: 0)
    public static func milliseconds(_ value: Int64) -> DurationValue { DurationValue(nanoseconds: value * 1_000_000) }
    public static func seconds(_ value: Double) -> DurationValue { DurationValue(nanoseconds: Int64(value * 1e9)) }

    public var duration: Duration { .nanoseconds(nanoseconds) }

    /// Parses `text`; nil when it is not a number followed by a unit.
    public init?(parsing text: String) {
        let units: [(String, Double)] = [("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9)]
        let trimmed = text.trimmingCharacters(in: " ")
        guard let (suffix, scale) = units.first(where: { trimmed.hasSuffix($0.0) && Double(trimmed.dropLast($0.0.count)) != nil }),
              let value = Double(trimmed.dropLast(suffix.count)), value.isFinite else { return nil }
        let ns = value * scale
        guard abs(ns) < 9.2e18 else { return nil }
        nanoseconds = Int64(ns.rounded())
    }

    /// Parses a command-line value, saying what is wrong with a bad one (a missing unit, a negative value).
    public static func parseArgument(_ text: String) throws(WorkloadError) -> DurationValue {
        let trimmed = text.trimmingCharacters(in: " ")
        if let number = Double(trimmed), number.isFinite {
            throw WorkloadError("\"\(text)\" has no unit: write \(trimmed)s, \(trimmed)ms, \(trimmed)us or \(trimmed)ns")
        }
        guard let value = DurationValue(parsing: trimmed) else {
            throw WorkloadError("\"\(text)\" is not a duration: write a number and a unit (500us, 2ms, 1.5s)")
        }
        guard value.nanoseconds >= 0 else { throw WorkloadError("\"\(text)\" is negative: a duration must be 0 or more") }
        return value
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let seconds = try? container.decode(Double.self) {
            guard seconds.isFinite, abs(seconds) < 9e9 else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "a duration must be a finite number of seconds")
            }
            nanoseconds = Int64(seconds * 1e9)
            return
        }
        let text = try container.decode(String.self)
        guard let parsed = DurationValue(parsing: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(text)\" is not a duration (write a number and a unit: 500us, 2ms, 1.5s)")
        }
        self = parsed
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public var description: String {
        let ns = nanoseconds
        if ns == 0 { return "0s" }
        if ns % 1_000_000_000 == 0 { return "\(ns / 1_000_000_000)s" }
        if ns % 1_000_000 == 0 { return "\(ns / 1_000_000)ms" }
        if ns % 1_000 == 0 { return "\(ns / 1_000)us" }
        return "\(ns)ns"
    }

    public static func < (lhs: DurationValue, rhs: DurationValue) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}

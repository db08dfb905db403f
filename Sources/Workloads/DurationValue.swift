import TraceModel

/// A duration as users write it: `250us`, `1.5ms`, `2s`, `1m` (``DurationText``'s rule, also in files).
public struct DurationValue: Codable, Sendable, Equatable, Comparable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    public static let zero = DurationValue(nanoseconds: 0)
    public static func milliseconds(_ value: Int64) -> DurationValue { DurationValue(nanoseconds: value * 1_000_000) }
    public static func seconds(_ value: Double) -> DurationValue { DurationValue(nanoseconds: Int64(value * 1e9)) }

    public var duration: Duration { .nanoseconds(nanoseconds) }

    /// Parses `text` with the one duration rule (``DurationText``): a number and a unit, `0` alone.
    public init(parsing text: String) throws(DurationTextError) {
        nanoseconds = try DurationText.nanoseconds(text)
    }

    /// In workload files a duration is written as on the command line (`interval: 2ms`). A bare number is refused
    /// as there, `0` excepted: YAML and JSON give it to us as a number, not as text.
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text: String
        if let number = try? container.decode(Double.self) {
            text = number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        } else {
            text = try container.decode(String.self)
        }
        do {
            self = try DurationValue(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
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

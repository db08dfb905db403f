/// Durations as people write them, the one parser behind command-line flags, workload files and budgets.
///
/// A duration is a number and a unit: `ns`, `us` (or `µs`), `ms`, `s` or `m` (minutes), as in `500us`, `1.5ms`,
/// `2s`, `1m`. A number without a unit is refused, because `3` could mean 3 s or 3 ms and a budget or a workload
/// that guessed wrong would pass or run silently wrong; `0` is the exception, the same in every unit.
/// Negative durations and ones beyond what nanoseconds in an Int64 hold (about 292 years) are refused too.
public enum DurationText {
    /// The units, longest spelling first so that `ms` is never read as `m`.
    static let units: [(suffix: String, nanoseconds: Double)] = [
        ("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9),
    ]

    /// `text` (surrounding spaces ignored) in nanoseconds.
    /// - Throws: ``DurationTextError``, whose description is a one-line message naming `text`.
    public static func nanoseconds(_ text: String) throws(DurationTextError) -> Int64 {
        let trimmed = text.trimmingSpaces
        let number = trimmed.prefix { !isUnitCharacter($0) }
        let unit = trimmed[number.endIndex...]
        guard let value = parseNumber(number) else { throw DurationTextError(.notADuration, text: text) }
        guard !unit.isEmpty else {
            if value == 0 { return 0 }
            throw DurationTextError(.noUnit, text: text)
        }
        guard let scale = units.first(where: { $0.suffix == unit })?.nanoseconds else {
            throw DurationTextError(.notADuration, text: text)
        }
        let nanoseconds = (value * scale).rounded()
        if nanoseconds < 0 { throw DurationTextError(.negative, text: text) }
        // Int64.max is 9.22e18; the largest Double below it converts exactly.
        guard nanoseconds < 9.223_372_036_854_775e18 else { throw DurationTextError(.outOfRange, text: text) }
        return Int64(nanoseconds)
    }

    private static func isUnitCharacter(_ character: Character) -> Bool {
        character == "n" || character == "u" || character == "µ" || character == "m" || character == "s"
    }

    /// A decimal number (`2`, `-1.5`, `.5`, `1e3`): not Double's whole grammar, which also takes `inf`, `nan` and
    /// hexadecimal.
    private static func parseNumber(_ text: Substring) -> Double? {
        guard text.contains(where: \.isASCIIDigit),
              text.allSatisfy({ $0.isASCIIDigit || $0 == "." || $0 == "-" || $0 == "+" || $0 == "e" || $0 == "E" }),
              let value = Double(text), value.isFinite else { return nil }
        return value
    }
}

/// Why a text is not a duration.
public struct DurationTextError: Error, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A number alone (`3`): its unit is ambiguous.
        case noUnit
        /// Not a number followed by a known unit (`soon`, `3h`, `ms`).
        case notADuration
        /// Below zero.
        case negative
        /// More nanoseconds than an Int64 holds.
        case outOfRange
    }

    public let kind: Kind
    /// What the user wrote, spaces trimmed.
    public let text: String

    init(_ kind: Kind, text: String) {
        self.kind = kind
        self.text = text.trimmingSpaces
    }

    public var description: String {
        switch kind {
        case .noUnit: return "\"\(text)\" has no unit: write \(text)s, \(text)ms, \(text)us or \(text)ns"
        case .notADuration: return "\"\(text)\" is not a duration: write a number and a unit (500us, 2ms, 1.5s)"
        case .negative: return "\"\(text)\" is negative: a duration must be 0 or more"
        case .outOfRange: return "\"\(text)\" is too long: a duration must be under 292 years"
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isWholeNumber }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}

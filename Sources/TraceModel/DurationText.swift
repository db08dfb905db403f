/// Durations as people write them, the one parser behind command-line flags, workload files and budgets.
///
/// A duration is a number and a unit: `ns`, `us` (or `µs`), `ms`, `s` or `m` (minutes), as in `500us`, `1.5ms`,
/// `2s`, `1m`. A number without a unit is refused, because `3` could mean 3 s or 3 ms and a budget or a workload
/// that guessed wrong would pass or run silently wrong; `0` is the exception, the same in every unit.
/// Negative durations and ones beyond what nanoseconds in an Int64 hold (about 292 years) are refused too, and so
/// is a fraction of a nanosecond (`0.5ns`, `1.0005us`): rounding it would run or check something other than what
/// was written. The arithmetic is decimal and exact, so `1.1us` is 1100 ns and `9007199254740993ns` keeps its last
/// digit.
public enum DurationText {
    /// The units, longest spelling first so that `ms` is never read as `m`.
    static let units: [(suffix: String, nanoseconds: Int64)] = [
        ("ns", 1), ("us", 1_000), ("µs", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000),
    ]

    /// `text` (surrounding spaces ignored) in nanoseconds.
    /// - Throws: ``DurationTextError``, whose description is a one-line message naming `text`.
    public static func nanoseconds(_ text: String) throws(DurationTextError) -> Int64 {
        let trimmed = text.trimmingSpaces
        let number = trimmed.prefix { !isUnitCharacter($0) }
        let unit = trimmed[number.endIndex...]
        guard let decimal = DecimalNumber(number) else { throw DurationTextError(.notADuration, text: text) }
        guard !unit.isEmpty else {
            if decimal.isZero { return 0 }
            throw DurationTextError(.noUnit, text: text)
        }
        guard let scale = units.first(where: { $0.suffix == unit })?.nanoseconds else {
            throw DurationTextError(.notADuration, text: text)
        }
        if decimal.isZero { return 0 }
        if decimal.isNegative { throw DurationTextError(.negative, text: text) }
        switch decimal.times(scale).wholeNumber {
        case .whole(let nanoseconds): return nanoseconds
        case .fraction: throw DurationTextError(.fractionOfANanosecond, text: text)
        case .tooLarge: throw DurationTextError(.outOfRange, text: text)
        }
    }

    private static func isUnitCharacter(_ character: Character) -> Bool {
        character == "n" || character == "u" || character == "µ" || character == "m" || character == "s"
    }

    /// A number as written, kept in decimal digits so that no binary rounding decides whether a fraction of a
    /// nanosecond remains.
    private struct DecimalNumber {
        /// Significant digits, no leading or trailing zeros; empty for zero.
        var digits: [UInt8]
        /// The value is `digits` × 10^`exponent`.
        var exponent: Int
        var isNegative: Bool

        var isZero: Bool { digits.isEmpty }

        /// A decimal number (`2`, `-1.5`, `.5`, `1e3`, `5.`): not Double's whole grammar, which also takes `inf`,
        /// `nan` and hexadecimal.
        init?(_ text: Substring) {
            var rest = text
            isNegative = rest.first == "-"
            if rest.first == "-" || rest.first == "+" { rest = rest.dropFirst() }
            let mantissa = rest.prefix { $0 != "e" && $0 != "E" }
            let integerPart = mantissa.prefix { $0 != "." }
            let fractionPart = mantissa.dropFirst(integerPart.count + 1)
            guard integerPart.allSatisfy(\.isASCIIDigit), fractionPart.allSatisfy(\.isASCIIDigit),
                  !(integerPart + fractionPart).isEmpty else { return nil }
            var exponentValue = 0
            if mantissa.endIndex < rest.endIndex {
                let exponentText = rest[rest.index(after: mantissa.endIndex)...]
                let exponentDigits = exponentText.first == "-" || exponentText.first == "+" ? exponentText.dropFirst() : exponentText
                guard !exponentDigits.isEmpty, exponentDigits.allSatisfy(\.isASCIIDigit) else { return nil }
                // Beyond ±100000 every exponent means the same: zero, a fraction or too long.
                let magnitude = exponentDigits.count > 6 ? 100_000 : min(Int(exponentDigits)!, 100_000)
                exponentValue = exponentText.first == "-" ? -magnitude : magnitude
            }
            var all = (integerPart + fractionPart).map { $0.asciiValue! - UInt8(ascii: "0") }
            exponent = exponentValue - fractionPart.count
            all = Array(all.drop { $0 == 0 })
            while all.last == 0 {
                all.removeLast()
                exponent += 1
            }
            digits = all
        }

        /// This number times `factor` (positive).
        func times(_ factor: Int64) -> DecimalNumber {
            var product = self
            var carry = 0 as Int64
            var reversed: [UInt8] = []
            for digit in digits.reversed() {
                let (value, overflow) = (Int64(digit) * factor).addingReportingOverflow(carry)
                precondition(!overflow, "a unit's factor is far below Int64.max / 10")
                reversed.append(UInt8(value % 10))
                carry = value / 10
            }
            while carry > 0 {
                reversed.append(UInt8(carry % 10))
                carry /= 10
            }
            product.digits = Array(reversed.drop { $0 == 0 }.reversed())
            product.exponent += reversed.prefix { $0 == 0 }.count
            return product
        }

        enum WholeNumber { case whole(Int64), fraction, tooLarge }

        /// As an Int64 when it is a whole number that fits.
        var wholeNumber: WholeNumber {
            guard exponent >= 0 else { return .fraction }
            guard digits.count + exponent <= 19 else { return .tooLarge }
            var value = 0 as Int64
            for digit in digits + Array(repeating: 0, count: exponent) {
                let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflowedAgain) = shifted.addingReportingOverflow(Int64(digit))
                if overflowed || overflowedAgain { return .tooLarge }
                value = sum
            }
            return .whole(value)
        }
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
        /// Not a whole number of nanoseconds (`0.5ns`).
        case fractionOfANanosecond
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
        case .fractionOfANanosecond: return "\"\(text)\" has a fraction of a nanosecond: a duration is a whole number of nanoseconds"
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

import TraceModel
import Foundation

/// A CI budget: one rule per line, `metric OP limit`, e.g. `timer.lateness.p99 <= 2ms`, `loop.utilization <= 0.8`,
/// `stalls.count == 0`, `trace.lost == 0`. `#` starts a comment. Durations are written as everywhere in rlctl
/// (``DurationText``: `500us`, `2ms`, `1m`; a number alone is refused); ratios
/// take `0.8` or `80%`; counts are whole numbers. Lines end in `\n`, `\r\n` or a lone `\r`, tabs are spaces and a
/// leading byte-order mark is ignored, so an editor's settings never change which rules a budget holds.
public struct Budget: Sendable {
    public struct Rule: Sendable, Equatable {
        public var metric: String
        public var comparison: Comparison
        /// In the metric's base unit (ns for durations).
        public var limit: Double
        public var text: String
        public var line: Int
    }

    public enum Comparison: String, Sendable, CaseIterable {
        case lessOrEqual = "<=", less = "<", greaterOrEqual = ">=", greater = ">", equal = "==", notEqual = "!="

        public func holds(_ value: Double, _ limit: Double) -> Bool {
            switch self {
            case .lessOrEqual: return value <= limit
            case .less: return value < limit
            case .greaterOrEqual: return value >= limit
            case .greater: return value > limit
            case .equal: return value == limit
            case .notEqual: return value != limit
            }
        }
    }

    public var rules: [Rule]

    /// Parses a budget; errors name the file and line.
    public init(text: String, file: String) throws(BudgetError) {
        rules = []
        // "\r\n" is one Character in Swift: splitting on "\n" alone kept a CRLF budget as one line, and its first
        // comment hid every later rule.
        for (index, rawLine) in text.droppingByteOrderMark.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }).enumerated() {
            let at = "\(file):\(index + 1)"
            // Another editor may show a form feed, a vertical tab or U+2028 as a line break, and the rule after it
            // as a rule of its own, not part of a comment.
            if let odd = rawLine.unicodeScalars.first(where: Self.isAmbiguous) {
                throw BudgetError("\(at): unexpected character U+\(String(odd.value, radix: 16, uppercase: true).leftPadded(to: 4)) (a line ends in \\n, \\r\\n or \\r)")
            }
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            // A tab is a space, also in the rule's text that reports quote (a tab there misaligns their columns).
            let trimmed = line.replacingOccurrences(of: "\t", with: " ").trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            // metric, operator, limit: the operator is every comparison character between the two, so that a
            // mistyped one (`=<`) is said to be the operator, not read as part of the metric's name.
            let operatorCharacters: Set<Character> = ["<", ">", "=", "!"]
            guard let operatorStart = trimmed.firstIndex(where: { operatorCharacters.contains($0) }) else {
                throw BudgetError("\(at): expected `metric <= limit` (or <, >=, >, ==, !=), got \"\(trimmed)\"")
            }
            let operatorEnd = trimmed[operatorStart...].firstIndex { !operatorCharacters.contains($0) } ?? trimmed.endIndex
            let operatorText = String(trimmed[operatorStart ..< operatorEnd])
            let name = trimmed[..<operatorStart].trimmingCharacters(in: .whitespaces)
            let limitText = trimmed[operatorEnd...].trimmingCharacters(in: .whitespaces)
            guard let comparison = Comparison(rawValue: operatorText) else {
                throw BudgetError("\(at): unknown comparison \"\(operatorText)\" (use <=, <, >=, >, == or !=)")
            }
            guard let metric = Metric.named(name) else {
                throw BudgetError("\(at): unknown metric \"\(name)\"" + Metric.suggestion(for: name) + " (rlctl check --list-metrics lists them)")
            }
            let limit = try Self.parseLimit(limitText, for: metric, at: at)
            try Self.checkPossible(metric: metric, comparison: comparison, limit: limit, text: limitText, at: at)
            rules.append(Rule(metric: name, comparison: comparison, limit: limit, text: trimmed, line: index + 1))
        }
        guard !rules.isEmpty else { throw BudgetError("\(file): the budget has no rules") }
    }

    private static func isAmbiguous(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control: return scalar != "\t"
        case .lineSeparator, .paragraphSeparator: return true
        default: return scalar == "\u{FEFF}"
        }
    }

    static func parseLimit(_ text: String, for metric: Metric.Definition, at: String) throws(BudgetError) -> Double {
        switch metric.unit {
        case .duration, .rate:
            let body = metric.unit == .rate && text.hasSuffix("/s") ? String(text.dropLast(2)) : text
            do {
                return Double(try DurationText.nanoseconds(body))
            } catch {
                switch error.kind {
                case .noUnit:
                    throw BudgetError("\(at): the limit \"\(text)\" for \(metric.name) has no unit (write e.g. \(body)ms or \(body)us)")
                case .negative:
                    throw BudgetError("\(at): impossible limit \(text): \(metric.name) is \(metric.unit == .rate ? "a magnitude, never" : "never") negative")
                case .notADuration, .outOfRange, .fractionOfANanosecond:
                    throw BudgetError("\(at): \(error.description)")
                }
            }
        case .ratio:
            if text.hasSuffix("%"), let percent = plainNumber(String(text.dropLast())) { return percent / 100 }
            guard let value = plainNumber(text) else { throw BudgetError("\(at): \"\(text)\" is not a ratio (write 0.8 or 80%)") }
            return value
        case .count:
            guard let value = plainNumber(text), value == value.rounded() else {
                throw BudgetError("\(at): \"\(text)\" is not a whole number (\(metric.name) is a count)")
            }
            // Above 2^53 a Double no longer holds every whole number: the limit compared would not be the one written.
            guard abs(value) <= Self.largestExactCount else {
                throw BudgetError("\(at): the limit \(text) for \(metric.name) is out of range (a count limit is at most \(UInt64(Self.largestExactCount)))")
            }
            return value
        }
    }

    /// Rejects limits no measurement could meet or fail (ratios outside 0…1, negative counts, `< 0`); a negative
    /// duration never gets here (``parseLimit`` refuses it).
    static func checkPossible(metric: Metric.Definition, comparison: Comparison, limit: Double, text: String, at: String) throws(BudgetError) {
        switch metric.unit {
        case .duration, .count:
            if limit < 0 { throw BudgetError("\(at): impossible limit \(text): \(metric.name) is never negative") }
            if limit == 0 && comparison == .less { throw BudgetError("\(at): impossible rule: \(metric.name) < 0 can never hold") }
        case .ratio:
            if limit < 0 || limit > 1 { throw BudgetError("\(at): impossible limit \(text): \(metric.name) is between 0 and 1") }
        case .rate:
            break
        }
    }

    static let largestExactCount = 9_007_199_254_740_992.0

    /// A number written out in decimal (`12`, `0.8`, `-3`), nothing else: `Double(_:)` also takes `0x10`, `1e-999`
    /// (read as 0), `inf` and `nan`, which in a gate would compare against something other than what was meant.
    static func plainNumber(_ text: String) -> Double? {
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        guard !digits.isEmpty, parts.count <= 2, parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              parts.contains(where: { !$0.isEmpty }) else { return nil }
        return Double(text)
    }

    /// The metrics that measure how incomplete a trace is. A budget allows a kind of incompleteness only with a
    /// rule on its metrics (`trace.lost <= 100`, `trace.runs_incomplete <= 1`) that holds.
    public static let lossMetrics = ["trace.lost", "trace.packets_lost"]
    public static let runMetrics = ["trace.runs_incomplete"]
    /// Kernel records lost make only the kernel view's figures incomplete: a budget with `kernel.*` rules allows
    /// that only with a rule on this metric (`kernel.lost <= 10`) that holds.
    public static let kernelLossMetric = "kernel.lost"
    /// A recording cut off by its process's death lost an unknown number of events: only a rule on this metric
    /// (`trace.cut_off <= 1`) lets such a trace pass.
    public static let cutOffMetric = "trace.cut_off"
}

public struct BudgetError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

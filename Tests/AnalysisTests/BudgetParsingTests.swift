@testable import Analysis
import Testing

/// A budget means the same rules whatever editor wrote it; what could be read two ways is refused, naming its line.
@Suite struct BudgetParsingTests {
    private static let accepted = "trace.lost == 0 # x\nloop.utilization <= 1%\n\ntimer.lateness.p99 <= 2ms\n"

    private func rules(_ text: String) throws -> [Budget.Rule] {
        try Budget(text: text, file: "b").rules
    }

    @Test func theAcceptedFormHasThreeRules() throws {
        let parsed = try rules(Self.accepted)
        #expect(parsed.map(\.text) == ["trace.lost == 0", "loop.utilization <= 1%", "timer.lateness.p99 <= 2ms"])
        #expect(parsed.map(\.line) == [1, 2, 4])
        #expect(parsed.map(\.limit) == [0, 0.01, 2_000_000])
    }

    /// With `\r\n` the comment on the first line swallowed every later rule: one rule, exit 0 from a failing trace.
    @Test(arguments: ["\r\n", "\r"])
    func everyLineEndingGivesTheSameRules(lineEnding: String) throws {
        let text = Self.accepted.replacingOccurrences(of: "\n", with: lineEnding)
        #expect(try rules(text) == rules(Self.accepted))
    }

    @Test func aByteOrderMarkAndTabsGiveTheSameRules() throws {
        #expect(try rules("\u{FEFF}" + Self.accepted) == rules(Self.accepted))
        #expect(try rules(Self.accepted.replacingOccurrences(of: " ", with: "\t")) == rules(Self.accepted), "a tab is a space")
        let indented = "\ttrace.lost ==\t\t0\t# x\n  loop.utilization <= 1%\t\n\t\ntimer.lateness.p99 <= 2ms\n"
        #expect(try rules(indented).map(\.text) == ["trace.lost ==  0", "loop.utilization <= 1%", "timer.lateness.p99 <= 2ms"])
        #expect(try rules(indented).map(\.limit) == rules(Self.accepted).map(\.limit))
    }

    @Test func aMixOfLineEndingsCountsEveryLine() throws {
        #expect(try rules("trace.lost == 0\r\n\rloop.utilization <= 1%\n").map(\.line) == [1, 3])
        #expect(budgetRefusal("trace.lost == 0\r\rloop.sleep.max <= 5\n") == "b:3: the limit \"5\" for loop.sleep.max has no unit (write e.g. 5ms or 5us)")
    }

    /// Another editor may show these as line breaks: the rule after one would look live and be inside a comment.
    @Test func otherLineBreaksAndControlCharactersAreRefused() {
        #expect(budgetRefusal("trace.lost == 0 # x\u{2028}loop.utilization <= 1%\n") == "b:1: unexpected character U+2028 (a line ends in \\n, \\r\\n or \\r)")
        #expect(budgetRefusal("trace.lost == 0\nloop.utilization <= 1%\u{0C}\n") == "b:2: unexpected character U+000C (a line ends in \\n, \\r\\n or \\r)")
        #expect(budgetRefusal("trace.lost == 0\n\u{0B}\n") == "b:2: unexpected character U+000B (a line ends in \\n, \\r\\n or \\r)")
        #expect(budgetRefusal("trace.lost == 0\u{0}\n") == "b:1: unexpected character U+0000 (a line ends in \\n, \\r\\n or \\r)")
        #expect(budgetRefusal("trace.lost == 0\n\u{FEFF}stalls.count == 0\n") == "b:2: unexpected character U+FEFF (a line ends in \\n, \\r\\n or \\r)",
                "a byte-order mark is ignored only where it marks the order: at the start")
    }

    @Test func aCountBeyondWhatADoubleHoldsExactlyIsRefused() throws {
        #expect(budgetRefusal("stalls.count <= 10000000000000000\n") == "b:1: the limit 10000000000000000 for stalls.count is out of range (a count limit is at most 9007199254740992)")
        #expect(budgetRefusal("stalls.count <= 1e99\n") == "b:1: \"1e99\" is not a whole number (stalls.count is a count)")
        #expect(try rules("stalls.count <= 9007199254740992\n").map(\.limit) == [9_007_199_254_740_992])
    }

    /// Only numbers written out in decimal: Double's parser also takes hex, exponents (1e-999 is 0), inf and nan.
    @Test func aLimitIsANumberWrittenOutInDecimal() throws {
        for limit in ["0x1", "1e-999", "inf", "nan", "1e0", "+0.5", "0.5.1", ".", "-"] {
            #expect(budgetRefusal("loop.utilization <= \(limit)\n") == "b:1: \"\(limit)\" is not a ratio (write 0.8 or 80%)", "\(limit)")
        }
        #expect(budgetRefusal("loop.utilization <= 1e-999%\n") == "b:1: \"1e-999%\" is not a ratio (write 0.8 or 80%)")
        #expect(budgetRefusal("trace.lost <= 0x10\n") == "b:1: \"0x10\" is not a whole number (trace.lost is a count)")
        #expect(try rules("loop.utilization <= 0.25\nloop.utilization <= .5\nloop.utilization <= 80%\n").map(\.limit) == [0.25, 0.5, 0.8])
    }

    @Test func aFractionOfANanosecondIsRefused() {
        #expect(budgetRefusal("timer.lateness.p99 <= 0.5ns\n") == "b:1: \"0.5ns\" has a fraction of a nanosecond: a duration is a whole number of nanoseconds")
    }
}

/// Why `text`, a budget file named `b`, is refused; nil when it is not.
func budgetRefusal(_ text: String) -> String? {
    do {
        _ = try Budget(text: text, file: "b")
        return nil
    } catch {
        return error.description
    }
}

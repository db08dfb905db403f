@testable import Analysis
import Testing
import TraceModel

/// The one duration parser behind flags, workload files and budgets: its units, its one rule for bare numbers and
/// the exact text of every refusal.
@Suite struct DurationTextTests {
    private func refusal(_ text: String) -> String? {
        do {
            _ = try DurationText.nanoseconds(text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func everyUnit() throws {
        #expect(try DurationText.nanoseconds("7ns") == 7)
        #expect(try DurationText.nanoseconds("7us") == 7_000)
        #expect(try DurationText.nanoseconds("7µs") == 7_000)
        #expect(try DurationText.nanoseconds("7ms") == 7_000_000)
        #expect(try DurationText.nanoseconds("7s") == 7_000_000_000)
        #expect(try DurationText.nanoseconds("7m") == 420_000_000_000)
    }

    @Test func fractionsOfAUnitAreExact() throws {
        #expect(try DurationText.nanoseconds("1.5s") == 1_500_000_000)
        #expect(try DurationText.nanoseconds(".5ms") == 500_000)
        #expect(try DurationText.nanoseconds("2.5us") == 2_500)
        #expect(try DurationText.nanoseconds("1.1us") == 1_100, "1.1 × 1000 is 1100.0000000000002 in binary")
        #expect(try DurationText.nanoseconds("0.25m") == 15_000_000_000)
        #expect(try DurationText.nanoseconds("1.5e-10m") == 9)
        #expect(try DurationText.nanoseconds("1e3us") == 1_000_000)
        #expect(try DurationText.nanoseconds("5.ms") == 5_000_000)
        #expect(try DurationText.nanoseconds("1000e-3ns") == 1)
        #expect(try DurationText.nanoseconds("9007199254740993ns") == 9_007_199_254_740_993, "beyond a Double's 53 bits")
        #expect(try DurationText.nanoseconds("  20ms ") == 20_000_000, "surrounding spaces are ignored")
    }

    /// `0.5ns` was 1 ns and `0.0004us` was 0: a fraction of a nanosecond is refused, not rounded.
    @Test func aFractionOfANanosecondIsRefused() {
        let expected = { (text: String) in "\"\(text)\" has a fraction of a nanosecond: a duration is a whole number of nanoseconds" }
        for text in ["0.5ns", "1.6ns", "0.0004us", "1.0000005ms", "1e-10s", "1e-11m", "1e-99999999999s"] {
            #expect(refusal(text) == expected(text), "\(text)")
        }
        #expect(refusal("0.000ns") == nil, "zero written with decimals is zero")
        #expect(refusal("0e-5ns") == nil)
    }

    @Test func aBareNumberIsRefusedExceptZero() throws {
        #expect(try DurationText.nanoseconds("0") == 0)
        #expect(try DurationText.nanoseconds("0.0") == 0)
        #expect(refusal("3") == "\"3\" has no unit: write 3s, 3ms, 3us or 3ns")
        #expect(refusal("2.5") == "\"2.5\" has no unit: write 2.5s, 2.5ms, 2.5us or 2.5ns")
        #expect(refusal(" 16 ") == "\"16\" has no unit: write 16s, 16ms, 16us or 16ns")
    }

    @Test func negativesAreRefused() {
        #expect(refusal("-1s") == "\"-1s\" is negative: a duration must be 0 or more")
        #expect(refusal("-.5ms") == "\"-.5ms\" is negative: a duration must be 0 or more")
        #expect(refusal("-0s") == nil, "minus zero is zero")
    }

    @Test func overflowIsRefused() throws {
        #expect(refusal("300y") == "\"300y\" is not a duration: write a number and a unit (500us, 2ms, 1.5s)")
        #expect(refusal("1e10s") == "\"1e10s\" is too long: a duration must be under 292 years")
        #expect(refusal("153722868m") == "\"153722868m\" is too long: a duration must be under 292 years")
        #expect(try DurationText.nanoseconds("153722867m") == 9_223_372_020_000_000_000, "just under Int64.max")
        #expect(try DurationText.nanoseconds("9223372036854775807ns") == Int64.max)
        #expect(refusal("9223372036854775808ns") == "\"9223372036854775808ns\" is too long: a duration must be under 292 years")
        #expect(refusal("1e99ns") == "\"1e99ns\" is too long: a duration must be under 292 years")
        #expect(refusal("1e99999999999s") == "\"1e99999999999s\" is too long: a duration must be under 292 years", "beyond a Double too")
    }

    @Test func garbageIsRefused() {
        let expected = { (text: String) in "\"\(text)\" is not a duration: write a number and a unit (500us, 2ms, 1.5s)" }
        for text in ["", "soon", "ms", "5 ms", "5mss", "5h", "5sec", "inf s", "nans", "0x10ms", "1.2.3ms", "--1s", "5µ", ".ms", "1e+ms", "e5ms", "+-1ms"] {
            #expect(refusal(text) == expected(text.trimmingCharacters(in: .whitespaces)), "\(text)")
        }
    }

    /// Budgets parse limits with the same rule: `1m` works (budgets refused it), a bare number says it has no unit.
    @Test func budgetsUseTheSameParser() throws {
        let budget = try Budget(text: "timer.lateness.p99 <= 1m\nstalls.worst <= 0\ntimer.drift.max <= 5us/s\n", file: "b")
        #expect(budget.rules.map(\.limit) == [60e9, 0, 5_000])
        #expect(budgetRefusal("timer.lateness.p99 <= 5\n") == "b:1: the limit \"5\" for timer.lateness.p99 has no unit (write e.g. 5ms or 5us)")
        #expect(budgetRefusal("\nloop.sleep.max <= -2ms\n") == "b:2: impossible limit -2ms: loop.sleep.max is never negative")
        #expect(budgetRefusal("timer.drift.max <= -2ms/s\n") == "b:1: impossible limit -2ms/s: timer.drift.max is a magnitude, never negative")
        #expect(budgetRefusal("loop.sleep.max <= 2 weeks\n") == "b:1: \"2 weeks\" is not a duration: write a number and a unit (500us, 2ms, 1.5s)")
    }
}

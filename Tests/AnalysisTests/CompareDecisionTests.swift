@testable import Analysis
import Testing

/// What `rlctl compare` decides: a regression only when the whole bootstrap interval is past the threshold in
/// the worse direction; ratios in points; a warning when the two sides look like different workloads.
@Suite struct CompareDecisionTests {
    /// Repetitions of the late-frame run with the given overall timer-lateness p99 (ms) and utilization.
    private func report(_ workload: String = "timers", p99: [Double], utilization: [Double]? = nil) throws -> RunReport {
        var reps: [TraceSummary] = []
        for (index, value) in p99.enumerated() {
            var s = try VerdictTests.summary()
            s.overall.timerLateness.p99 = UInt64(value * 1_000_000)
            if let utilization { s.overall.utilization = utilization[index] }
            reps.append(s)
        }
        return RunReport(workload: workload, tracer: "embedded", repetitions: reps)
    }

    private func compare(_ a: RunReport, _ b: RunReport, _ metrics: [String], threshold: Double = 0.1) throws -> ComparisonReport {
        try #require(ComparisonReport(baseline: a, current: b, metrics: metrics, threshold: threshold, thresholdText: "10%"))
    }

    @Test func aChangeBeyondTheNoiseRegresses() throws {
        let result = try compare(try report(p99: [1, 1.1, 0.9, 1, 1.05]), try report(p99: [3, 3.2, 2.9, 3.1, 3]), ["timer.lateness.p99"])
        let r = try #require(result.results.first)
        #expect(r.baseline == 1_000_000 && r.current == 3_000_000)
        #expect(abs(r.change - 2) < 1e-9 && r.low > 0.1 && r.regressed && !r.improved)
        #expect(result.regressed && result.regressions.count == 1)
    }

    @Test func noiseWiderThanTheThresholdIsNoRegression() throws {
        // Medians 1 ms → 1.2 ms (+20 %), but the repetitions spread from 0.5 to 2 ms on both sides.
        let result = try compare(try report(p99: [0.5, 1, 2, 1, 0.6]), try report(p99: [0.6, 1.2, 2, 1.2, 0.5]), ["timer.lateness.p99"])
        let r = try #require(result.results.first)
        #expect(abs(r.change - 0.2) < 1e-9)
        #expect(r.low <= 0.1 && !r.regressed && !result.regressed)
    }

    /// An interval that reaches past the threshold without being wholly past it is said to be inconclusive, in
    /// every rendering, never "ok": more repetitions could tell.
    @Test func anIntervalAcrossTheThresholdIsInconclusive() throws {
        let result = try compare(try report(p99: [0.5, 1, 2, 1, 0.6]), try report(p99: [0.6, 1.2, 2, 1.2, 0.5]), ["timer.lateness.p99"])
        let r = try #require(result.results.first)
        #expect(r.high > 0.1 && r.low <= 0.1 && r.inconclusive && !r.regressed && !result.regressed)
        #expect(result.text.contains("inconclusive (the interval crosses the threshold)"), "\(result.text)")
        #expect(result.markdown.contains("❔ inconclusive"))
        let steady = try compare(try report(p99: [1, 1, 1, 1]), try report(p99: [1.01, 1.01, 1.01, 1.01]), ["timer.lateness.p99"])
        #expect(steady.results.first?.inconclusive == false && steady.text.contains("  ok"), "\(steady.text)")
    }

    @Test func anImprovementIsNotARegression() throws {
        let result = try compare(try report(p99: [3, 3, 3]), try report(p99: [1, 1, 1]), ["timer.lateness.p99"])
        #expect(result.results.first?.improved == true && !result.regressed)
    }

    @Test func ratiosChangeInPoints() throws {
        let result = try compare(try report(p99: [1, 1, 1], utilization: [0.40, 0.40, 0.40]),
                                 try report(p99: [1, 1, 1], utilization: [0.55, 0.55, 0.55]), ["loop.utilization"])
        let r = try #require(result.results.first)
        #expect(r.inPoints && abs(r.change - 0.15) < 1e-9 && r.regressed, "15 points beyond a 10-point threshold")
    }

    @Test func metricsWithNoDataOnEitherSideAreLeftOut() throws {
        #expect(ComparisonReport(baseline: try report(p99: [1]), current: try report(p99: [1]), metrics: ["wake.port.p99"],
                                 threshold: 0.1, thresholdText: "10%") == nil)
    }

    @Test func differentWorkloadsAreNamedInTheWarning() throws {
        let result = try compare(try report("timers", p99: [1]), try report("jank", p99: [1]), ["timer.lateness.p99"])
        #expect(result.warning == "warning: these may be different workloads: the baseline ran workload \"timers\" and the current run \"jank\"")
        let same = try compare(try report(p99: [1]), try report(p99: [1]), ["timer.lateness.p99"])
        #expect(same.warning == nil)
    }
}

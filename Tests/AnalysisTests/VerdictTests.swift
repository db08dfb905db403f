@testable import Analysis
import Testing

/// What `rlctl check` decides, at the level of the analysis: each rule on the median of the repetitions that
/// measured it, and incomplete data never a pass unless the budget allows that kind of incompleteness.
@Suite struct VerdictTests {
    /// The late-frame run: utilization 23 ms busy of 30 ms, one 22 ms stall (threshold 16 ms), 1 timer firing.
    static func summary() throws -> TraceSummary { try ReportTextTests.lateFrame().summarize() }

    private func check(_ budget: String, _ repetitions: [TraceSummary]) throws -> BudgetCheck {
        BudgetCheck(budget: try Budget(text: budget, file: "test.budget"), report: RunReport(workload: "w", tracer: "embedded", repetitions: repetitions))
    }

    @Test func rulesPassAndFailOnTheMeasuredFigure() throws {
        let result = try check("loop.utilization <= 80%\nstalls.count == 0\n", [try Self.summary()])
        #expect(result.verdicts.map(\.passed) == [true, false])
        #expect(abs(result.verdicts[0].value - 23.0 / 30.0) < 1e-9, "utilization \(result.verdicts[0].value)")
        #expect(result.verdicts[1].value == 1)
        #expect(result.failed == 1 && !result.passed && !result.incompleteForbidden && result.incompleteness.isEmpty)
    }

    @Test func eachRuleJudgesTheMedianOfTheRepetitions() throws {
        var reps: [TraceSummary] = []
        for utilization in [0.9, 0.1, 0.5] {
            var s = try Self.summary()
            s.overall.utilization = utilization
            reps.append(s)
        }
        let result = try check("loop.utilization <= 50%\n", reps)
        #expect(result.verdicts.first?.value == 0.5)
        #expect(result.passed)
    }

    @Test func lostEventsAreIncompleteUnlessTheBudgetAllowsThem() throws {
        var lossy = try Self.summary()
        lossy.health.eventsLost = 17
        let forbidden = try check("loop.utilization <= 80%\n", [lossy])
        #expect(forbidden.incompleteForbidden && !forbidden.passed && forbidden.failed == 0)
        #expect(forbidden.incompleteness == ["17 events/packets lost"])

        let allowed = try check("loop.utilization <= 80%\ntrace.lost <= 100\n", [lossy])
        #expect(!allowed.incompleteForbidden && allowed.passed)
        let exceeded = try check("loop.utilization <= 80%\ntrace.lost <= 10\n", [lossy])
        #expect(exceeded.incompleteForbidden && exceeded.failed == 1)
    }

    @Test func aRuleOnAFigureNothingMeasuredCannotPass() throws {
        let result = try check("wake.port.p99 <= 1ms\n", [try Self.summary()])
        let verdict = try #require(result.verdicts.first)
        #expect(verdict.noData && !verdict.passed)
        #expect(result.failed == 0 && result.incompleteForbidden && !result.passed)
        #expect(result.incompleteness == ["no data for wake.port.p99"])
    }

    @Test func anEmptyTraceIsNeverAPass() throws {
        var empty = try Self.summary()
        empty.health.eventsRead = 0
        let result = try check("loop.utilization <= 100%\ntrace.lost == 0\n", [empty])
        #expect(result.incompleteForbidden && !result.passed)
        #expect(result.incompleteness == ["the trace holds no events"])
    }

    @Test func cutOffRunsNeedARuleOnThem() throws {
        var cut = try Self.summary()
        cut.health.runsCutOff = 1
        #expect(try check("loop.utilization <= 80%\n", [cut]).incompleteForbidden)
        #expect(try check("loop.utilization <= 80%\ntrace.runs_incomplete <= 1\n", [cut]).passed)
    }
}

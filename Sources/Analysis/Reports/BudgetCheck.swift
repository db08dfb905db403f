import Foundation
import TraceModel

/// A budget checked against a report: each rule's verdict on the median of the repetitions that measured its
/// metric, and whether the data is complete enough to say anything. What `rlctl check` decides and prints.
public struct BudgetCheck: Sendable {
    /// One rule's outcome.
    public struct Verdict: Sendable {
        public let rule: Budget.Rule
        /// The median over the repetitions that measured the metric (0 when none did: see ``noData``).
        public let value: Double
        public let passed: Bool
        public let unit: Metric.Unit
        /// No repetition has the figure as a finite number (nothing measured it): the rule cannot pass.
        public let noData: Bool
        /// Why there is no data, when the metric knows (`no NIO loop in the trace`).
        public var noDataReason: String? = nil
    }

    /// How `rlctl check` prints its outcome (in the order its help lists them).
    public enum Format: String, Sendable, CaseIterable {
        case text, json, junit, markdown
    }

    public let verdicts: [Verdict]
    /// Events and packets lost over all repetitions.
    public let lost: UInt64
    /// Runs whose begin or end is not in the trace, over all repetitions.
    public let incompleteRuns: UInt64
    /// Why the data is incomplete, one phrase each (empty: complete).
    public let incompleteness: [String]
    /// Incomplete data the budget does not allow: the outcome is "incomplete" (exit 3), never a pass.
    public let incompleteForbidden: Bool

    /// Rules whose measured figure breaks them (rules without data are incompleteness, not failures).
    public var failed: Int { verdicts.filter { !$0.passed && !$0.noData }.count }
    public var passed: Bool { failed == 0 && !incompleteForbidden }

    public init(budget: Budget, report: RunReport) {
        verdicts = budget.rules.map { rule in
            let metric = Metric.named(rule.metric)!
            // A figure that is not a finite number (a ratio over no time, a hand-edited summary) measures nothing.
            let measured = report.repetitions.filter { metric.isMeasured(in: $0) && metric.value(in: $0).isFinite }
            guard !measured.isEmpty else {
                return Verdict(rule: rule, value: 0, passed: false, unit: metric.unit, noData: true, noDataReason: metric.missingReason)
            }
            let value = Comparison.median(measured.map { metric.value(in: $0) })
            return Verdict(rule: rule, value: value, passed: rule.comparison.holds(value, rule.limit), unit: metric.unit, noData: false)
        }
        lost = report.repetitions.reduce(0) { $0.addingLoss($1.health.eventsLost).addingLoss($1.health.packetsLost) }
        incompleteRuns = report.repetitions.map(\.health.incompleteRunCount).reduce(0, +)
        var reasons: [String] = []
        if lost > 0 { reasons.append("\(lost) events/packets lost") }
        let cutOff = report.repetitions.filter(\.health.trace.recordingCutOff).count
        if cutOff > 0 { reasons.append("\(cutOff) recording(s) cut off by the death of their process") }
        if incompleteRuns > 0 { reasons.append("\(incompleteRuns) run(s) cut off or begun before the trace") }
        // A trace that holds no event at all (a recording killed before it wrote its first packet) shows nothing
        // ran, whatever its loss counters say: no rule can allow it.
        let empty = report.repetitions.filter { $0.health.eventsRead == 0 }.count
        if empty > 0 { reasons.append(empty == 1 ? "the trace holds no events" : "\(empty) traces hold no events") }
        // Lost kernel records leave the kernel view's figures incomplete, not the loops' own: they matter to rules on
        // kernel.* metrics only.
        let kernelLost = report.repetitions.reduce(UInt64(0)) { $0.addingLoss($1.kernel?.lostRecords ?? 0) }
        let kernelRules = verdicts.contains { Metric.isKernel($0.rule.metric) && $0.rule.metric != Budget.kernelLossMetric }
        if kernelLost > 0 && kernelRules { reasons.append("\(kernelLost) kernel records lost") }
        let unmeasured = verdicts.filter(\.noData).map { $0.rule.metric + ($0.noDataReason.map { " (\($0))" } ?? "") }
        if !unmeasured.isEmpty { reasons.append("no data for " + unmeasured.joined(separator: ", ")) }
        incompleteness = reasons
        let verdicts = self.verdicts
        // Allowed only by rules on that kind of incompleteness, all of which hold.
        func allowed(_ metrics: [String]) -> Bool {
            let rules = verdicts.filter { metrics.contains($0.rule.metric) }
            return !rules.isEmpty && rules.allSatisfy(\.passed)
        }
        incompleteForbidden = (lost > 0 && !allowed(Budget.lossMetrics)) || (incompleteRuns > 0 && !allowed(Budget.runMetrics))
            || (cutOff > 0 && !allowed([Budget.cutOffMetric])) || !unmeasured.isEmpty || empty > 0
            || (kernelLost > 0 && kernelRules && !allowed([Budget.kernelLossMetric]))
    }

    public func render(_ format: Format) -> String {
        switch format {
        case .text: return text
        case .markdown: return markdown
        case .json: return json
        case .junit: return junit
        }
    }

    // MARK: - What each rendering shares

    /// Figures over lost events or cut-off runs cover only part of what ran.
    private var partial: Bool { lost > 0 || incompleteRuns > 0 }
    private var mark: String { partial ? "  (!)" : "" }

    private var traceLine: String {
        if incompleteness.isEmpty { return "trace: complete" }
        var what = "trace: INCOMPLETE — " + incompleteness.joined(separator: ", ")
        if partial { what += "; figures marked (!) cover only part of the runs" }
        guard incompleteForbidden else { return what + "; the budget allows it" }
        if partial {
            what += "; the budget does not allow incomplete data (a rule such as `trace.lost <= N` or `trace.runs_incomplete <= N` would)"
        }
        return what
    }

    private var outcome: String {
        if incompleteForbidden { return "incomplete: the data cannot show the budget is met" + (failed > 0 ? " (and \(failed) rule(s) failed)" : "") }
        return failed == 0 ? "within budget" : "\(failed) rule(s) failed"
    }

    /// A rule that holds on incomplete data the budget does not allow has not passed: its figure may be missing.
    private func undecided(_ verdict: Verdict) -> Bool { verdict.noData || (verdict.passed && incompleteForbidden) }

    private func valueText(_ verdict: Verdict) -> String { verdict.noData ? "no data" + (verdict.noDataReason.map { ": \($0)" } ?? "") : formatMetric(verdict.value, unit: verdict.unit) }

    private func limitText(_ verdict: Verdict) -> String {
        "\(verdict.rule.comparison.rawValue) \(formatMetric(verdict.rule.limit, unit: verdict.unit))"
    }

    // MARK: - Renderings

    public var text: String {
        var out = verdicts.map { verdict in
            let status = undecided(verdict) ? "  ?  " : (verdict.passed ? "PASS " : "FAIL ")
            return status + verdict.rule.metric.padded(30) + valueText(verdict).leftPad(10) + "  " + limitText(verdict) + mark
        }
        out.append(traceLine)
        out.append(outcome)
        return out.joined(separator: "\n")
    }

    public var markdown: String {
        var out = ["### rlctl check: " + (passed ? "✅ " : "❌ ") + outcome, "",
                   "| | metric | value | limit |", "| --- | --- | --- | --- |"]
        out += verdicts.map { verdict in
            let status = undecided(verdict) ? "⚠️" : (verdict.passed ? "✅" : "❌")
            return "| \(status) | `\(verdict.rule.metric)` | \(valueText(verdict))\(mark) | \(limitText(verdict)) |"
        }
        out.append("")
        out.append(incompleteness.isEmpty ? "Trace complete: no events lost, every run complete." : "⚠️ " + traceLine.dropFirst("trace: ".count) + ".")
        return out.joined(separator: "\n")
    }

    struct JSONRule: Encodable {
        var metric: String
        var value: JSONNumber
        var comparison: String
        var limit: JSONNumber
        var passed: Bool
    }

    struct JSONDocument: Encodable {
        var passed: Bool
        var incomplete: Bool
        var lost: UInt64
        var runsIncomplete: UInt64
        var rules: [JSONRule]
    }

    var jsonDocument: JSONDocument {
        let rules = verdicts.map {
            JSONRule(metric: $0.rule.metric, value: JSONNumber($0.noData ? nil : $0.value), comparison: $0.rule.comparison.rawValue,
                     limit: JSONNumber($0.rule.limit), passed: $0.passed)
        }
        return JSONDocument(passed: passed, incomplete: incompleteForbidden, lost: lost, runsIncomplete: incompleteRuns, rules: rules)
    }

    /// One line of JSON; a value that is missing or not a finite number is `null`.
    public var json: String { ReportJSON.line(jsonDocument) }

    /// The JUnit test cases: one per rule and one for the trace's completeness (skipped when the budget allows
    /// what is missing); `scope` extends the class names (a host's name in a fleet's check).
    func junitCases(scope: String? = nil) -> [JUnitReport.TestCase] {
        let budgetClass = "rlctl.budget" + (scope.map { ".\($0)" } ?? "")
        var cases = verdicts.map { verdict -> JUnitReport.TestCase in
            let name = verdict.rule.text
            if verdict.noData {
                return .init(className: budgetClass, name: name, result: .failure("\(verdict.rule.metric): no data in the trace"))
            }
            if !verdict.passed {
                return .init(className: budgetClass, name: name,
                             result: .failure("\(verdict.rule.metric) = \(formatMetric(verdict.value, unit: verdict.unit)), limit \(limitText(verdict))"))
            }
            return .init(className: budgetClass, name: name, result: .passed)
        }
        let missing = incompleteness.joined(separator: ", ")
        cases.append(.init(className: "rlctl.trace" + (scope.map { ".\($0)" } ?? ""), name: "trace complete",
                           result: incompleteness.isEmpty ? .passed : (incompleteForbidden ? .failure(missing) : .skipped(missing))))
        return cases
    }

    /// A JUnit test suite of ``junitCases(scope:)``.
    public var junit: String { JUnitReport(suite: "rlctl check", cases: junitCases()).xml }
}

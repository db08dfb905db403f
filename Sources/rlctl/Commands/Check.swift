import Analysis
import ArgumentParser
import Foundation

enum CheckFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, junit, markdown
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a trace or summary against a performance budget (for CI).",
        discussion: """
        The budget has one rule per line, `metric OP limit`:
          timer.lateness.p99 <= 2ms
          loop.utilization <= 0.8
          stalls.count == 0
          trace.lost == 0
        Exit status: 0 within budget, 1 a rule failed, 2 bad input, 3 the data is incomplete and the budget does not \
        allow it. Data is incomplete when events or packets were lost, or a run's begin or end is not in the trace \
        (cut off by a signal or a kill, a flight-recorder ring, losses): its figures cover only part of the run. A \
        budget allows that only with a rule on it that holds, e.g. `trace.lost <= 1000` or `trace.runs_incomplete <= 1`.
        With a run report of several repetitions, each metric's median across repetitions is checked.
        """
    )

    @Argument(help: "A trace folder, a summary (summarize --format json) or a run report (run --output).")
    var input: String?

    @Option(help: "The budget file.")
    var budget: String?

    @Option(help: "text, json, junit or markdown.")
    var format: CheckFormat = .text

    @Flag(help: "List every metric a budget can use, and exit.")
    var listMetrics = false

    @OptionGroup var analysis: AnalysisOptions

    func validate() throws {
        if !listMetrics && (input == nil || budget == nil) { throw ValidationError("give a trace or summary and --budget FILE (or --list-metrics)") }
    }

    func run() throws {
        if listMetrics {
            for metric in Metric.all { print(metric.name.padded(36) + "(\(metric.unit.rawValue)) " + metric.help) }
            return
        }
        guard let budgetText = FileManager.default.contents(atPath: budget!).map({ String(decoding: $0, as: UTF8.self) }) else {
            throw Failure.input("\(budget!): no such budget file (or it cannot be read)")
        }
        let rules: Budget
        do { rules = try Budget(text: budgetText, file: budget!) } catch { throw Failure.input(error.description) }
        let report = try loadReport(at: input!, options: analysis.summarizerOptions)
        let verdicts = CheckVerdicts(budget: rules, report: report)
        print(verdicts.render(format))
        if verdicts.incompleteForbidden { throw ExitCode(Status.incomplete.rawValue) }
        if verdicts.failed > 0 { throw ExitCode(Status.violation.rawValue) }
    }
}

/// The outcome of every rule over a report's repetitions (medians), ready to print.
struct CheckVerdicts {
    struct Line {
        let rule: Budget.Rule
        let value: Double
        let passed: Bool
        let unit: Metric.Unit
        /// No repetition has the figure (nothing measured it): the rule cannot pass.
        let noData: Bool
    }

    let lines: [Line]
    let lost: UInt64
    let incompleteRuns: UInt64
    /// Why the data is incomplete, one phrase each (empty: complete).
    let incompleteness: [String]
    /// Incomplete data the budget does not allow: the verdict is "incomplete" (exit 3), never a pass.
    let incompleteForbidden: Bool
    var failed: Int { lines.filter { !$0.passed && !$0.noData }.count }
    var passed: Bool { failed == 0 && !incompleteForbidden }

    init(budget: Budget, report: RunReport) {
        lines = budget.rules.map { rule in
            let metric = Metric.named(rule.metric)!
            let measured = report.repetitions.filter { metric.isMeasured(in: $0) }
            guard !measured.isEmpty else { return Line(rule: rule, value: 0, passed: false, unit: metric.unit, noData: true) }
            let value = Comparison.median(measured.map { metric.value(in: $0) })
            return Line(rule: rule, value: value, passed: rule.comparison.holds(value, rule.limit), unit: metric.unit, noData: false)
        }
        lost = report.repetitions.map { $0.health.eventsLost + $0.health.packetsLost }.reduce(0, +)
        incompleteRuns = report.repetitions.map(\.health.incompleteRunCount).reduce(0, +)
        var reasons: [String] = []
        if lost > 0 { reasons.append("\(lost) events/packets lost") }
        if incompleteRuns > 0 { reasons.append("\(incompleteRuns) run(s) cut off or begun before the trace") }
        // A trace that holds no event at all (a recording killed before it wrote its first packet) shows nothing
        // ran, whatever its loss counters say: no rule can allow it.
        let empty = report.repetitions.filter { $0.health.eventsRead == 0 }.count
        if empty > 0 { reasons.append(empty == 1 ? "the trace holds no events" : "\(empty) traces hold no events") }
        let unmeasured = lines.filter(\.noData).map(\.rule.metric)
        if !unmeasured.isEmpty { reasons.append("no data for " + unmeasured.joined(separator: ", ")) }
        incompleteness = reasons
        let lines = self.lines
        // Allowed only by rules on that kind of incompleteness, all of which hold.
        func allowed(_ metrics: [String]) -> Bool {
            let rules = lines.filter { metrics.contains($0.rule.metric) }
            return !rules.isEmpty && rules.allSatisfy(\.passed)
        }
        incompleteForbidden = (lost > 0 && !allowed(Budget.lossMetrics)) || (incompleteRuns > 0 && !allowed(Budget.runMetrics))
            || !unmeasured.isEmpty || empty > 0
    }

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

    private var verdict: String {
        if incompleteForbidden { return "incomplete: the data cannot show the budget is met" + (failed > 0 ? " (and \(failed) rule(s) failed)" : "") }
        return failed == 0 ? "within budget" : "\(failed) rule(s) failed"
    }

    /// A rule that holds on incomplete data the budget does not allow has not passed: its figure may be missing.
    private func status(_ line: Line) -> String {
        line.noData || (line.passed && incompleteForbidden) ? "  ?  " : (line.passed ? "PASS " : "FAIL ")
    }

    private func valueText(_ line: Line) -> String { line.noData ? "no data" : formatMetric(line.value, unit: line.unit) }

    private func limitText(_ line: Line) -> String {
        "\(line.rule.comparison.rawValue) \(formatMetric(line.rule.limit, unit: line.unit))"
    }

    func render(_ format: CheckFormat) -> String {
        switch format {
        case .text:
            var out = lines.map { status($0) + $0.rule.metric.padded(30) + valueText($0).leftPad(10) + "  " + limitText($0) + mark }
            out.append(traceLine)
            out.append(verdict)
            return out.joined(separator: "\n")
        case .markdown:
            var out = ["### rlctl check: " + (passed ? "✅ " : "❌ ") + verdict, "",
                       "| | metric | value | limit |", "| --- | --- | --- | --- |"]
            out += lines.map { "| \($0.noData || ($0.passed && incompleteForbidden) ? "⚠️" : ($0.passed ? "✅" : "❌")) | `\($0.rule.metric)` | \(valueText($0))\(mark) | \(limitText($0)) |" }
            out.append("")
            out.append(incompleteness.isEmpty ? "Trace complete: no events lost, every run complete." : "⚠️ " + traceLine.dropFirst("trace: ".count) + ".")
            return out.joined(separator: "\n")
        case .json:
            let items = lines.map { line -> String in
                "{\"metric\":\"\(line.rule.metric)\",\"value\":\(line.noData ? "null" : "\(line.value)"),\"comparison\":\"\(line.rule.comparison.rawValue)\",\"limit\":\(line.rule.limit),\"passed\":\(line.passed)}"
            }
            return "{\"passed\":\(passed),\"incomplete\":\(incompleteForbidden),\"lost\":\(lost),\"runsIncomplete\":\(incompleteRuns),\"rules\":[\(items.joined(separator: ","))]}"
        case .junit:
            var out = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
                       "<testsuite name=\"rlctl check\" tests=\"\(lines.count + 1)\" failures=\"\(failed + (incompleteForbidden ? 1 : 0))\">"]
            for line in lines {
                out.append("  <testcase classname=\"rlctl.budget\" name=\"\(xml(line.rule.text))\">")
                if line.noData {
                    out.append("    <failure message=\"\(xml("\(line.rule.metric): no data in the trace"))\"/>")
                } else if !line.passed {
                    out.append("    <failure message=\"\(xml("\(line.rule.metric) = \(formatMetric(line.value, unit: line.unit)), limit \(limitText(line))"))\"/>")
                }
                out.append("  </testcase>")
            }
            out.append("  <testcase classname=\"rlctl.trace\" name=\"trace complete\">")
            if !incompleteness.isEmpty {
                out.append("    <\(incompleteForbidden ? "failure" : "skipped") message=\"\(xml(incompleteness.joined(separator: ", ")))\"/>")
            }
            out.append("  </testcase>")
            out.append("</testsuite>")
            return out.joined(separator: "\n")
        }
    }

    private func xml(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

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
        Exit status: 0 within budget, 1 a rule failed, 2 bad input, 3 events were lost and the budget forbids it.
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
    }

    let lines: [Line]
    let lost: UInt64
    let incompleteForbidden: Bool
    var failed: Int { lines.filter { !$0.passed }.count }

    init(budget: Budget, report: RunReport) {
        lines = budget.rules.map { rule in
            let metric = Metric.named(rule.metric)!
            let value = Comparison.median(report.values(of: metric))
            return Line(rule: rule, value: value, passed: rule.comparison.holds(value, rule.limit), unit: metric.unit)
        }
        lost = report.repetitions.map { $0.health.eventsLost + $0.health.packetsLost }.reduce(0, +)
        incompleteForbidden = lost > 0 && budget.constrainsLoss
    }

    private func limitText(_ line: Line) -> String {
        "\(line.rule.comparison.rawValue) \(formatMetric(line.rule.limit, unit: line.unit))"
    }

    func render(_ format: CheckFormat) -> String {
        switch format {
        case .text:
            var out = lines.map { ($0.passed ? "PASS " : "FAIL ") + $0.rule.metric.padded(30) + formatMetric($0.value, unit: $0.unit).leftPad(10) + "  " + limitText($0) }
            out.append(lost > 0 ? "trace: \(lost) events/packets lost — figures undercount\(incompleteForbidden ? "; the budget forbids incomplete data" : "")" : "trace: complete")
            out.append(failed == 0 && !incompleteForbidden ? "within budget" : "\(failed) rule(s) failed")
            return out.joined(separator: "\n")
        case .markdown:
            var out = ["### rlctl check: " + (failed == 0 && !incompleteForbidden ? "✅ within budget" : "❌ \(failed) rule(s) failed"), "",
                       "| | metric | value | limit |", "| --- | --- | --- | --- |"]
            out += lines.map { "| \($0.passed ? "✅" : "❌") | `\($0.rule.metric)` | \(formatMetric($0.value, unit: $0.unit)) | \(limitText($0)) |" }
            out.append("")
            out.append(lost > 0 ? "⚠️ The trace lost \(lost) events/packets: figures undercount." : "Trace complete: no events lost.")
            return out.joined(separator: "\n")
        case .json:
            let items = lines.map { line -> String in
                "{\"metric\":\"\(line.rule.metric)\",\"value\":\(line.value),\"comparison\":\"\(line.rule.comparison.rawValue)\",\"limit\":\(line.rule.limit),\"passed\":\(line.passed)}"
            }
            return "{\"passed\":\(failed == 0 && !incompleteForbidden),\"lost\":\(lost),\"rules\":[\(items.joined(separator: ","))]}"
        case .junit:
            var out = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
                       "<testsuite name=\"rlctl check\" tests=\"\(lines.count + 1)\" failures=\"\(failed + (incompleteForbidden ? 1 : 0))\">"]
            for line in lines {
                out.append("  <testcase classname=\"rlctl.budget\" name=\"\(xml(line.rule.text))\">")
                if !line.passed {
                    out.append("    <failure message=\"\(xml("\(line.rule.metric) = \(formatMetric(line.value, unit: line.unit)), limit \(limitText(line))"))\"/>")
                }
                out.append("  </testcase>")
            }
            out.append("  <testcase classname=\"rlctl.trace\" name=\"trace complete\">")
            if lost > 0 { out.append("    <\(incompleteForbidden ? "failure" : "skipped") message=\"\(lost) events or packets lost\"/>") }
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

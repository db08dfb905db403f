import Analysis
import ArgumentParser
import Foundation

extension BudgetCheck.Format: ExpressibleByArgument {}

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

        A folder of several hosts' traces (an lttng-relayd output folder) is checked host by host against the same \
        budget: each host's verdict is printed, and the exit status is the worst (a host whose trace cannot be read \
        is incomplete data, status 3). --host NAME checks one host alone.
        """
    )

    @Argument(help: "A trace folder, a summary (summarize --format json) or a run report (run --output).")
    var input: String?

    @Option(help: "The budget file.")
    var budget: String?

    @Option(help: "text, json, junit or markdown.")
    var format: BudgetCheck.Format = .text

    @Flag(help: "List every metric a budget can use, and exit.")
    var listMetrics = false

    @OptionGroup var hostOption: HostOption
    @OptionGroup var analysis: AnalysisOptions

    func validate() throws {
        if !listMetrics && (input == nil || budget == nil) { throw ValidationError("give a trace or summary and --budget FILE (or --list-metrics)") }
    }

    func run() throws {
        if listMetrics {
            for metric in Metric.all { print(metric.name.padded(36) + "(\(metric.unit.rawValue)) " + metric.help) }
            return
        }
        let rules = try loadBudget(at: budget!)
        var isDirectory: ObjCBool = false
        let report: RunReport
        if FileManager.default.fileExists(atPath: input!, isDirectory: &isDirectory), isDirectory.boolValue {
            switch try summarizeFolder(at: input!, host: hostOption.host, options: analysis.summarizerOptions) {
            case .single(let summary):
                report = RunReport(workload: input!, tracer: "trace", repetitions: [summary])
            case .fleet(let fleet):
                let check = FleetBudgetCheck(budget: rules, fleet: fleet)
                print(check.render(format))
                if check.incompleteForbidden { throw ExitCode(Status.incomplete.rawValue) }
                if check.failed > 0 { throw ExitCode(Status.violation.rawValue) }
                return
            }
        } else {
            report = try loadReport(at: input!, options: analysis.summarizerOptions, host: hostOption.host)
        }
        let check = BudgetCheck(budget: rules, report: report)
        print(check.render(format))
        if check.incompleteForbidden { throw ExitCode(Status.incomplete.rawValue) }
        if check.failed > 0 { throw ExitCode(Status.violation.rawValue) }
    }
}

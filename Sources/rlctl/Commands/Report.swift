import Analysis
import ArgumentParser
import Foundation

struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw a trace, a run report or a comparison as one self-contained HTML page.",
        discussion: """
        rlctl report TRACE -o report.html draws a trace folder (embedded or LTTng), a summary (summarize --format \
        json) or a run report (run --output); rlctl report --baseline A --current B -o cmp.html draws the comparison \
        that compare decides, metric by metric in its order. rlctl run and rlctl record take --report FILE to record \
        and draw in one command.

        The page is one file: inline SVG and a stylesheet, no script, nothing loaded from any address; it opens \
        from disk in any browser, follows the reader's light or dark setting and prints. It shows trace health \
        (windows with lost events shaded on every time axis), the budget's verdict with --budget, and per loop: \
        its figures, utilization over time with each stall marked (a click goes to the stall's row and its \
        culprit), distributions on a log axis (busy per iteration, sleep, each wake-up latency, each callout kind) \
        with p50, p99, p99.9 and max marked, the stalls and the slowest callouts; per timer its lateness over time \
        with the tolerance band and missed grid slots. Every number is the one summarize prints. Over long traces the \
        lines are bucketed (at most 600 buckets), each bucket keeping its extremes, and every stall is kept.

        The page's folder is checked before the input is read; the page is written beside -o and renamed over it \
        once whole, so a failed write leaves -o as it was.
        """
    )

    @Argument(help: "A trace folder, a summary or a run report (or give --baseline and --current).")
    var input: String?

    @Option(help: "The baseline of a comparison: a run report (run --repeat N --output), a summary or a trace folder.")
    var baseline: String?

    @Option(help: "The current run of a comparison.")
    var current: String?

    @Option(name: .shortAndLong, help: "The page to write.")
    var output: String

    @Option(help: "A budget file: the page shows its verdict, rule by rule.")
    var budget: String?

    @OptionGroup var comparison: ComparisonOptions
    @OptionGroup var hostOption: HostOption
    @OptionGroup var analysis: AnalysisOptions
    @OptionGroup var quietOption: QuietOption

    func validate() throws {
        switch (input, baseline, current) {
        case (.some, nil, nil), (nil, .some, .some): break
        case (.some, _, _): throw ValidationError("give either an input or --baseline and --current, not both")
        default: throw ValidationError("give an input (a trace folder, summary or run report), or --baseline and --current")
        }
        if budget != nil && input == nil { throw ValidationError("--budget applies to a single input, not to a comparison") }
    }

    func run() throws {
        quietOption.apply()
        try requireWritableOutputs(output)
        let options = analysis.summarizerOptions(drawing: true)
        let page: String
        if let input {
            let report = try loadReport(at: input, options: options, host: hostOption.host)
            var about = [(report.isTraceFolder ? "trace" : report.tracer == "summary" ? "summary" : "run report") + ": \(input)"]
            if let workload = report.workloadName { about.append("workload: \(workload)") }
            if !report.isTraceFolder && report.tracer != "summary" { about.append("tracer: \(report.tracer), \(report.repetitions.count) repetition(s)") }
            page = try HTMLReportOptions.page(for: report, title: "rlctl report: \(name(of: input))", about: about, budget: budget)
        } else {
            let a = try loadReport(at: baseline!, options: options, host: hostOption.host)
            let b = try loadReport(at: current!, options: options, host: hostOption.host)
            let result = try comparison.compare(a, b)
            let context = HTMLReport.Context(title: "rlctl comparison: \(name(of: baseline!)) → \(name(of: current!))",
                                             about: ["baseline: \(baseline!)", "current: \(current!)", "threshold: \(comparison.threshold)"])
            page = HTMLReport.comparison(result, baseline: a, current: b, context: context)
        }
        try write(page, to: output)
        wrote("the report \(output)")
    }
}

/// Shared by `report` and the `--report FILE` of `run` and `record`.
enum HTMLReportOptions {
    /// At most this many buckets on a time axis: one per ~1.3 px of the page's 760-unit charts.
    static let timelineBuckets = 600

    /// The page of one input (a trace, a summary, a run report, what run or record just summarized), with a
    /// budget's verdict when one is given.
    static func page(for report: RunReport, title: String, about: [String], budget: String?) throws -> String {
        let check = try budget.map { BudgetCheck(budget: try loadBudget(at: $0), report: report) }
        let context = HTMLReport.Context(title: title, about: about, budget: check)
        if report.repetitions.count == 1 { return HTMLReport.summary(report.repetitions[0], context: context) }
        return HTMLReport.run(report, context: context)
    }

    /// Writes the page of what `run` or `record` just summarized, and says where.
    static func write(_ report: RunReport, title: String, about: [String], to path: String) throws {
        try rlctl.write(try page(for: report, title: title, about: about, budget: nil), to: path)
        wrote("the report \(path)")
    }
}

/// A path's last component, for a page's title.
private func name(of path: String) -> String {
    let trimmed = path.hasSuffix("/") ? String(path.dropLast()) : path
    return trimmed.split(separator: "/").last.map(String.init) ?? path
}

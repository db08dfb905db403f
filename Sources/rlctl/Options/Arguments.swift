import Analysis
import ArgumentParser
import Workloads

/// Duration options parse through this rather than ExpressibleByArgument, whose failure can only say "invalid":
/// `--duration 3` must say that the unit is missing (DurationText's message).
func durationArgument(_ text: String) throws -> DurationValue {
    try DurationValue(parsing: text)
}

/// How a summary is printed.
enum SummaryFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, markdown
}

/// `--brief`: the summary's verdict and the trace's health, without every loop's figures.
struct BriefOption: ParsableArguments {
    @Flag(help: "Print only the summary's verdict and the trace's health (text), not every loop's figures.")
    var brief = false
}

/// The thresholds every command that summarizes a trace shares.
struct AnalysisOptions: ParsableArguments {
    @Option(help: "Iterations busier than this are stalls, e.g. 16ms.", transform: durationArgument)
    var stall: DurationValue = .milliseconds(16)

    @Option(help: "A timer this much later than its tolerance is late and gets a cause, e.g. 1ms.", transform: durationArgument)
    var late: DurationValue = .milliseconds(1)

    var summarizerOptions: TraceSummarizer.Options {
        var options = TraceSummarizer.Options()
        options.stallThreshold = UInt64(stall.nanoseconds)
        options.lateThreshold = UInt64(late.nanoseconds)
        return options
    }

    /// The options of a summary an HTML page will draw (`report`, and `run`/`record` with `--report`): with a
    /// timeline for its lines over time.
    func summarizerOptions(drawing: Bool) -> TraceSummarizer.Options {
        var options = summarizerOptions
        if drawing { options.timelineBuckets = HTMLReportOptions.timelineBuckets }
        return options
    }

}

/// Which host's traces to read in a folder holding several hosts' (an lttng-relayd output folder).
struct HostOption: ParsableArguments {
    @Option(help: "In a folder of several hosts' traces (lttng-relayd's output folder), read only this host's (NAME or NAME/SESSION, as summarize lists them).")
    var host: String?
}

extension SummaryFormat {
    func render(_ summary: TraceSummary, title: String?, brief: Bool = false) throws -> String {
        try render(text: { SummaryReport.text(summary, title: title, brief: brief) }, json: { try SummaryReport.json(summary) },
                   markdown: { SummaryReport.markdown(summary, title: title) })
    }

    func render(_ fleet: FleetSummary, title: String) throws -> String {
        try render(text: { FleetReport.text(fleet, title: title) }, json: { try FleetReport.json(fleet) },
                   markdown: { FleetReport.markdown(fleet, title: title) })
    }

    private func render(text: () -> String, json: () throws -> String, markdown: () -> String) throws -> String {
        switch self {
        case .text: return text()
        case .json:
            do { return try json() } catch {
                throw Failure(message: "cannot write the summary as JSON: \(error)", status: .violation)
            }
        case .markdown: return markdown()
        }
    }
}

extension BuiltInWorkload: ExpressibleByArgument {}

/// What a comparison compares and how much worse counts: `compare` and `report --baseline/--current` share them.
struct ComparisonOptions: ParsableArguments {
    @Option(help: "How much worse counts as a regression, e.g. 10%.")
    var threshold: String = "10%"

    @Option(parsing: .upToNextOption, help: "Metrics to compare (default: the tail latencies and utilization).")
    var metrics: [String] = []

    @Flag(help: "Compare runs of two differently named workloads anyway (without it that is a usage error, exit 2).")
    var allowDifferentWorkloads = false

    func validate() throws {
        guard threshold.hasSuffix("%"), let value = Double(threshold.dropLast()), value.isFinite, value > 0, value < 10_000 else {
            throw ValidationError("--threshold must be a positive percentage, e.g. 10% (got \(threshold))")
        }
        for metric in metrics where Metric.named(metric) == nil {
            throw ValidationError("unknown metric \"\(metric)\"" + Metric.suggestion(for: metric) + " (rlctl check --list-metrics lists them)")
        }
    }

    /// The two reports compared, or a one-line failure when no metric has data in both, or when they ran two
    /// differently named workloads (their regressions would be the difference of two workloads, not of a change).
    func compare(_ baseline: RunReport, _ current: RunReport) throws -> ComparisonReport {
        if !allowDifferentWorkloads, let a = baseline.workloadName, let b = current.workloadName, a != b {
            throw Failure.input("the baseline ran workload \"\(a)\" and the current run \"\(b)\": different workloads (--allow-different-workloads compares them anyway)")
        }
        guard let comparison = ComparisonReport(baseline: baseline, current: current, metrics: metrics.isEmpty ? Comparison.defaultMetrics : metrics,
                                                threshold: Double(threshold.dropLast())! / 100, thresholdText: threshold) else {
            throw Failure.input("no metric has data in both runs")
        }
        return comparison
    }
}

/// --snapshot-on-stall and its limits, for `record` and `run`.
struct SnapshotOnStallOptions: ParsableArguments {
    @Option(help: "Take a snapshot each time a loop reports a stall this busy, e.g. 50ms (see above).",
            transform: durationArgument)
    var snapshotOnStall: DurationValue?

    @Option(help: "With --snapshot-on-stall: the most snapshots to take (default 10).")
    var maxSnapshots: Int?

    @Option(help: "With --snapshot-on-stall: the least time between two snapshots, e.g. 2s (default 1s).", transform: durationArgument)
    var snapshotGap: DurationValue?

    var maximum: Int { maxSnapshots ?? 10 }
    var gap: Duration { (snapshotGap ?? .seconds(1)).duration }

    /// The values on their own; each command refuses the flags of its own that do not go with snapshots.
    func check() throws {
        if let snapshotOnStall, snapshotOnStall.nanoseconds <= 0 {
            throw ValidationError("--snapshot-on-stall must be longer than 0 (got \(snapshotOnStall))")
        }
        if snapshotOnStall == nil && (maxSnapshots != nil || snapshotGap != nil) {
            throw ValidationError("--max-snapshots and --snapshot-gap go with --snapshot-on-stall")
        }
        if let maxSnapshots, maxSnapshots < 1 { throw ValidationError("--max-snapshots must be at least 1 (got \(maxSnapshots))") }
    }
}

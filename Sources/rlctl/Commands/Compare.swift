import Analysis
import ArgumentParser
import Foundation

struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare two runs and fail only on a regression the noise cannot explain.",
        discussion: """
        BASELINE and CURRENT are run reports (rlctl run --repeat N --output F), summaries or trace folders. For each \
        tail metric the change of the median across repetitions gets a 95% bootstrap confidence interval; the \
        comparison fails (exit 1) only when the whole interval is past the threshold in the worse direction. \
        Ratios (loop.utilization, timer.within_tolerance) change in points, and the threshold applies to them in \
        points (10% = 10 points). A warning says when the two sides look like different workloads. \
        With a single repetition on a side there is no interval to speak of: use --repeat 5 or more.
        """
    )

    @Argument(help: "The baseline.") var baseline: String
    @Argument(help: "The current run.") var current: String

    @Option(help: "How much worse counts as a regression, e.g. 10%.")
    var threshold: String = "10%"

    @Option(parsing: .upToNextOption, help: "Metrics to compare (default: the tail latencies and utilization).")
    var metrics: [String] = []

    @Option(help: "text, json or markdown.")
    var format: SummaryFormat = .text

    @OptionGroup var analysis: AnalysisOptions

    func validate() throws {
        guard threshold.hasSuffix("%"), let value = Double(threshold.dropLast()), value.isFinite, value > 0, value < 10_000 else {
            throw ValidationError("--threshold must be a positive percentage, e.g. 10% (got \(threshold))")
        }
        for metric in metrics where Metric.named(metric) == nil {
            throw ValidationError("unknown metric \"\(metric)\" (rlctl check --list-metrics lists them)")
        }
    }

    func run() throws {
        let limit = Double(threshold.dropLast())! / 100
        let a = try loadReport(at: baseline, options: analysis.summarizerOptions)
        let b = try loadReport(at: current, options: analysis.summarizerOptions)
        let results = Comparison.compare(baseline: a, current: b, metrics: metrics.isEmpty ? Comparison.defaultMetrics : metrics, threshold: limit)
        guard !results.isEmpty else { throw Failure.input("no metric has data in both runs") }
        let regressions = results.filter(\.regressed)
        let mismatch = Comparison.workloadMismatch(baseline: a, current: b).map { "warning: these may be different workloads: \($0)" }
        if let mismatch, format != .markdown { FileHandle.standardError.write(Data((mismatch + "\n").utf8)) }
        switch format {
        case .text:
            if a.repetitions.count < 2 || b.repetitions.count < 2 {
                print("note: \(a.repetitions.count) vs \(b.repetitions.count) repetitions — intervals need several repetitions per side")
            }
            for r in results {
                let unit = Metric.named(r.metric)!.unit
                let verdict = r.regressed ? "REGRESSED" : (r.improved ? "improved" : "ok")
                print(r.metric.padded(30) + formatMetric(r.baseline, unit: unit).leftPad(10) + " → " + formatMetric(r.current, unit: unit).padded(10)
                      + " " + signed(r.change, r.inPoints).leftPad(9) + "  95% CI [\(signed(r.low, r.inPoints)), \(signed(r.high, r.inPoints))]  " + verdict)
            }
            print(regressions.isEmpty ? "no regression beyond \(threshold)" : "\(regressions.count) regression(s) beyond \(threshold)")
        case .markdown:
            print("### rlctl compare: " + (regressions.isEmpty ? "✅ no regression beyond \(threshold)" : "❌ \(regressions.count) regression(s) beyond \(threshold)"))
            print("")
            if let mismatch { print("⚠️ " + mismatch); print("") }
            print("| metric | baseline | current | change | 95% CI | |")
            print("| --- | --- | --- | --- | --- | --- |")
            for r in results {
                let unit = Metric.named(r.metric)!.unit
                print("| `\(r.metric)` | \(formatMetric(r.baseline, unit: unit)) | \(formatMetric(r.current, unit: unit)) | \(signed(r.change, r.inPoints)) | [\(signed(r.low, r.inPoints)), \(signed(r.high, r.inPoints))] | \(r.regressed ? "❌" : (r.improved ? "🟢" : "✅")) |")
            }
            print("")
            print("Repetitions: \(a.repetitions.count) baseline, \(b.repetitions.count) current.")
        case .json:
            let items = results.map { "{\"metric\":\"\($0.metric)\",\"baseline\":\($0.baseline),\"current\":\($0.current),\"change\":\(finite($0.change)),\"changeUnit\":\"\($0.inPoints ? "points" : "relative")\",\"low\":\(finite($0.low)),\"high\":\(finite($0.high)),\"regressed\":\($0.regressed)}" }
            let warning = mismatch.flatMap { try? JSONSerialization.data(withJSONObject: [$0], options: [.fragmentsAllowed]) }
                .map { ",\"warning\":" + String(decoding: $0.dropFirst().dropLast(), as: UTF8.self) } ?? ""
            print("{\"threshold\":\(limit),\"regressions\":\(regressions.count)\(warning),\"metrics\":[\(items.joined(separator: ","))]}")
        }
        if !regressions.isEmpty { throw ExitCode(Status.violation.rawValue) }
    }

    /// A change as `+12.3%` (relative) or `+4.00 pts` (points of a ratio).
    private func signed(_ value: Double, _ inPoints: Bool) -> String {
        guard inPoints else { return (value >= 0 ? "+" : "") + formatPercent(value) }
        return formatPoints(value)
    }
    private func finite(_ value: Double) -> String { value.isFinite ? "\(value)" : "null" }
}

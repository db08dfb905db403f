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
        points (10% = 10 points). Runs of two differently named workloads are refused (exit 2; \
        --allow-different-workloads compares them anyway); a warning says when the two sides look like different \
        workloads otherwise (their timers or kinds of callouts differ). \
        With a single repetition on a side there is no interval to speak of: use --repeat 5 or more.

        The machine, not the code: when both sides have the kernel view in every repetition (rlctl run and record \
        --kernel, as root), the time on the CPU per callout and per iteration is compared too. If it did not \
        regress while the wait for a CPU or the CPU-quota throttling rose, the wall-clock metrics that regressed \
        are marked "slower: the machine" and do not fail the comparison, and the report says which contention \
        explains them. A handler that really got slower moves its time on the CPU, and fails as before \
        (docs/kernel-causes.md).
        """
    )

    @Argument(help: "The baseline.") var baseline: String
    @Argument(help: "The current run.") var current: String

    @OptionGroup var comparison: ComparisonOptions

    @Option(help: "text, json or markdown.")
    var format: ComparisonReport.Format = .text

    @OptionGroup var hostOption: HostOption
    @OptionGroup var analysis: AnalysisOptions

    func run() throws {
        let a = try loadReport(at: baseline, options: analysis.summarizerOptions, host: hostOption.host)
        let b = try loadReport(at: current, options: analysis.summarizerOptions, host: hostOption.host)
        let comparison = try self.comparison.compare(a, b)
        if let warning = comparison.warning, format != .markdown { FileHandle.standardError.write(Data((warning + "\n").utf8)) }
        print(comparison.render(format))
        if comparison.regressed { throw ExitCode(Status.violation.rawValue) }
    }
}

extension ComparisonReport.Format: ExpressibleByArgument {}

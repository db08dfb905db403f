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

}

extension SummaryFormat {
    func render(_ summary: TraceSummary, title: String?) throws -> String {
        switch self {
        case .text: return SummaryReport.text(summary, title: title)
        case .json:
            do { return try SummaryReport.json(summary) } catch {
                throw Failure(message: "cannot write the summary as JSON: \(error)", status: .violation)
            }
        case .markdown: return SummaryReport.markdown(summary, title: title)
        }
    }
}

extension BuiltInWorkload: ExpressibleByArgument {}

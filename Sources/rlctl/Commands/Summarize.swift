import ArgumentParser

struct Summarize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarize a trace: latency, timer drift, wake-ups, callouts, stalls and trace health.",
        discussion: "Reads embedded-recorder traces and LTTng trace folders, streaming (constant memory)."
    )

    @Argument(help: "A trace folder (rlctl run --trace, rlctl record --output, or an LTTng session folder).")
    var trace: String

    @Option(help: "Output format: text, json or markdown.")
    var format: SummaryFormat = .text

    @OptionGroup var analysis: AnalysisOptions

    func run() throws {
        let result = try summarizeTrace(at: trace, options: analysis.summarizerOptions)
        print(format.render(result, title: format == .json ? nil : trace))
    }
}

import ArgumentParser

struct Summarize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarize a trace: latency, timer drift, wake-ups, callouts, stalls and trace health.",
        discussion: """
        Reads embedded-recorder traces and LTTng trace folders, streaming (constant memory).

        Runs are calls of Loop.run, nested ones included; each is counted with how it ended (timed out, stopped, \
        finished, returned after a source), or as "did not end" when the trace stops first (a killed program, a \
        full buffer). Wall, busy and asleep time come from the events that are there: a run cut off counts up to \
        its loop's last event, a run whose begin a flight-recorder ring overwrote counts from its loop's first. \
        The trace line says why a trace is incomplete; every figure over a window with lost events is marked (!).
        """
    )

    @Argument(help: "A trace folder (rlctl run --trace, rlctl record --output, or an LTTng session folder).")
    var trace: String

    @Option(help: "Output format: text, json or markdown.")
    var format: SummaryFormat = .text

    @OptionGroup var analysis: AnalysisOptions

    func run() throws {
        let result = try summarizeTrace(at: trace, options: analysis.summarizerOptions)
        print(try format.render(result, title: format == .json ? nil : trace))
    }
}

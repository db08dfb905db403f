import Analysis
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

        A folder holding several hosts' traces (the output folder of an lttng-relayd that hosts streamed to with \
        rlctl record --relayd, or any folder of traces from different machines or sessions) is summarized per \
        host: a table of every host, then each host's summary. Hosts are told apart by the hostname and session \
        name each trace's metadata carries; a host that sent several sessions shows as HOST/SESSION. A host whose \
        trace cannot be read (a relay daemon that died mid-session) is listed as unreadable, the others are still \
        summarized, and the exit status is 2. --host NAME summarizes one host alone.
        """
    )

    @Argument(help: "A trace folder (rlctl run --trace, rlctl record --output, or an LTTng session folder).")
    var trace: String

    @Option(help: "Output format: text, json or markdown.")
    var format: SummaryFormat = .text

    @OptionGroup var briefOption: BriefOption

    @OptionGroup var hostOption: HostOption
    @OptionGroup var analysis: AnalysisOptions

    func run() throws {
        switch try summarizeFolder(at: trace, host: hostOption.host, options: analysis.summarizerOptions) {
        case .single(let result):
            print(try format.render(result, title: format == .json ? nil : trace + (hostOption.host.map { ", host \($0)" } ?? ""), brief: briefOption.brief))
        case .fleet(let fleet):
            print(try format.render(fleet, title: trace))
            if !fleet.unreadable.isEmpty {
                throw Failure.input("the traces of \(fleet.unreadable.map(\.name).joined(separator: ", ")) cannot be read (why: above); the other hosts are summarized")
            }
        }
    }
}

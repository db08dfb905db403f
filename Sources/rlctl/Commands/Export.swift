import ArgumentParser
import TraceReading
import Analysis
import TraceModel

extension TraceExportFormat: ExpressibleByArgument {}

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export a trace for viewers and scripts.",
        discussion: """
        chrome: trace-event JSON for Perfetto UI (open https://ui.perfetto.dev, then "Open trace file"; nothing is \
        uploaded, the page reads the file in the browser) and chrome://tracing. One track per loop thread, named after \
        its loops: a slice per callout, sleep and wait, an instant per activity; arrows from each cause to its callout \
        (click a slice, then its flow): a source's signal to its perform, a late timer's fire date to its firing, and \
        a block's or job's enqueue and a port message's send to its run, from a mark on the loop's `queued on loop N` \
        track (the trace records when they were queued, not on which thread); counters per loop \
        (utilization, backlog: items due and not yet called out) and per timer (lateness); every stall (--stall, \
        as summarize counts them) on a track of its own with its culprit, and a marker on the loop's thread; every \
        window of lost events on a track per stream, and a marker on the thread that lost them (embedded traces).

        csv and jsonl: one event per row.

        The file is written beside --output and renamed over it once whole: a failed export (a full disk, an \
        unreadable trace) leaves --output as it was. Its folder is checked before the trace is read. When the \
        trace is incomplete (events or packets lost, the recording cut off), export says so on stderr, in \
        summarize's words, even with --quiet.
        """
    )

    @Argument(help: "A trace folder.")
    var trace: String

    @Option(help: "chrome, csv or jsonl.")
    var format: TraceExportFormat

    @Option(name: .shortAndLong, help: "The file to write.")
    var output: String

    @OptionGroup var hostOption: HostOption
    @OptionGroup var analysis: AnalysisOptions
    @OptionGroup var quietOption: QuietOption

    func run() throws {
        quietOption.apply()
        try requireWritableOutputs(output)
        do {
            var reader = try TraceReaders.open(trace, host: hostOption.host)
            let count = try TraceExporter.export(&reader, format: format, to: output, options: analysis.summarizerOptions)
            let problems = SummaryReport.traceProblems(reader.health)
            wrote("\(count) events to \(output)" + (format == .chrome ? " (open it in https://ui.perfetto.dev, \"Open trace file\": read in the browser, not uploaded)" : ""))
            // Not a "wrote" line: a warning about the data, said even with --quiet.
            if !problems.isEmpty { note("the trace is INCOMPLETE: " + problems.joined(separator: "; ")) }
        } catch let error as TraceReadError {
            throw Failure.input("cannot read trace: \(error)")
        } catch let error as OutputFileError {
            throw Failure.input(error.description)
        }
    }
}

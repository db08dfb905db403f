import ArgumentParser
import TraceReading
import Analysis
import TraceModel

extension TraceExportFormat: ExpressibleByArgument {}

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export a trace for viewers and scripts.",
        discussion: "chrome: trace-event JSON for Perfetto UI (ui.perfetto.dev) and chrome://tracing; csv and jsonl: one event per row."
    )

    @Argument(help: "A trace folder.")
    var trace: String

    @Option(help: "chrome, csv or jsonl.")
    var format: TraceExportFormat

    @Option(name: .shortAndLong, help: "The file to write.")
    var output: String

    func run() throws {
        do {
            var reader = try TraceReaders.open(trace)
            let count = try TraceExporter.export(&reader, format: format, to: output)
            let health = reader.health
            print("wrote \(count) events to \(output)" + (health.isComplete ? "" : " (the trace lost \(health.eventsLost) events and \(health.packetsLost) packets)"))
        } catch let error as TraceReadError {
            throw Failure.input("cannot read trace: \(error)")
        } catch let error as ExportError {
            throw Failure.input(error.description)
        }
    }
}

import Analysis
import Foundation
import TraceReading
import Tracing

/// Reads a trace folder and summarizes it; input problems become one-line failures with exit status 2.
func summarizeTrace(at path: String, options: TraceSummarizer.Options) throws -> TraceSummary {
    do {
        var reader = try TraceReaders.open(path)
        return try TraceSummarizer.summarize(&reader, options: options)
    } catch {
        throw Failure.input("cannot read trace: \(error)")
    }
}

/// Reads `path` as a trace folder, a summary JSON (`summarize --format json`) or a run report (`run --output`).
func loadReport(at path: String, options: TraceSummarizer.Options) throws -> RunReport {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        throw Failure.input("\(path): no such file or trace folder")
    }
    if isDirectory.boolValue {
        var report = RunReport(workload: path, tracer: TraceReaders.kind(of: path).rawValue,
                               repetitions: [try summarizeTrace(at: path, options: options)])
        report.isTraceFolder = true
        return report
    }
    guard let data = FileManager.default.contents(atPath: path) else { throw Failure.input("\(path): cannot read the file") }
    let decoder = JSONDecoder()
    if let report = try? decoder.decode(RunReport.self, from: data), !report.repetitions.isEmpty { return report }
    if let summary = try? decoder.decode(TraceSummary.self, from: data) {
        return RunReport(workload: path, tracer: "summary", repetitions: [summary])
    }
    throw Failure.input("\(path): not a trace folder, a summary (rlctl summarize --format json) or a run report (rlctl run --output)")
}

/// Writes text to a file, or fails with a one-line message.
func write(_ text: String, to path: String) throws {
    do { try text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
        throw Failure.input("cannot write \(path): \(error.localizedDescription)")
    }
}

import Analysis
import Foundation

/// Reads a trace folder and summarizes it; input problems become one-line failures with exit status 2.
func summarizeTrace(at path: String, options: TraceSummarizer.Options) throws -> TraceSummary {
    do { return try TraceSummarizer.summarize(traceAt: path, options: options) } catch { throw Failure.input("\(error)") }
}

/// Reads `path` as a trace folder, a summary JSON (`summarize --format json`) or a run report (`run --output`).
func loadReport(at path: String, options: TraceSummarizer.Options) throws -> RunReport {
    do { return try RunReport.load(from: path, options: options) } catch { throw Failure.input("\(error)") }
}

/// Writes text to a file, or fails with a one-line message.
func write(_ text: String, to path: String) throws {
    do { try text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
        throw Failure.input("cannot write \(path): \(error.localizedDescription)")
    }
}

import Analysis
import Foundation

/// Reads a trace folder and summarizes it; input problems become one-line failures with exit status 2.
func summarizeTrace(at path: String, options: TraceSummarizer.Options) throws -> TraceSummary {
    do { return try TraceSummarizer.summarize(traceAt: path, options: options) } catch { throw Failure.input("\(error)") }
}

/// Summarizes a trace folder, per host when it holds several hosts' traces; input problems become one-line
/// failures with exit status 2.
func summarizeFolder(at path: String, host: String?, options: TraceSummarizer.Options) throws -> FolderSummary {
    do { return try TraceSummarizer.summarizeEach(traceAt: path, host: host, options: options) } catch { throw Failure.input("\(error)") }
}

/// Reads `path` as a trace folder, a summary JSON (`summarize --format json`) or a run report (`run --output`).
func loadReport(at path: String, options: TraceSummarizer.Options, host: String? = nil) throws -> RunReport {
    do { return try RunReport.load(from: path, options: options, host: host) } catch { throw Failure.input("\(error)") }
}

/// A budget file, or a one-line failure saying why it cannot be used.
func loadBudget(at path: String) throws -> Budget {
    guard let text = FileManager.default.contents(atPath: path).map({ String(decoding: $0, as: UTF8.self) }) else {
        throw Failure.input("\(path): no such budget file (or it cannot be read)")
    }
    do { return try Budget(text: text, file: path) } catch { throw Failure.input(error.description) }
}

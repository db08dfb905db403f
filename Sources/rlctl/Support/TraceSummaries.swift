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

/// Writes text to a file, or fails with a one-line message that says why.
func write(_ text: String, to path: String) throws {
    do { try text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
        throw Failure.input("cannot write \(path): \(whyNotWritable(path) ?? error.localizedDescription)")
    }
}

/// Why a file cannot be written at `path`, in words (Foundation's own error on Linux says "error 512").
private func whyNotWritable(_ path: String) -> String? {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return "it is a folder" }
    let parent = (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
    guard FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory), isDirectory.boolValue else { return "no folder \(parent)" }
    return access(parent, W_OK) == 0 ? nil : "no permission to write in \(parent)"
}

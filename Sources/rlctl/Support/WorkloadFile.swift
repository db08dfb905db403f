import Foundation
import TraceModel
import Workloads
import Yams

/// Reads a workload file: JSON (`.json`) or YAML (anything else).
enum WorkloadFile {
    /// Reads and checks the workload file at `path`, with `duration` (the command line's) in place of its own; an
    /// error names the file and, where it can, the line.
    static func load(_ path: String, duration: DurationValue? = nil) throws -> WorkloadSpec {
        // Through a file handle, not FileManager.contents: that refuses pipes, and `--file <(generate-workload)`
        // is one.
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
              let handle = FileHandle(forReadingAtPath: path) else {
            throw Failure.input("\(path): no such workload file (or it cannot be read)")
        }
        defer { try? handle.close() }
        let data: Data
        do { data = try handle.readToEnd() ?? Data() } catch {
            throw Failure.input("\(path): cannot read the workload file: \(error.localizedDescription)")
        }
        let isJSON = path.hasSuffix(".json")
        let text = String(decoding: data, as: UTF8.self).droppingByteOrderMark
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw Failure.input("\(path): the workload file is empty (it needs at least `elements:`; rlctl run --help shows one)")
        }
        let written = isJSON ? try WrittenValue(json: data, file: path) : try WrittenValue(yaml: text, file: path)
        if let ambiguity = written?.firstAmbiguity(file: path) { throw Failure.input(ambiguity) }
        var spec: WorkloadSpec
        do {
            spec = isJSON ? try JSONDecoder().decode(WorkloadSpec.self, from: data) : try YAMLDecoder().decode(WorkloadSpec.self, from: text)
        } catch let decoding as DecodingError {
            var error = decoding
            // JSONDecoder says only "not valid JSON", nowhere, of valid JSON holding a number its field cannot
            // (`"count": 1e99`); the same text read as YAML says which field.
            if isJSON, written != nil, context(of: error)?.codingPath.isEmpty == true {
                do { _ = try YAMLDecoder().decode(WorkloadSpec.self, from: text) } catch let located as DecodingError { error = located } catch {}
            }
            let line = context(of: error).flatMap { written?.line(at: $0.codingPath) }.map { ":\($0)" } ?? ""
            throw Failure.input("\(path)\(line): \(describe(error))")
        } catch {
            throw Failure.input("\(path): not valid \(isJSON ? "JSON" : "YAML"): \(String(describing: error).split(separator: "\n").first ?? "")")
        }
        if let duration { spec.duration = duration }
        do { try spec.validate() } catch {
            let line = error.path.isEmpty ? nil : written?.line(at: error.path.map(WrittenKey.init))
            throw Failure.input("\(path)\(line.map { ":\($0)" } ?? ""): \(error.description)")
        }
        return spec
    }

    /// A key of a written value's path: a mapping's key, or a sequence's index written as a number.
    private struct WrittenKey: CodingKey {
        let stringValue: String
        var intValue: Int? { Int(stringValue) }
        init(_ text: String) { stringValue = text }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { stringValue = "\(intValue)" }
    }

    private static func context(of error: DecodingError) -> DecodingError.Context? {
        switch error {
        case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
            return context
        @unknown default:
            return nil
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.reduce("") { path, key in
                if let index = key.intValue { return path + "[\(index)]" }
                return path.isEmpty ? key.stringValue : path + "." + key.stringValue
            }
            return keys.isEmpty ? "" : " at \(keys)"
        }
        switch error {
        case .dataCorrupted(let context): return context.debugDescription + path(context)
        case .keyNotFound(let key, let context): return "missing \"\(key.stringValue)\"" + path(context)
        case .typeMismatch(let type, let context): return "expected \(type)" + path(context) + " (\(context.debugDescription))"
        case .valueNotFound(let type, let context): return "missing \(type) value" + path(context)
        @unknown default: return "\(error)"
        }
    }
}

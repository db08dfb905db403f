import Foundation
import TraceModel
import Workloads
import Yams

/// Reads a workload file: JSON (`.json`) or YAML (anything else).
enum WorkloadFile {
    static func load(_ path: String) throws -> WorkloadSpec {
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
        let written = isJSON ? try WrittenValue(json: data, file: path) : try WrittenValue(yaml: text, file: path)
        if let ambiguity = written?.firstAmbiguity(file: path) { throw Failure.input(ambiguity) }
        do {
            if isJSON {
                return try JSONDecoder().decode(WorkloadSpec.self, from: data)
            }
            return try YAMLDecoder().decode(WorkloadSpec.self, from: text)
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

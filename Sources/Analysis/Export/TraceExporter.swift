import Glibc
import TraceModel

/// Streams a trace to a file for viewers and scripts, in constant memory.
public enum TraceExportFormat: String, CaseIterable, Sendable {
    /// Chrome trace-event JSON: opens in Perfetto UI and chrome://tracing.
    case chrome
    case csv
    case jsonl
}

public struct TraceExporter {
    /// Writes every event of `reader` to `path`; returns how many events were written.
    @discardableResult
    public static func export(_ reader: inout some TraceEventReader, format: TraceExportFormat, to path: String) throws -> UInt64 {
        let out = try BufferedFile(path: path)
        var count: UInt64 = 0
        switch format {
        case .chrome:
            var chrome = ChromeTraceWriter(out: out)
            while let event = try reader.next() {
                chrome.write(event)
                count += 1
            }
            chrome.finish(health: reader.health)
        case .csv:
            out.write("timestamp_ns,thread_id,event,loop_id,mode,iteration,depth,id,kind,scheduled_ns,tolerance_ns,interval_ns,missed,signaled_ns,enqueued_ns,slept_ns,reason,result,label\n")
            while let event = try reader.next() {
                out.write(csvLine(event))
                count += 1
            }
        case .jsonl:
            while let event = try reader.next() {
                out.write(jsonLine(event))
                count += 1
            }
        }
        try out.close()
        return count
    }

    // ===== CSV and JSONL: one row per event, empty where a field does not apply =====

    struct Row {
        var loop = "", mode = "", iteration = "", depth = "", id = "", kind = "", scheduled = "", tolerance = ""
        var interval = "", missed = "", signaled = "", enqueued = "", slept = "", reason = "", result = "", label = ""
    }

    static func row(_ event: TraceEvent) -> Row {
        var r = Row()
        switch event.payload {
        case .activity(_, let p):
            r.loop = "\(p.loopID)"; r.mode = p.mode; r.iteration = "\(p.iteration)"; r.depth = "\(p.depth)"
        case .runBegin(let loop, let mode, _, _):
            r.loop = "\(loop)"; r.mode = mode
        case .runEnd(let loop, let mode, let result):
            r.loop = "\(loop)"; r.mode = mode; r.result = result.description
        case .timerFireBegin(let loop, let id, let scheduled, let tolerance, let interval, let missed):
            r.loop = "\(loop)"; r.id = "\(id)"; r.scheduled = "\(scheduled)"; r.tolerance = "\(tolerance)"
            r.interval = "\(interval)"; r.missed = "\(missed)"
        case .timerFireEnd(let loop, let id), .sourcePerformEnd(let loop, let id), .blockEnd(let loop, let id), .observerEnd(let loop, let id):
            r.loop = "\(loop)"; r.id = "\(id)"
        case .sourceSignal(let id):
            r.id = "\(id)"
        case .sourcePerformBegin(let loop, let id, let kind, _, let signaled):
            r.loop = "\(loop)"; r.id = "\(id)"; r.kind = kind.description; r.signaled = "\(signaled)"
        case .blockBegin(let loop, let id, let enqueued):
            r.loop = "\(loop)"; r.id = "\(id)"; r.enqueued = "\(enqueued)"
        case .observerBegin(let loop, let id, let activity):
            r.loop = "\(loop)"; r.id = "\(id)"; r.kind = activity.description
        case .wakeUp(let loop, let reason, let slept):
            r.loop = "\(loop)"; r.reason = reason.description; r.slept = "\(slept)"
        case .loopCreate(let loop, _, let name):
            r.loop = "\(loop)"; r.label = name
        case .itemLabel(let id, let kind, let label):
            r.id = "\(id)"; r.kind = kind.description; r.label = label
        }
        return r
    }

    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return text }
        return "\"" + text.replacingAll("\"", with: "\"\"") + "\""
    }

    static func csvLine(_ event: TraceEvent) -> String {
        let r = row(event)
        let fields = ["\(event.timestamp)", "\(event.threadID)", event.payload.eventName, r.loop, csvField(r.mode), r.iteration,
                      r.depth, r.id, r.kind, r.scheduled, r.tolerance, r.interval, r.missed, r.signaled, r.enqueued,
                      r.slept, r.reason, r.result, csvField(r.label)]
        return fields.joined(separator: ",") + "\n"
    }

    static func jsonLine(_ event: TraceEvent) -> String {
        let r = row(event)
        var parts = ["\"timestamp_ns\":\(event.timestamp)", "\"thread_id\":\(event.threadID)", "\"event\":\"\(event.payload.eventName)\""]
        let numeric: [(String, String)] = [("loop_id", r.loop), ("iteration", r.iteration), ("depth", r.depth), ("id", r.id),
                                           ("scheduled_ns", r.scheduled), ("tolerance_ns", r.tolerance), ("interval_ns", r.interval),
                                           ("missed", r.missed), ("signaled_ns", r.signaled), ("enqueued_ns", r.enqueued), ("slept_ns", r.slept)]
        for (key, value) in numeric where !value.isEmpty { parts.append("\"\(key)\":\(value)") }
        let strings: [(String, String)] = [("mode", r.mode), ("kind", r.kind), ("reason", r.reason), ("result", r.result), ("label", r.label)]
        for (key, value) in strings where !value.isEmpty { parts.append("\"\(key)\":\(jsonString(value))") }
        return "{" + parts.joined(separator: ",") + "}\n"
    }
}

/// A JSON string literal.
func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 {
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: Character(target), omittingEmptySubsequences: false).joined(separator: replacement)
    }
}

/// A buffered output file (stdio): one syscall per 64 KiB, not per event.
final class BufferedFile {
    private let file: UnsafeMutablePointer<FILE>
    let path: String

    init(path: String) throws {
        guard let file = fopen(path, "w") else {
            throw ExportError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        setvbuf(file, nil, _IOFBF, 1 << 16)
        self.file = file
        self.path = path
    }

    func write(_ text: String) {
        var text = text
        text.withUTF8 { buffer in _ = fwrite(buffer.baseAddress, 1, buffer.count, file) }
    }

    func close() throws {
        let failed = ferror(file) != 0
        let closed = fclose(file) == 0
        if failed || !closed { throw ExportError("writing \(path) failed: \(String(cString: strerror(errno)))") }
    }
}

public struct ExportError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

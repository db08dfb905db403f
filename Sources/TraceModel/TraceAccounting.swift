/// What a recording says it wrote, in its end file (``TraceSchema/endFileName``): readers compare what they read
/// with it, so a stream file that was deleted, emptied or cut short reads as a loss, never as a complete trace.
///
/// The end file is `key = value;` lines, written once when the recording completes:
///
/// ```
/// events_recorded = 47951;
/// events_lost = 0;
/// stream-6143 = 46951 events, 2015145 bytes;
/// stream-6146 = 1000 events, 17720 bytes;
/// ```
///
/// Every key is optional (older recorders wrote only the first two, a snapshot knows the bytes of its streams but
/// not their events), and what is not there is not checked.
public struct TraceAccounting: Sendable, Equatable {
    public struct Stream: Sendable, Equatable {
        /// Events written into the stream's packets, when the writer knows it.
        public var events: UInt64?
        public var bytes: UInt64

        public init(events: UInt64?, bytes: UInt64) {
            self.events = events
            self.bytes = bytes
        }
    }

    /// Events written into packets, all streams.
    public var eventsRecorded: UInt64?
    /// Events the recorder dropped (full buffers, threads without a buffer): written down, already in the
    /// packets' own counts.
    public var eventsLost: UInt64?
    /// By stream file name (`stream-6143`).
    public var streams: [String: Stream] = [:]

    public init(eventsRecorded: UInt64? = nil, eventsLost: UInt64? = nil, streams: [String: Stream] = [:]) {
        self.eventsRecorded = eventsRecorded
        self.eventsLost = eventsLost
        self.streams = streams
    }

    /// An end file with more streams than this is taken for damage rather than believed (a recording has one
    /// stream per thread that emitted).
    public static let maxStreams = 1 << 16

    /// The end file's text.
    public var text: String {
        var lines: [String] = []
        if let eventsRecorded { lines.append("events_recorded = \(eventsRecorded);") }
        if let eventsLost { lines.append("events_lost = \(eventsLost);") }
        for name in streams.keys.sorted() {
            let stream = streams[name]!
            let events = stream.events.map { "\($0) events, " } ?? ""
            lines.append("\(name) = \(events)\(stream.bytes) bytes;")
        }
        return lines.map { $0 + "\n" }.joined()
    }

    /// Reads an end file's text; lines it does not know are left alone (a snapshot's `snapshot_written_at`, the
    /// wait recorder's `complete`). A known key with a value that does not parse is an error, naming the line:
    /// the file is the trace's own accounting, and a damaged one must not be taken for a clean one.
    public init(parsing text: String) throws(TraceAccountingError) {
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.trimmingSpaces
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingSpaces
            guard key == "events_recorded" || key == "events_lost" || key.hasPrefix("stream-") else { continue }
            guard line.hasSuffix(";") else { throw TraceAccountingError(line: index + 1, reason: "\(key) has no closing ';'") }
            let value = line[line.index(after: equals)..<line.index(before: line.endIndex)].trimmingSpaces
            switch key {
            case "events_recorded", "events_lost":
                guard let number = UInt64(value) else {
                    throw TraceAccountingError(line: index + 1, reason: "\(key) is not a count: \"\(value)\"")
                }
                if key == "events_recorded" { eventsRecorded = number } else { eventsLost = number }
            default:
                guard streams.count < Self.maxStreams else {
                    throw TraceAccountingError(line: index + 1, reason: "more than \(Self.maxStreams) streams")
                }
                guard streams[key] == nil else { throw TraceAccountingError(line: index + 1, reason: "\(key) is listed twice") }
                streams[key] = try Self.stream(value, key: key, line: index + 1)
            }
        }
    }

    /// `N events, M bytes` or `M bytes`.
    private static func stream(_ value: String, key: String, line: Int) throws(TraceAccountingError) -> Stream {
        var events: UInt64?
        var bytes: UInt64?
        for part in value.split(separator: ",") {
            let words = part.split(separator: " ")
            guard words.count == 2, let number = UInt64(words[0]) else {
                throw TraceAccountingError(line: line, reason: "\(key): expected \"N events, M bytes\", got \"\(value)\"")
            }
            switch words[1] {
            case "events" where events == nil: events = number
            case "bytes" where bytes == nil: bytes = number
            default: throw TraceAccountingError(line: line, reason: "\(key): expected \"N events, M bytes\", got \"\(value)\"")
            }
        }
        guard let bytes else { throw TraceAccountingError(line: line, reason: "\(key) does not say how many bytes it holds") }
        return Stream(events: events, bytes: bytes)
    }
}

public struct TraceAccountingError: Error, Equatable {
    public var line: Int
    public var reason: String

    public init(line: Int, reason: String) {
        self.line = line
        self.reason = reason
    }
}

import Glibc
import TraceModel

/// Reads a trace written by ``EmbeddedRecorder`` (format: ``TraceSchema``), in timestamp order across threads.
///
/// Events are decoded by the trace's own metadata (its event declarations), matched to the schema by event and
/// field names: fields this build does not know are skipped, events it does not know are skipped and counted in
/// ``TraceHealth/eventsSkipped``. A known event without a field the model needs, or with a field of a type the
/// format cannot hold, is a ``TraceReadError`` naming the event and the field when such an event is met.
///
/// Streaming: it holds one packet per thread stream, whatever the trace size. Every field is bounds-checked:
/// a truncated or corrupt file gives a ``TraceReadError`` naming the file and byte offset, never a crash.
/// Lost events (each packet's `events_discarded`) and lost packets (gaps in `packet_seq_num`) go into
/// ``health``.
public struct EmbeddedTraceReader: TraceEventReader {
    public let path: String
    public private(set) var health = TraceHealth()
    private var streams: [StreamCursor] = []
    /// Metadata larger than this is taken for corruption (today's is about 6 KB).
    static let maxMetadataSize = 16 << 20
    /// Indices into `streams`, a min-heap on each stream's next timestamp.
    private var heap: [Int] = []
    /// What the recording's end file says it wrote, checked against each stream as it ends and against the
    /// whole trace at the end; nil for a trace without one (cut off, or written before it existed).
    private var accounting: TraceAccounting?
    /// Streams still being read; the whole-trace count is checked when the last one ends.
    private var streamsOpen = 0
    /// Events already counted as lost by the per-stream checks, so the whole-trace check does not count them twice.
    private var eventsMissingFromStreams: UInt64 = 0
    /// With metadata that renamed a schema event: the loss window that counts events of unknown kinds, which are
    /// then lost, not a newer recorder's events to skip.
    private var unknownEventsAreLost: Int?
    /// An end file larger than this is taken for damage (a recording of 65536 threads writes about 3 MB).
    static let maxEndFileSize = 16 << 20

    /// Whether `path` looks like an embedded-recorder trace folder (its metadata names the recorder).
    public static func recognizes(path: String) -> Bool {
        guard let head = try? readPrefix(of: path + "/metadata", bytes: 4096) else { return false }
        return head.contains("tracer_name = \"rlctl-recorder\"")
    }

    public init(path: String) throws(TraceReadError) {
        self.path = path
        let (uuid, plan, head) = try Self.decodingSetUp(path)

        // A recorder that writes an end file and did not write it was stopped by its process's death: the last
        // packet of a stream may be cut short, and is then left out rather than taken for corruption.
        if Self.value(of: "rlctl_end_file", in: head) != nil {
            var isDirectory = false
            health.recordingCutOff = !Self.exists(path + "/" + TraceSchema.endFileName, isDirectory: &isDirectory)
            if health.recordingCutOff {
                health.writeFailure = Self.writeFailure(in: path)
            } else {
                accounting = try Self.accounting(path + "/" + TraceSchema.endFileName)
            }
        }
        if !plan.undeclaredSchemaEvents.isEmpty {
            let names = TraceSchema.someNames(plan.undeclaredSchemaEvents)
            health.damage.append("the metadata declares events this schema does not know and lacks the schema's \(names) (renamed: damaged metadata); events of unknown kinds are counted as lost")
            unknownEventsAreLost = health.lossWindows.count
            health.noteLossWindow(.init(stream: TraceHealth.mergedLossStream, from: 0, to: .max, events: 0))
        }
        let names = try Self.streamFiles(in: path)
        for (name, written) in (accounting?.streams ?? [:]).sorted(by: { $0.key < $1.key }) where !names.contains(name) {
            noteMissing(stream: name, events: written.events, what: "is missing (it held \(written.bytes) bytes)", after: 0)
        }
        for name in names {
            // A stream file shorter than its recording wrote was cut short afterwards: its last packet may be cut,
            // and what is missing is a loss (counted when the stream ends), not a reason to read nothing.
            let cutShort = accounting?.streams[name].map { (CTFTraceFolders.fileSize(path + "/" + name) ?? 0) < $0.bytes } ?? false
            let cursor = try StreamCursor(path: path + "/" + name, uuid: uuid, plan: plan,
                                          mayEndMidPacket: health.recordingCutOff || cutShort)
            streams.append(cursor)
        }
        streamsOpen = streams.count
        for index in streams.indices {
            if try streams[index].advance(health: &health) { push(index) } else { streamEnded(index) }
        }
        if streams.isEmpty { allStreamsEnded() }
    }

    /// The end file's accounting; a damaged one is an error naming its line.
    private static func accounting(_ endFile: String) throws(TraceReadError) -> TraceAccounting {
        let text = try readWhole(endFile, limit: maxEndFileSize)
        do {
            return try TraceAccounting(parsing: text)
        } catch {
            throw TraceReadError(path: endFile, reason: "line \(error.line): \(error.reason) (the recording's own accounting is damaged)")
        }
    }

    // ===== the trace's own accounting =====

    /// A stream that ended: what it held is checked against what the end file says was written to it.
    private mutating func streamEnded(_ index: Int) {
        let cursor = streams[index]
        if let written = accounting?.streams[cursor.fileName] {
            if let events = written.events, cursor.eventsDecoded < events {
                noteMissing(stream: cursor.fileName, events: events - cursor.eventsDecoded,
                            what: "holds \(cursor.eventsDecoded) of its \(events) events (\(cursor.fileSize) of \(written.bytes) bytes)",
                            after: cursor.lastEventTimestamp)
            } else if written.events == nil, cursor.fileSize < written.bytes {
                noteMissing(stream: cursor.fileName, events: nil, what: "holds \(cursor.fileSize) of its \(written.bytes) bytes",
                            after: cursor.lastEventTimestamp)
            }
        }
        streamsOpen -= 1
        if streamsOpen == 0 { allStreamsEnded() }
    }

    /// Every stream ended: the events read are checked against the recording's total, for what no stream line
    /// accounts for (an end file of an older recorder, a stream the end file does not list).
    private mutating func allStreamsEnded() {
        guard let recorded = accounting?.eventsRecorded else { return }
        let decoded = streams.reduce(UInt64(0)) { $0 &+ $1.eventsDecoded }
        let explained = decoded.addingLoss(eventsMissingFromStreams)
        guard explained < recorded else { return }
        let missing = recorded - explained
        health.damage.append("the trace holds \(decoded) of the \(recorded) events its recording wrote")
        health.eventsLost = health.eventsLost.addingLoss(missing)
        health.noteLossWindow(.init(stream: TraceHealth.mergedLossStream, from: 0, to: .max, events: missing))
    }

    /// A stream's events that the end file says were written and the file does not hold: lost after `after` (its
    /// last event read), on that thread only. An unknown count is at least one.
    private mutating func noteMissing(stream: String, events: UInt64?, what: String, after: UInt64) {
        health.damage.append("\(stream) \(what)")
        let count = events ?? 1
        if let events { eventsMissingFromStreams = eventsMissingFromStreams.addingLoss(events) }
        health.eventsLost = health.eventsLost.addingLoss(count)
        let thread = stream.dropFirst("stream-".count).prefix { $0 != "-" }
        health.noteLossWindow(.init(stream: Int32(thread).map { "tid \($0)" } ?? stream, from: after, to: .max, events: count))
    }

    /// The trace's uuid and how to decode its events, from its metadata (checked: an rlctl recorder trace of a
    /// format version this build reads), and the metadata's head (its trace-wide settings).
    static func decodingSetUp(_ path: String) throws(TraceReadError) -> (uuid: [UInt8], plan: DecodingPlan, head: String) {
        let metadataPath = path + "/metadata"
        guard let head = try? Self.readPrefix(of: metadataPath, bytes: 8192) else {
            var isDirectory = false
            if !Self.exists(path, isDirectory: &isDirectory) {
                throw TraceReadError(path: path, reason: "no such trace (the path does not exist)")
            }
            throw TraceReadError(path: metadataPath, reason: "missing or unreadable: not a trace folder")
        }
        guard head.hasPrefix("/* CTF 1.8 */"), head.contains("tracer_name = \"rlctl-recorder\"") else {
            throw TraceReadError(path: metadataPath, offset: 0, reason: "not an rlctl recorder trace (no recorder metadata header)")
        }
        guard let version = Self.value(of: "rlctl_trace_format", in: head), let number = Int(version) else {
            throw TraceReadError(path: metadataPath, reason: "no rlctl_trace_format version in the metadata")
        }
        guard number == TraceSchema.formatVersion else {
            throw TraceReadError(path: metadataPath, reason: "trace format version \(number) is not supported (this rlctl reads version \(TraceSchema.formatVersion))")
        }
        guard let uuidText = Self.value(of: "uuid", in: head).map({ $0.trimmingQuotes }), let uuid = Self.parseUUID(uuidText) else {
            throw TraceReadError(path: metadataPath, reason: "no valid trace uuid in the metadata")
        }

        // The whole metadata: the event declarations follow the header.
        let metadata = try Self.readWhole(metadataPath, limit: Self.maxMetadataSize)
        let plan = try DecodingPlan(TraceMetadataEvents(parsing: metadata, path: metadataPath), path: metadataPath)
        return (uuid, plan, head)
    }

    public mutating func next() throws(TraceReadError) -> TraceEvent? {
        while let top = heap.first {
            let event = try streams[top].decodeCurrent()
            popTop()
            if try streams[top].advance(health: &health) { push(top) } else { streamEnded(top) }
            if let event {
                health.eventsRead += 1
                return event
            }
            if let window = unknownEventsAreLost {
                health.eventsLost = health.eventsLost.addingLoss(1)
                health.lossWindows[window].events += 1
            } else {
                health.eventsSkipped += 1
            }
        }
        return nil
    }

    // ===== the merge heap =====

    private func less(_ a: Int, _ b: Int) -> Bool {
        let ta = streams[a].currentTimestamp, tb = streams[b].currentTimestamp
        return ta < tb || (ta == tb && a < b)
    }

    private mutating func push(_ index: Int) {
        heap.append(index)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count && less(heap[left], heap[smallest]) { smallest = left }
            if right < heap.count && less(heap[right], heap[smallest]) { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    // ===== files =====

    static func readPrefix(of path: String, bytes: Int) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TraceReadError(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: bytes)
        let n = read(fd, &buffer, bytes)
        guard n >= 0 else { throw TraceReadError(path: path, reason: String(cString: strerror(errno))) }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }

    /// The file's text, at most `limit` bytes (more is an error).
    static func readWhole(_ path: String, limit: Int) throws(TraceReadError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TraceReadError(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw TraceReadError(path: path, reason: String(cString: strerror(errno)))
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
            guard bytes.count <= limit else { throw TraceReadError(path: path, reason: "larger than \(limit >> 20) MiB: not trace metadata") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func exists(_ path: String, isDirectory: inout Bool) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
        return true
    }

    /// The errno text of the recording's write-failure marker, if it left one.
    static func writeFailure(in path: String) -> String? {
        let prefix = TraceSchema.writeFailurePrefix
        let code = (try? names(in: path))?.lazy.compactMap { $0.hasPrefix(prefix) ? Int32($0.dropFirst(prefix.count)) : nil }.first
        return code.map { String(cString: strerror($0)) }
    }

    static func streamFiles(in path: String) throws(TraceReadError) -> [String] {
        try names(in: path).filter { $0.hasPrefix("stream-") }.sorted()
    }

    /// Every name in the folder at `path`.
    private static func names(in path: String) throws(TraceReadError) -> [String] {
        guard let dir = opendir(path) else {
            throw TraceReadError(path: path, reason: "cannot list the trace folder: \(String(cString: strerror(errno)))")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            names.append(withUnsafeBytes(of: entry.pointee.d_name) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) })
        }
        return names
    }

    /// The value in a TSDL `name = value;` line (first occurrence).
    static func value(of key: String, in text: String) -> String? {
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingSpaces
            guard trimmed.hasPrefix(key + " ") || trimmed.hasPrefix(key + "=") else { continue }
            guard let equals = trimmed.firstIndex(of: "="), let semicolon = trimmed.lastIndex(of: ";") , equals < semicolon else { continue }
            return String(trimmed[trimmed.index(after: equals)..<semicolon]).trimmingSpaces
        }
        return nil
    }

    static func parseUUID(_ text: String) -> [UInt8]? {
        let hex = text.filter { $0 != "-" }
        guard hex.count == 32 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}

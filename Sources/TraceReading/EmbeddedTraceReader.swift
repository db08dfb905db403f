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
        }
        let names = try Self.streamFiles(in: path)
        for name in names {
            let cursor = try StreamCursor(path: path + "/" + name, uuid: uuid, plan: plan, mayEndMidPacket: health.recordingCutOff)
            streams.append(cursor)
        }
        for index in streams.indices {
            if try streams[index].advance(health: &health) { push(index) }
        }
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
            if try streams[top].advance(health: &health) { push(top) }
            if let event {
                health.eventsRead += 1
                return event
            }
            health.eventsSkipped += 1
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

    static func streamFiles(in path: String) throws(TraceReadError) -> [String] {
        guard let dir = opendir(path) else {
            throw TraceReadError(path: path, reason: "cannot list the trace folder: \(String(cString: strerror(errno)))")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix("stream-") { names.append(name) }
        }
        return names.sorted()
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

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    var trimmingQuotes: String {
        var text = String(self)
        if text.hasPrefix("\"") { text.removeFirst() }
        if text.hasSuffix("\"") { text.removeLast() }
        return text
    }
}

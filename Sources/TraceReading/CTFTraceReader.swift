import CBabeltrace2
import Foundation
import Glibc
import TraceModel

/// Reads CTF 1.8 traces with `runloop` events through libbabeltrace2: LTTng session output and any other CTF
/// trace whose events are named `runloop:<event>` or `<event>` with the provider's field names (the embedded
/// recorder's traces among them).
///
/// ```swift
/// var reader = try CTFTraceReader(path: "/tmp/my-session")      // an LTTng output folder, or a trace folder
/// while let event = try reader.next() { … }
/// print(reader.health)                                          // discarded events and packets, never hidden
/// ```
///
/// - The path may be an LTTng session's output folder: every CTF trace below it (a folder with a `metadata`
///   file, such as `ust/uid/0/64-bit`) is read, all merged into one timestamp-ordered sequence (babeltrace2's
///   muxer).
/// - Events are mapped by event name and field names, not by position; other events are skipped. The thread
///   is the `vtid` context field (LTTng's `add-context -t vtid`), else a packet-context `tid`, else 0.
///   Timestamps are the clock's value in ns (CLOCK_MONOTONIC for LTTng and the recorder), without its offset.
/// - Discarded-events and discarded-packets notifications go into ``health`` with their time window.
/// - A missing path, a folder without a trace, or a truncated or corrupt trace throws a ``TraceReadError``
///   naming the file (and byte offset when known), with babeltrace2's explanation; babeltrace2 prints nothing.
/// - Reading is incremental: one batch of messages is in memory at a time.
/// - libbabeltrace2 runs in a child process (this executable, started again with `RLCTL_CTF_READER_CHILD=1`;
///   `CBabeltrace2` takes over before `main`) and sends its batches through a pipe: libbabeltrace2 2.0 aborts
///   on some corrupt traces, and that must be an error here, not a crash. Two checks it lacks (a truncated
///   packetized metadata file, a packet index pointing past its stream) are made before it starts.
/// - Built without libbabeltrace2 (see `docs/lttng.md`), `init` throws a `TraceReadError` saying so.
///
/// A reader is used from one thread at a time; readers on different threads are independent.
public final class CTFTraceReader: TraceEventReader {
    /// Whether this build can read CTF traces (libbabeltrace2 was found at build time and
    /// `RLCTL_DISABLE_BABELTRACE2` was not set).
    public static var isAvailable: Bool { rl_ctf_available() != 0 }

    private static let unavailableReason = "rlctl was built without libbabeltrace2, so it cannot read CTF (LTTng) traces: install libbabeltrace2-dev and babeltrace2 (scripts/install-deps.sh) and rebuild"

    /// The path the reader was opened with.
    public let path: String
    /// The trace folders being read (absolute paths).
    public let traceDirectories: [String]
    public private(set) var health = TraceHealth()

    private var handle: OpaquePointer?
    private var records: UnsafePointer<rl_ctf_record>?
    private var recordCount = 0
    private var position = 0
    private var finished = false
    private var failure: TraceReadError?
    fileprivate var texts = TextCache()
    private var lossCounters = LossCounters()

    /// How long babeltrace2 may go without producing anything before the read is abandoned with an error.
    public let stallTimeout: Duration

    /// Opens the trace(s) at `path`: a trace folder, a folder above trace folders, or a `metadata` file.
    /// - Parameter stallTimeout: how long decoding may make no progress (babeltrace2 runs in a child process,
    ///   which is stopped then); generous by default, since opening a large trace without an index takes time.
    public convenience init(path: String, stallTimeout: Duration = .seconds(120)) throws(TraceReadError) {
        guard Self.isAvailable else {
            throw TraceReadError(path: path, reason: Self.unavailableReason)
        }
        try self.init(directories: try CTFTraceFolders.find(at: path), reportedPath: path, stallTimeout: stallTimeout)
    }

    /// Opens the given trace folders (``CTFTraceFolders/find(at:)``'s, or a subset: one host's, ``TraceOrigins``),
    /// merged in timestamp order; errors name `reportedPath`.
    public init(directories: [String], reportedPath: String, stallTimeout: Duration = .seconds(120)) throws(TraceReadError) {
        self.path = reportedPath
        self.stallTimeout = stallTimeout
        guard Self.isAvailable else {
            throw TraceReadError(path: reportedPath, reason: Self.unavailableReason)
        }
        guard !directories.isEmpty else { throw TraceReadError(path: reportedPath, reason: "no CTF trace folder given") }
        traceDirectories = directories
        for directory in traceDirectories {
            try CTFPreflight.check(traceDirectory: directory, noting: &health)
        }
        handle = try Self.open(traceDirectories, reportedPath: reportedPath, stallTimeout: stallTimeout)
    }

    deinit {
        rl_ctf_reader_close(handle)
    }

    /// The next `runloop` event in timestamp order, nil at the end.
    public func next() throws(TraceReadError) -> TraceEvent? {
        while true {
            if let event = try nextBuffered() { return event }
            if let failure { throw failure }
            if finished { return nil }
            fetch()
        }
    }

    /// The next event of the batch in hand (losses on the way accounted), nil when the batch is used up.
    private func nextBuffered() throws(TraceReadError) -> TraceEvent? {
        while position < recordCount, let records {
            let record = records[position]
            position += 1
            if record.kind == RL_CTF_RECORD_EVENT.rawValue {
                do {
                    let event = try decode(record)
                    health.eventsRead += 1
                    return event
                } catch {
                    failure = error    // a corrupt trace stays unreadable from here on
                    throw error
                }
            }
            account(loss: record)
        }
        return nil
    }

    // ===== batches =====

    private func fetch() {
        records = nil
        recordCount = 0
        position = 0
        var batch: UnsafePointer<rl_ctf_record>?
        var count = 0
        switch rl_ctf_reader_next(handle, &batch, &count) {
        case 1:
            records = batch
            recordCount = count
        case 0:
            finished = true
        default:
            let message = rl_ctf_reader_error(handle).map { String(cString: $0) } ?? "cannot read the trace"
            failure = diagnoseReadFailure(message)
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? 1 : Int32.max }
        return Int32(clamping: max(1, scaled + attoseconds / 1_000_000_000_000_000))
    }

    private static func open(_ directories: [String], reportedPath: String, stallTimeout: Duration) throws(TraceReadError) -> OpaquePointer {
        let paths: [UnsafePointer<CChar>?] = directories.map { UnsafePointer(strdup($0)) }
        defer { for path in paths { free(UnsafeMutablePointer(mutating: path)) } }
        var error: UnsafeMutablePointer<CChar>?
        let handle = paths.withUnsafeBufferPointer {
            rl_ctf_reader_open($0.baseAddress, $0.count, milliseconds(stallTimeout), &error)
        }
        if let handle { return handle }
        let message = error.map { String(cString: $0) } ?? "cannot open the trace"
        rl_ctf_free_string(error)
        throw locate(clean(message), directories: directories, reportedPath: reportedPath, stallTimeout: stallTimeout)
    }

    // ===== losses =====

    private func account(loss record: rl_ctf_record) {
        let stream = texts.string(record.text, Int(record.text_length))
        let packets = record.kind == RL_CTF_RECORD_DISCARDED_PACKETS.rawValue
        // A tracer that lost an unknown number of events lost at least one: never report a complete trace.
        let count = record.count_known != 0 ? lossCounters.newLoss(stream: stream, packets: packets, delta: record.values.0) : 1
        guard count > 0 else { return }
        let from = record.has_time != 0 ? record.timestamp : 0
        let to = record.has_time != 0 ? record.end_timestamp : 0
        if packets {
            health.packetsLost = health.packetsLost.addingLoss(count)
            health.noteLossWindow(.init(stream: stream, from: from, to: to, events: 0))
        } else {
            health.eventsLost = health.eventsLost.addingLoss(count)
            health.noteLossWindow(.init(stream: stream, from: from, to: to, events: count))
        }
    }

    // ===== events =====

    /// A record's fields, by schema position (rl_ctf_reader.h): integers in `values`, strings and arrays as offsets
    /// into the batch's text.
    private struct RecordFields: SchemaFieldValues {
        let record: rl_ctf_record
        unowned(unsafe) let reader: CTFTraceReader

        @inline(__always)
        func integer(_ field: Int) -> UInt64 {
            withUnsafeBytes(of: record.values) { $0.load(fromByteOffset: field * 8, as: UInt64.self) }
        }

        mutating func string(_ field: Int) -> String {
            let offset = integer(field)
            guard let text = record.text, offset < record.text_length else { return "" }
            let start = text + Int(offset)
            return reader.texts.string(start, strnlen(start, Int(record.text_length - offset)))
        }

        /// An array's 64-bit words in the text: its count, then its elements (rl_ctf_reader.c checked the length).
        private func word(_ field: Int, _ index: Int) -> UInt64 {
            let offset = Int(integer(field)) + index * 8
            guard let text = record.text, offset + 8 <= Int(record.text_length) else { return 0 }
            return UnsafeRawPointer(text).loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        }

        func count(_ field: Int) -> Int { Int(truncatingIfNeeded: word(field, 0)) }

        func element(_ field: Int, _ index: Int) -> UInt64 { word(field, 1 + index) }
    }

    private func decode(_ record: rl_ctf_record) throws(TraceReadError) -> TraceEvent {
        guard let id = TraceSchema.EventID(rawValue: record.event) else {
            throw TraceReadError(path: reportedDirectory, reason: "internal error: unknown record event \(record.event)")
        }
        var fields = RecordFields(record: record, reader: self)
        do {
            return TraceEvent(timestamp: record.timestamp, threadID: record.tid, processID: record.pid,
                              payload: try TraceEventDecoding.payload(id, &fields))
        } catch {
            // src.ctf.fs names each stream after its data file.
            let stream = texts.string(record.stream, Int(record.stream_length))
            throw TraceReadError(path: CTFTraceFolders.isRegularFile(stream) ? stream : reportedDirectory,
                                 reason: "corrupt event runloop:\(id.description.name) at \(record.timestamp) ns (thread \(record.tid)): \(error.describe(id))")
        }
    }

    /// The folder to name when an error is about the trace as a whole.
    private var reportedDirectory: String {
        traceDirectories.count == 1 ? traceDirectories[0] : path
    }

    // ===== errors =====

    /// Names the file a read error is about.
    private func diagnoseReadFailure(_ message: String) -> TraceReadError {
        Self.locate(Self.clean(message), directories: traceDirectories, reportedPath: path, stallTimeout: stallTimeout)
    }

    /// The error for a babeltrace2 failure, naming the most specific file: the one babeltrace2 mentions; the
    /// metadata when src.ctf.fs could not build the trace from it; else the stream file that fails when read on
    /// its own (babeltrace2's decoding errors and assertions do not say which stream); else the trace folder.
    private static func locate(_ reason: String, directories: [String], reportedPath: String,
                               stallTimeout: Duration) -> TraceReadError {
        if let file = mentionedFile(in: reason) {
            return TraceReadError(path: file, offset: mentionedOffset(in: reason), reason: reason)
        }
        // src.ctf.fs reports TSDL syntax and semantic errors only as "Cannot create trace for `<folder>`".
        if let directory = directories.first(where: { reason.hasSuffix("Cannot create trace for `\($0)`") }) {
            return TraceReadError(path: directory + "/metadata",
                                  reason: reason + " (babeltrace2 could not build the trace from this metadata: a TSDL syntax or semantic error)")
        }
        let streams = directories.flatMap { directory in
            CTFTraceFolders.streamFiles(in: directory).map { (directory, $0) }
        }
        if streams.count == 1 {
            return TraceReadError(path: streams[0].0 + "/" + streams[0].1, reason: reason)
        }
        for (directory, stream) in streams.prefix(256)
        where failsAlone(directory: directory, stream: stream, stallTimeout: stallTimeout) {
            return TraceReadError(path: directory + "/" + stream, reason: reason)
        }
        return TraceReadError(path: directories.count == 1 ? directories[0] : reportedPath, reason: reason)
    }

    /// Whether one stream file of a trace fails to decode on its own (in a temporary folder of symbolic links).
    private static func failsAlone(directory: String, stream: String, stallTimeout: Duration) -> Bool {
        var template = Array((NSTemporaryDirectory() + "/rlctl-ctf-XXXXXX").utf8CString)
        guard let created = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { return false }
        let scratch = String(cString: created)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        guard symlink(directory + "/metadata", scratch + "/metadata") == 0,
              symlink(directory + "/" + stream, scratch + "/" + stream) == 0 else { return false }
        var error: UnsafeMutablePointer<CChar>?
        let paths: [UnsafePointer<CChar>?] = [UnsafePointer(strdup(scratch))]
        defer { free(UnsafeMutablePointer(mutating: paths[0])) }
        guard let handle = paths.withUnsafeBufferPointer({
            rl_ctf_reader_open($0.baseAddress, 1, milliseconds(stallTimeout), &error)
        }) else {
            rl_ctf_free_string(error)
            return true
        }
        defer { rl_ctf_reader_close(handle) }
        var batch: UnsafePointer<rl_ctf_record>?
        var count = 0
        while true {
            switch rl_ctf_reader_next(handle, &batch, &count) {
            case 1: continue
            case 0: return false
            default: return true
            }
        }
    }

    /// The last absolute path of an existing regular file quoted in `text` (babeltrace2 quotes paths with
    /// backquotes, single or double quotes); causes run from general to specific, so the last is the most
    /// specific.
    static func mentionedFile(in text: String) -> String? {
        var found: String?
        for quote in ["`", "'", "\""] {
            let parts = text.components(separatedBy: quote)
            var index = 1
            while index < parts.count - 1 {
                let candidate = parts[index]
                if candidate.hasPrefix("/"), CTFTraceFolders.isRegularFile(candidate),
                   let range = text.range(of: quote + candidate + quote, options: .backwards) {
                    if found == nil || text.range(of: quote + found! + quote, options: .backwards)!.lowerBound < range.lowerBound {
                        found = candidate
                    }
                }
                index += 2
            }
        }
        return found
    }

    /// A byte offset babeltrace2 reports as `offset=<n>`, if any.
    static func mentionedOffset(in text: String) -> UInt64? {
        guard let range = text.range(of: "offset=", options: .backwards) else { return nil }
        let digits = text[range.upperBound...].prefix { $0.isNumber }
        return UInt64(digits)
    }

    /// babeltrace2's cause chain without object addresses and the muxer's plumbing.
    static func clean(_ message: String) -> String {
        let segments = message.components(separatedBy: ": ").compactMap { segment -> String? in
            var words = segment.components(separatedBy: ", ").filter { part in
                !(part.contains("addr=0x") || part.hasPrefix("status=") || part.hasPrefix("comp-"))
            }
            while let last = words.last, last.isEmpty { words.removeLast() }
            let kept = words.joined(separator: ", ").trimmingCharacters(in: .whitespaces)
            if kept.isEmpty { return nil }
            if kept.hasPrefix("Cannot validate muxer's upstream message iterator wrapper")
                || kept.hasPrefix("Upstream iterator's next method returned an error") { return nil }
            return kept
        }
        return segments.joined(separator: ": ")
    }
}

/// Strings decoded from the trace (mode names, labels): the same few come back in every event, so the last few
/// are kept and compared by bytes instead of decoding UTF-8 each time.
private struct TextCache {
    private var entries: [(bytes: [UInt8], string: String)] = []
    private var nextSlot = 0
    private static let capacity = 16

    mutating func string(_ text: UnsafePointer<CChar>?, _ length: Int) -> String {
        guard let text, length > 0 else { return "" }
        let bytes = UnsafeRawBufferPointer(start: text, count: length)
        for entry in entries where entry.bytes.count == length {
            if entry.bytes.withUnsafeBytes({ memcmp($0.baseAddress!, text, length) }) == 0 { return entry.string }
        }
        let string = String(decoding: bytes, as: UTF8.self)
        guard length <= 256 else { return string }
        let entry = (bytes: Array(bytes), string: string)
        if entries.count < Self.capacity {
            entries.append(entry)
        } else {
            entries[nextSlot] = entry
            nextSlot = (nextSlot + 1) % Self.capacity
        }
        return string
    }
}

/// The tracer's cumulative loss counters, per stream, rebuilt from babeltrace2's differences.
///
/// LTTng writes each packet's `events_discarded` as the ring buffer's count when the packet is closed, and packets
/// are not always closed in the order of their timestamps: a packet closed earlier can follow one closed later,
/// with a smaller count. babeltrace2 reports the difference between consecutive packets as an unsigned number,
/// which then wraps to nearly 2^64 (seen on a flood of 256 producer threads). The counter itself never goes
/// down, so the loss so far is the highest count seen: a new loss is only what exceeds it.
struct LossCounters {
    private struct Counter {
        var value: UInt64 = 0
        var highest: UInt64 = 0
    }

    private struct Key: Hashable {
        let stream: String
        let packets: Bool
    }

    private var counters: [Key: Counter] = [:]

    /// How much of `delta` (babeltrace2's count for the stream's next discard message) is new loss.
    mutating func newLoss(stream: String, packets: Bool, delta: UInt64) -> UInt64 {
        let previous = counters[Key(stream: stream, packets: packets), default: Counter()]
        let value = previous.value &+ delta
        counters[Key(stream: stream, packets: packets)] = Counter(value: value, highest: max(previous.highest, value))
        return value > previous.highest ? value - previous.highest : 0
    }
}

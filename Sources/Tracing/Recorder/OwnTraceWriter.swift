import Foundation
import Glibc
import TraceModel

/// A trace rlctl writes itself from what it saw from outside a program (the kernel recorder's records), in the
/// embedded recorder's format: metadata, one stream file per thread it writes for, and the end file, so the readers
/// check it like any embedded trace (a stream cut short or deleted is a loss, a missing end file a recording cut
/// off, a packet's `events_discarded` a loss window on that thread) and babeltrace2 reads the folder as it is.
///
/// Each stream's events come in non-decreasing time order; an event stamped earlier than its stream's last is
/// written at the last one's time (a stream's times never go back; its fields keep the exact moments). A stream's
/// packet is written once it holds ``packetCapacity`` bytes, or is ``packetAge`` old at the end of a call: a
/// killed rlctl loses at most that much. A stream's file is open only while a packet is written to it, so a program
/// with thousands of threads takes no more descriptors than one. One producer at a time (the lock keeps `finish()`
/// apart from it).
final class OwnTraceWriter: @unchecked Sendable {
    let folder: String
    private let lock = NSLock()
    private let uuid: [UInt8]
    private let payloads: String
    private let encodes: (TraceEvent.Payload) -> Bool
    private var streams: [Int32: Stream] = [:]
    private var events: UInt64 = 0
    private var failure: String?
    private var finished = false

    static let packetCapacity = 64 * 1024
    static let packetAge: Duration = .milliseconds(100)

    private struct Stream {
        let tid: Int32
        var name: String { "stream-\(tid)" }
        var packet: [UInt8] = []
        /// The packet's first event's time; its last one's is `lastTimestamp`.
        var begin: UInt64 = 0
        var sequence: UInt64 = 0
        /// Events the stream lost, cumulative (each packet header says the total so far).
        var discarded: UInt64 = 0
        var events: UInt64 = 0
        var bytes: UInt64 = 0
        var lastTimestamp: UInt64 = 0
        var opened = ContinuousClock.now
    }

    /// Creates `folder` (which must not hold a trace yet) with the trace's metadata; `part` says it is a part of the
    /// trace around it (``TraceSchema/kernelViewPart``); `encodes` which events it takes, named by `payloads` in
    /// the error for others.
    init(folder: String, part: String?, payloads: String, encodes: @escaping (TraceEvent.Payload) -> Bool) throws {
        self.folder = folder
        self.payloads = payloads
        self.encodes = encodes
        uuid = TraceSchema.newUUID()
        let fileManager = FileManager.default
        if fileManager.fileExists(atPath: folder + "/metadata") {
            throw RecorderError("\(folder) already holds a trace; choose another folder or delete it")
        }
        do { try fileManager.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
            throw RecorderError("cannot make the folder \(folder): \(error.localizedDescription)")
        }
        let metadata = TraceSchema.metadata(uuid: uuid, clockOffsetNanoseconds: TraceSchema.currentClockOffsetNanoseconds(),
                                            hostname: ProcessInfo.processInfo.hostName, part: part)
        do { try metadata.write(toFile: folder + "/metadata", atomically: true, encoding: .utf8) } catch {
            throw RecorderError("cannot write \(folder)/metadata: \(error.localizedDescription)")
        }
    }

    /// Appends `batch` to the stream of thread `tid` (made on its first events), after noting that the stream lost
    /// `lostBefore` events just before them: the packet they start says so, and readers make it a loss window.
    func write(_ batch: [TraceEvent], stream tid: Int32, lostBefore: UInt64 = 0) throws {
        lock.lock()
        defer { lock.unlock() }
        if let failure { throw RecorderError(failure) }
        guard !finished else { throw RecorderError("the trace in \(folder) is already finished") }
        var stream = streams.removeValue(forKey: tid) ?? Stream(tid: tid)
        // Back in the table however this ends (a failed write leaves it as it got).
        defer { streams[tid] = stream }
        if lostBefore > 0 {
            if !stream.packet.isEmpty { try flushPacket(&stream) }
            stream.discarded &+= lostBefore
        }
        for event in batch {
            guard encodes(event.payload) else { throw RecorderError("this trace holds \(payloads) only, not \(event.payloadName)") }
            let (id, fields) = Self.fields(of: event.payload)
            let timestamp = max(event.timestamp, stream.lastTimestamp)
            if stream.packet.isEmpty { Self.startPacket(&stream, at: timestamp) }
            stream.lastTimestamp = timestamp
            stream.packet.append(id.rawValue)
            Self.append(timestamp, to: &stream.packet)
            Self.encode(fields, as: id.description, into: &stream.packet)
            stream.events += 1
            events += 1
            if stream.packet.count >= Self.packetCapacity { try flushPacket(&stream) }
        }
        if !stream.packet.isEmpty, ContinuousClock.now - stream.opened >= Self.packetAge { try flushPacket(&stream) }
        try flushOldPackets()
    }

    /// Writes what is left and the end file; after it, the folder is a complete trace. Its accounting says what its
    /// streams lost (their packets' `events_discarded`) and `alsoLost`, events lost that no stream can place (0 when
    /// the losses are told by the events themselves, as the kernel view's kernel_lost events are, so that a loss is
    /// never counted twice).
    func finish(alsoLost: UInt64 = 0) throws {
        lock.lock()
        defer { lock.unlock() }
        guard !finished else { return }
        finished = true
        for tid in streams.keys.sorted() {
            if failure == nil, !streams[tid]!.packet.isEmpty { try? flushPacket(&streams[tid]!) }
            guard failure == nil, streams[tid]!.bytes > 0 else { continue }
            let descriptor = open(folder + "/" + streams[tid]!.name, O_WRONLY | O_CLOEXEC)
            if descriptor < 0 || fsync(descriptor) != 0 { fail("fsync", errno) }
            if descriptor >= 0 { close(descriptor) }
        }
        if let failure { throw RecorderError(failure) }
        var accounting = TraceAccounting(eventsRecorded: events, eventsLost: streams.values.reduce(alsoLost) { $0 &+ $1.discarded })
        for stream in streams.values { accounting.streams[stream.name] = .init(events: stream.events, bytes: stream.bytes) }
        do { try accounting.text.write(toFile: folder + "/" + TraceSchema.endFileName, atomically: true, encoding: .utf8) } catch {
            throw RecorderError("the trace in \(folder) is incomplete: cannot write its end file: \(error.localizedDescription)")
        }
    }

    // ===== streams and packets (layout: TraceSchema) =====

    private static func startPacket(_ stream: inout Stream, at timestamp: UInt64) {
        stream.opened = .now
        stream.begin = timestamp
        stream.packet.removeAll(keepingCapacity: true)
        stream.packet.append(contentsOf: [UInt8](repeating: 0, count: TraceSchema.packetHeaderSize))
    }

    /// Other threads' packets that waited long enough (a thread that stopped waiting leaves its last one here).
    private func flushOldPackets() throws {
        let now = ContinuousClock.now
        let old = streams.filter { !$0.value.packet.isEmpty && now - $0.value.opened >= Self.packetAge }.keys
        for tid in old { try flushPacket(&streams[tid]!) }
    }

    private func flushPacket(_ stream: inout Stream) throws {
        let size = UInt64(stream.packet.count) * 8
        var header: [UInt8] = []
        header.reserveCapacity(TraceSchema.packetHeaderSize)
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { header.append(contentsOf: $0) } }
        put(TraceSchema.magic)
        header.append(contentsOf: uuid)
        put(stream.begin); put(stream.lastTimestamp); put(size); put(size); put(stream.sequence); put(stream.discarded); put(stream.tid)
        stream.packet.replaceSubrange(0..<TraceSchema.packetHeaderSize, with: header)
        // The first packet makes the file (the folder is new: nothing of an older trace is appended to).
        let descriptor = open(folder + "/" + stream.name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            fail("cannot open \(stream.name)", errno)
            throw RecorderError(failure!)
        }
        defer { close(descriptor) }
        var offset = 0
        while offset < stream.packet.count {
            let written = stream.packet.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                fail("write", errno)
                throw RecorderError(failure!)
            }
            offset += written
        }
        stream.bytes += UInt64(stream.packet.count)
        stream.sequence += 1
        stream.packet.removeAll(keepingCapacity: true)
    }

    private func fail(_ what: String, _ code: Int32) {
        guard failure == nil else { return }
        failure = "the trace in \(folder) is incomplete: \(what): \(String(cString: strerror(code)))"
        // Empty, so that it can be made on a full disk: readers then say why the trace ends early.
        close(open(folder + "/" + TraceSchema.writeFailureMarker(errno: code), O_WRONLY | O_CREAT | O_CLOEXEC, 0o644))
    }

    // ===== fields, in the schema's order and types =====

    private enum Value {
        case integer(UInt64)
        case text(String)
        case integers([UInt64])
    }

    private static func fields(of payload: TraceEvent.Payload) -> (TraceSchema.EventID, [Value]) {
        func signed(_ value: Int32) -> Value { .integer(UInt64(bitPattern: Int64(value))) }
        func signed(_ values: [Int32]) -> Value { .integers(values.map { UInt64(bitPattern: Int64($0)) }) }
        switch payload {
        case .kernelBegin(let pid, let command):
            return (.kernelBegin, [signed(pid), .text(command)])
        case .kernelTask(let tid, let pid, let command):
            return (.kernelTask, [signed(tid), signed(pid), .text(command)])
        case .kernelTimer(let tid, let due, let latest, let fired):
            return (.kernelTimer, [signed(tid), .integer(due), .integer(latest), .integer(fired)])
        case .kernelRunQueue(let queue):
            return (.kernelRunQueue, [signed(queue.threadID), signed(queue.cpu), .integer(queue.others),
                                      .integer(UInt64(queue.culprits.count)), signed(queue.culprits.map(\.threadID)),
                                      .integers(queue.culprits.map(\.nanoseconds))])
        case .kernelOffCPU(let off):
            return (.kernelOffCPU, [signed(off.threadID), .integer(UInt64(off.reason.rawValue)), signed(off.syscall), .integer(off.left),
                                    .integer(off.woken), .integer(off.back), signed(off.cpu), signed(off.wakerThreadID),
                                    .integer(off.throttled)])
        case .kernelLost(let records, let from):
            return (.kernelLost, [.integer(records), .integer(from)])
        case .waitThread(let pid, let ppid, let thread, let process):
            return (.waitThread, [signed(pid), signed(ppid), .text(thread), .text(process)])
        case .waitBatch(let batch):
            let waits = batch.waits
            return (.waitBatch, [signed(batch.threadID), .integer(UInt64(waits.count)),
                                 .integers(waits.map { UInt64($0.call.rawValue) }), signed(waits.map(\.target)),
                                 .integers(waits.map { UInt64($0.setSize) }), .integers(waits.map { UInt64(bitPattern: $0.timeout) }),
                                 .integers(waits.map(\.begin)), .integers(waits.map { $0.end ?? 0 }),
                                 signed(waits.map(\.ready)), signed(waits.map(\.error))])
        default:
            preconditionFailure("OwnTraceWriter: \(payload.eventName) is not one of the events it encodes")
        }
    }

    private static func encode(_ values: [Value], as description: TraceSchema.EventDescription, into packet: inout [UInt8]) {
        precondition(values.count == description.fields.count, "\(description.name): \(values.count) values for \(description.fields.count) fields")
        for (value, field) in zip(values, description.fields) {
            switch (value, field.type) {
            case (.text(let text), .string):
                packet.append(contentsOf: text.utf8.prefix(TraceSchema.maxStringBytes).filter { $0 != 0 })
                packet.append(0)
            case (.integer(let integer), let type):
                append(integer, as: type, to: &packet)
            case (.integers(let elements), .array(let element)):
                append(UInt32(elements.count), to: &packet)
                for item in elements { append(item, as: element, to: &packet) }
            default:
                preconditionFailure("\(description.name).\(field.name): a value of the wrong kind for \(field.type)")
            }
        }
    }

    private static func append(_ value: UInt64, as type: TraceSchema.FieldType, to packet: inout [UInt8]) {
        switch type {
        case .u8, .enumeration: packet.append(UInt8(truncatingIfNeeded: value))
        case .u32, .s32: append(UInt32(truncatingIfNeeded: value), to: &packet)
        case .u64, .s64: append(value, to: &packet)
        case .string, .array: preconditionFailure("not an integer type: \(type)")
        }
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to packet: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { packet.append(contentsOf: $0) }
    }
}

extension TraceEvent {
    fileprivate var payloadName: String { payload.eventName }
}

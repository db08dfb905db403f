import Foundation
import Glibc
import TraceModel

/// Writes the kernel view of a recording (the `kernel_*` events of the schema) as a trace of its own, in the embedded
/// recorder's format: `<trace>/rlctl-kernel/` (`TraceSchema.kernelViewFolder`) holds its metadata, one stream and its end
/// file, so the readers check it like any embedded trace (a stream cut short or deleted is a loss, a missing end file
/// a recording cut off) and merge its events with the trace's by time; babeltrace2 reads the folder as it is.
///
/// The events come from rlctl's kernel recorder, not from the threads they are about: each is stamped with the
/// moment it describes (`TraceEvent.timestamp`), non-decreasing across calls to ``write(_:)``. One producer thread
/// at a time.
public final class KernelTraceWriter: @unchecked Sendable {
    public let folder: String
    private let lock = NSLock()
    private let uuid: [UInt8]
    private let streamName: String
    private let streamTID: Int32
    private var descriptor: Int32 = -1
    private var packet: [UInt8] = []
    private var packetBegin: UInt64 = 0
    private var packetEnd: UInt64 = 0
    private var sequence: UInt64 = 0
    private var events: UInt64 = 0
    private var bytesWritten: UInt64 = 0
    private var lastTimestamp: UInt64 = 0
    private var failure: String?
    private var finished = false

    /// A packet is written once it holds this much, or once it is this old at the end of a ``write(_:)``: a killed rlctl
    /// loses at most that much of the view.
    static let packetCapacity = 64 * 1024
    static let packetAge: Duration = .milliseconds(100)
    private var packetOpened = ContinuousClock.now

    /// Creates `folder` (which must not hold a trace yet) with the trace's metadata and its stream.
    public init(folder: String) throws {
        self.folder = folder
        let bytes = TraceSchema.newUUID()
        uuid = bytes
        streamTID = getpid()
        streamName = "stream-\(streamTID)"
        let fileManager = FileManager.default
        if fileManager.fileExists(atPath: folder + "/metadata") {
            throw RecorderError("\(folder) already holds a trace; choose another folder or delete it")
        }
        do { try fileManager.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
            throw RecorderError("cannot make the kernel view's folder \(folder): \(error.localizedDescription)")
        }
        let metadata = TraceSchema.metadata(uuid: bytes, clockOffsetNanoseconds: TraceSchema.currentClockOffsetNanoseconds(), hostname: ProcessInfo.processInfo.hostName,
                                            part: TraceSchema.kernelViewPart)
        do { try metadata.write(toFile: folder + "/metadata", atomically: true, encoding: .utf8) } catch {
            throw RecorderError("cannot write \(folder)/metadata: \(error.localizedDescription)")
        }
        descriptor = open(folder + "/" + streamName, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw RecorderError("cannot create \(folder)/\(streamName): \(String(cString: strerror(errno)))")
        }
        packet.reserveCapacity(Self.packetCapacity + 4096)
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// Appends kernel events (`TraceEvent.PayloadkernelBegin` … `TraceEvent.PayloadkernelLost`); an event
    /// stamped earlier than the last one written is written at the last one's time (a stream's times never go back;
    /// its fields keep the exact moments).
    /// - Throws: ``RecorderError`` for another kind of event, and when the stream cannot be written (the kernel view
    ///   is then incomplete, and its folder says why: the write-failure marker).
    public func write(_ batch: [TraceEvent]) throws {
        lock.lock()
        defer { lock.unlock() }
        if let failure { throw RecorderError(failure) }
        guard !finished else { throw RecorderError("the kernel view in \(folder) is already finished") }
        for event in batch {
            let (id, fields) = try Self.fields(of: event.payload)
            if packet.isEmpty { startPacket(at: max(event.timestamp, lastTimestamp)) }
            let timestamp = max(event.timestamp, lastTimestamp)
            lastTimestamp = timestamp
            packetEnd = timestamp
            packet.append(id.rawValue)
            append(timestamp)
            encode(fields, as: id.description)
            events += 1
            if packet.count >= Self.packetCapacity { try flushPacket() }
        }
        if !packet.isEmpty, ContinuousClock.now - packetOpened >= Self.packetAge { try flushPacket() }
    }

    /// Writes what is left and the end file; after it, the folder is a complete trace. The records the kernel
    /// recorder dropped are its `kernel_lost` events, which the analysis counts as lost: this trace itself loses
    /// nothing, so its own accounting (packets' `events_discarded`, the end file's `events_lost`) says 0 and a loss
    /// is never counted twice.
    public func finish() throws {
        lock.lock()
        defer { lock.unlock() }
        guard !finished else { return }
        finished = true
        if failure == nil, !packet.isEmpty { try? flushPacket() }
        if failure == nil, fsync(descriptor) != 0 { fail("fsync", errno) }
        close(descriptor)
        descriptor = -1
        if let failure { throw RecorderError(failure) }
        var accounting = TraceAccounting(eventsRecorded: events, eventsLost: 0)
        accounting.streams[streamName] = .init(events: events, bytes: bytesWritten)
        do { try accounting.text.write(toFile: folder + "/" + TraceSchema.endFileName, atomically: true, encoding: .utf8) } catch {
            throw RecorderError("the kernel view in \(folder) is incomplete: cannot write its end file: \(error.localizedDescription)")
        }
    }

    // ===== packets (layout: TraceSchema) =====

    private func startPacket(at timestamp: UInt64) {
        packetOpened = .now
        packetBegin = timestamp
        packetEnd = timestamp
        packet.removeAll(keepingCapacity: true)
        packet.append(contentsOf: [UInt8](repeating: 0, count: TraceSchema.packetHeaderSize))
    }

    private func flushPacket() throws {
        let size = UInt64(packet.count) * 8
        var header: [UInt8] = []
        header.reserveCapacity(TraceSchema.packetHeaderSize)
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { header.append(contentsOf: $0) } }
        put(TraceSchema.magic)
        header.append(contentsOf: uuid)
        put(packetBegin); put(packetEnd); put(size); put(size); put(sequence); put(UInt64(0)); put(streamTID)
        packet.replaceSubrange(0..<TraceSchema.packetHeaderSize, with: header)
        var offset = 0
        while offset < packet.count {
            let written = packet.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                fail("write", errno)
                throw RecorderError(failure!)
            }
            offset += written
        }
        bytesWritten += UInt64(packet.count)
        sequence += 1
        packet.removeAll(keepingCapacity: true)
    }

    private func fail(_ what: String, _ code: Int32) {
        guard failure == nil else { return }
        failure = "the kernel view in \(folder) is incomplete: \(what): \(String(cString: strerror(code)))"
        // Empty, so that it can be made on a full disk: readers then say why the kernel view ends early.
        close(open(folder + "/" + TraceSchema.writeFailureMarker(errno: code), O_WRONLY | O_CREAT | O_CLOEXEC, 0o644))
    }

    // ===== fields, in the schema's order and types =====

    private enum Value {
        case integer(UInt64)
        case text(String)
        case integers([UInt64])
    }

    private static func fields(of payload: TraceEvent.Payload) throws -> (TraceSchema.EventID, [Value]) {
        func signed(_ value: Int32) -> Value { .integer(UInt64(bitPattern: Int64(value))) }
        switch payload {
        case .kernelBegin(let pid, let command):
            return (.kernelBegin, [signed(pid), .text(command)])
        case .kernelTask(let tid, let pid, let command):
            return (.kernelTask, [signed(tid), signed(pid), .text(command)])
        case .kernelTimer(let tid, let due, let latest, let fired):
            return (.kernelTimer, [signed(tid), .integer(due), .integer(latest), .integer(fired)])
        case .kernelRunQueue(let queue):
            return (.kernelRunQueue, [signed(queue.threadID), signed(queue.cpu), .integer(queue.others),
                                      .integer(UInt64(queue.culprits.count)),
                                      .integers(queue.culprits.map { UInt64(bitPattern: Int64($0.threadID)) }),
                                      .integers(queue.culprits.map(\.nanoseconds))])
        case .kernelOffCPU(let off):
            return (.kernelOffCPU, [signed(off.threadID), .integer(UInt64(off.reason.rawValue)), signed(off.syscall), .integer(off.left),
                                    .integer(off.woken), .integer(off.back), signed(off.cpu), signed(off.wakerThreadID),
                                    .integer(off.throttled)])
        case .kernelLost(let records, let from):
            return (.kernelLost, [.integer(records), .integer(from)])
        default:
            throw RecorderError("the kernel view holds kernel events only, not \(payload.eventName)")
        }
    }

    private func encode(_ values: [Value], as description: TraceSchema.EventDescription) {
        precondition(values.count == description.fields.count, "\(description.name): \(values.count) values for \(description.fields.count) fields")
        for (value, field) in zip(values, description.fields) {
            switch (value, field.type) {
            case (.text(let text), .string):
                packet.append(contentsOf: text.utf8.prefix(TraceSchema.maxStringBytes).filter { $0 != 0 })
                packet.append(0)
            case (.integer(let integer), let type):
                append(integer, as: type)
            case (.integers(let elements), .array(let element)):
                append(UInt32(elements.count))
                for item in elements { append(item, as: element) }
            default:
                preconditionFailure("\(description.name).\(field.name): a value of the wrong kind for \(field.type)")
            }
        }
    }

    private func append(_ value: UInt64, as type: TraceSchema.FieldType) {
        switch type {
        case .u8, .enumeration: packet.append(UInt8(truncatingIfNeeded: value))
        case .u32, .s32: append(UInt32(truncatingIfNeeded: value))
        case .u64, .s64: append(value)
        case .string, .array: preconditionFailure("not an integer type: \(type)")
        }
    }

    private func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { packet.append(contentsOf: $0) }
    }
}

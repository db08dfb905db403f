import Glibc
import TraceModel

/// One thread stream of an embedded trace: the current packet in memory and a position in it.
final class StreamCursor {
    let path: String
    private let fd: Int32
    private let uuid: [UInt8]
    private var packet: UnsafeMutableRawBufferPointer
    /// Byte offset of the current packet in the file.
    private var packetOffset: UInt64 = 0
    private var nextPacketOffset: UInt64 = 0
    private var contentEnd = 0
    private var position = 0
    private var packetEnd: UInt64 = 0
    private var threadID: Int32 = 0
    private var lastSequence: UInt64?
    private var lastDiscarded: UInt64 = 0
    private var lastTimestamp: UInt64 = 0
    private var modeCache: (bytes: [UInt8], string: String) = ([], "")
    private(set) var currentTimestamp: UInt64 = 0

    /// Packets larger than this are treated as corruption rather than allocated.
    static let maxPacketSize = 64 << 20

    init(path: String, uuid: [UInt8]) throws(TraceReadError) {
        self.path = path
        self.uuid = uuid
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TraceReadError(path: path, reason: "cannot open: \(String(cString: strerror(errno)))") }
        packet = .allocate(byteCount: 256 * 1024, alignment: 8)
    }

    deinit {
        close(fd)
        packet.deallocate()
    }

    private func fail(_ reason: String, at offset: Int) -> TraceReadError {
        TraceReadError(path: path, offset: packetOffset + UInt64(offset), reason: reason)
    }

    private func load<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        T(littleEndian: packet.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// Moves to the next event, reading packets as needed. Returns false at the end of the stream.
    func advance(health: inout TraceHealth) throws(TraceReadError) -> Bool {
        while position >= contentEnd {
            guard try readPacket(health: &health) else { return false }
        }
        guard position + TraceSchema.eventHeaderSize <= contentEnd else {
            throw fail("event header runs past the end of the packet", at: position)
        }
        let timestamp = load(UInt64.self, at: position + 1)
        guard timestamp >= lastTimestamp else {
            throw fail("event timestamp \(timestamp) goes backwards (previous \(lastTimestamp))", at: position)
        }
        lastTimestamp = timestamp
        currentTimestamp = timestamp
        return true
    }

    private func readFully(into buffer: UnsafeMutableRawPointer, count: Int, at offset: UInt64) throws(TraceReadError) -> Int {
        var done = 0
        while done < count {
            let n = pread(fd, buffer + done, count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw TraceReadError(path: path, offset: offset + UInt64(done), reason: "read failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    private func readPacket(health: inout TraceHealth) throws(TraceReadError) -> Bool {
        packetOffset = nextPacketOffset
        let headerSize = TraceSchema.packetHeaderSize
        let got = try readFully(into: packet.baseAddress!, count: headerSize, at: packetOffset)
        if got == 0 { return false }
        guard got == headerSize else {
            throw fail("truncated packet header (\(got) of \(headerSize) bytes)", at: 0)
        }
        guard load(UInt32.self, at: 0) == TraceSchema.magic else { throw fail("bad packet magic (not a CTF packet)", at: 0) }
        for index in 0..<16 where packet[4 + index] != uuid[index] {
            throw fail("packet belongs to another trace (uuid mismatch)", at: 4)
        }
        let begin = load(UInt64.self, at: 20)
        let end = load(UInt64.self, at: 28)
        let contentBits = load(UInt64.self, at: 36)
        let packetBits = load(UInt64.self, at: 44)
        let sequence = load(UInt64.self, at: 52)
        let discarded = load(UInt64.self, at: 60)
        threadID = load(Int32.self, at: 68)
        guard contentBits % 8 == 0, packetBits % 8 == 0, contentBits <= packetBits,
              contentBits >= UInt64(headerSize) * 8, packetBits / 8 <= UInt64(Self.maxPacketSize) else {
            throw fail("impossible packet sizes (content \(contentBits) bits, packet \(packetBits) bits)", at: 36)
        }
        guard begin <= end else { throw fail("packet ends (\(end)) before it begins (\(begin))", at: 20) }
        let contentSize = Int(contentBits / 8)
        if contentSize > packet.count {
            let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: contentSize, alignment: 8)
            grown.copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[0..<headerSize]))
            packet.deallocate()
            packet = grown
        }
        let body = contentSize - headerSize
        let read = try readFully(into: packet.baseAddress! + headerSize, count: body, at: packetOffset + UInt64(headerSize))
        guard read == body else {
            throw fail("truncated packet: \(read) of \(body) event bytes present", at: headerSize + read)
        }
        // Loss accounting: cumulative discards and sequence gaps, each with the window it affects.
        if discarded < lastDiscarded {
            throw fail("events_discarded went down (\(lastDiscarded) to \(discarded))", at: 60)
        }
        if discarded > lastDiscarded {
            health.eventsLost += discarded - lastDiscarded
            health.lossWindows.append(.init(stream: "tid \(threadID)", from: lastTimestamp, to: max(begin, lastTimestamp), events: discarded - lastDiscarded))
            lastDiscarded = discarded
        }
        if let lastSequence {
            guard sequence > lastSequence else { throw fail("packet sequence number \(sequence) does not follow \(lastSequence)", at: 52) }
            if sequence > lastSequence + 1 {
                health.packetsLost += sequence - lastSequence - 1
                health.lossWindows.append(.init(stream: "tid \(threadID)", from: lastTimestamp, to: begin, events: 0))
            }
        } else if sequence > 0 {
            health.packetsLost += sequence
            health.lossWindows.append(.init(stream: "tid \(threadID)", from: 0, to: begin, events: 0))
        }
        lastSequence = sequence
        guard begin >= lastTimestamp || lastTimestamp == 0 else {
            throw fail("packet begins (\(begin)) before the previous one's last event (\(lastTimestamp))", at: 20)
        }
        packetEnd = end
        contentEnd = contentSize
        position = headerSize
        nextPacketOffset = packetOffset + packetBits / 8
        return true
    }

    // ===== decoding the current event =====

    private struct Fields {
        let cursor: StreamCursor
        var offset: Int
        let end: Int

        mutating func u8() throws(TraceReadError) -> UInt8 {
            guard offset + 1 <= end else { throw cursor.fail("event field runs past the end of the packet", at: offset) }
            defer { offset += 1 }
            return cursor.packet[offset]
        }

        mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws(TraceReadError) -> T {
            let size = MemoryLayout<T>.size
            guard offset + size <= end else { throw cursor.fail("event field runs past the end of the packet", at: offset) }
            defer { offset += size }
            return cursor.load(T.self, at: offset)
        }

        mutating func string(cached: Bool = false) throws(TraceReadError) -> String {
            let start = offset
            var index = offset
            while index < end && cursor.packet[index] != 0 { index += 1 }
            guard index < end else { throw cursor.fail("unterminated string in event", at: start) }
            offset = index + 1
            let bytes = UnsafeRawBufferPointer(rebasing: cursor.packet[start..<index])
            if cached {
                // Mode names repeat on nearly every event: reuse the last String instead of allocating.
                if bytes.elementsEqual(cursor.modeCache.bytes) { return cursor.modeCache.string }
                let string = String(decoding: bytes, as: UTF8.self)
                cursor.modeCache = (Array(bytes), string)
                return string
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    func decodeCurrent() throws(TraceReadError) -> TraceEvent {
        let start = position
        let rawID = packet[start]
        guard let id = TraceSchema.EventID(rawValue: rawID) else {
            throw fail("unknown event id \(rawID)", at: start)
        }
        var f = Fields(cursor: self, offset: start + TraceSchema.eventHeaderSize, end: contentEnd)
        let payload: TraceEvent.Payload
        switch id {
        case .entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit:
            let activity = LoopActivity.ordered[Int(id.rawValue)]
            let loop = try f.integer(UInt64.self)
            let mode = try f.string(cached: true)
            payload = .activity(activity, .init(loopID: loop, mode: mode, iteration: try f.integer(UInt64.self), depth: try f.integer(UInt32.self)))
        case .runBegin:
            payload = .runBegin(loopID: try f.integer(UInt64.self), mode: try f.string(cached: true),
                                timeoutNanoseconds: try f.integer(UInt64.self), returnAfterSourceHandled: try f.u8() != 0)
        case .runEnd:
            let loop = try f.integer(UInt64.self)
            let mode = try f.string(cached: true)
            let raw = try f.u8()
            guard let result = LoopRunResult(traceValue: Int64(raw)) else { throw fail("invalid run result \(raw)", at: f.offset - 1) }
            payload = .runEnd(loopID: loop, mode: mode, result: result)
        case .timerFireBegin:
            payload = .timerFireBegin(loopID: try f.integer(UInt64.self), timerID: try f.integer(UInt64.self),
                                      scheduled: try f.integer(UInt64.self), tolerance: try f.integer(UInt64.self),
                                      interval: try f.integer(UInt64.self), missed: try f.integer(UInt64.self))
        case .timerFireEnd:
            payload = .timerFireEnd(loopID: try f.integer(UInt64.self), timerID: try f.integer(UInt64.self))
        case .sourceSignal:
            payload = .sourceSignal(sourceID: try f.integer(UInt64.self))
        case .sourcePerformBegin:
            let loop = try f.integer(UInt64.self), source = try f.integer(UInt64.self)
            let raw = try f.u8()
            guard let kind = LoopSourceKind(traceValue: Int64(raw)) else { throw fail("invalid source kind \(raw)", at: f.offset - 1) }
            payload = .sourcePerformBegin(loopID: loop, sourceID: source, kind: kind, order: try f.integer(Int64.self),
                                          signaled: try f.integer(UInt64.self))
        case .sourcePerformEnd:
            payload = .sourcePerformEnd(loopID: try f.integer(UInt64.self), sourceID: try f.integer(UInt64.self))
        case .blockBegin:
            payload = .blockBegin(loopID: try f.integer(UInt64.self), blockID: try f.integer(UInt64.self), enqueued: try f.integer(UInt64.self))
        case .blockEnd:
            payload = .blockEnd(loopID: try f.integer(UInt64.self), blockID: try f.integer(UInt64.self))
        case .observerBegin:
            let loop = try f.integer(UInt64.self), observer = try f.integer(UInt64.self)
            let raw = try f.u8()
            guard let activity = LoopActivity(traceValue: Int64(raw)) else { throw fail("invalid activity \(raw)", at: f.offset - 1) }
            payload = .observerBegin(loopID: loop, observerID: observer, activity: activity)
        case .observerEnd:
            payload = .observerEnd(loopID: try f.integer(UInt64.self), observerID: try f.integer(UInt64.self))
        case .wakeUp:
            let loop = try f.integer(UInt64.self)
            let raw = try f.u8()
            guard let reason = LoopWakeReason(traceValue: Int64(raw)) else { throw fail("invalid wake-up reason \(raw)", at: f.offset - 1) }
            payload = .wakeUp(loopID: loop, reason: reason, slept: try f.integer(UInt64.self))
        case .loopCreate:
            payload = .loopCreate(loopID: try f.integer(UInt64.self), threadID: try f.integer(Int32.self), name: try f.string())
        case .itemLabel:
            let item = try f.integer(UInt64.self)
            let raw = try f.u8()
            guard let kind = LoopItemKind(traceValue: Int64(raw)) else { throw fail("invalid item kind \(raw)", at: f.offset - 1) }
            payload = .itemLabel(itemID: item, kind: kind, label: try f.string())
        }
        guard currentTimestamp <= packetEnd else {
            throw fail("event timestamp \(currentTimestamp) after the packet's end \(packetEnd)", at: start + 1)
        }
        position = f.offset
        return TraceEvent(timestamp: currentTimestamp, threadID: threadID, payload: payload)
    }
}

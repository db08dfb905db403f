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
    private let decoder: PayloadDecoder
    private(set) var currentTimestamp: UInt64 = 0
    /// The process every event of the stream is from, when the reader knows it (a live recording's registration).
    var processID: Int32 = 0
    /// Events walked over, known or not: what the stream holds, for the trace's own accounting.
    private(set) var eventsDecoded: UInt64 = 0
    /// The timestamp of the last event read (0 before the first).
    var lastEventTimestamp: UInt64 { lastTimestamp }
    /// The file's name in its folder (`stream-6143`).
    var fileName: String { String(path.split(separator: "/").last ?? Substring(path)) }
    /// The file's size now.
    var fileSize: UInt64 {
        var info = stat()
        return fstat(fd, &info) == 0 ? UInt64(info.st_size) : 0
    }

    /// Packets larger than this are treated as corruption rather than allocated.
    static let maxPacketSize = 64 << 20

    /// Whether the file may end inside a packet (a recording cut off by its process's death): that packet is
    /// then the stream's end, not corruption.
    private let mayEndMidPacket: Bool

    init(path: String, uuid: [UInt8], plan: DecodingPlan, mayEndMidPacket: Bool = false) throws(TraceReadError) {
        self.path = path
        self.mayEndMidPacket = mayEndMidPacket
        self.uuid = uuid
        decoder = PayloadDecoder(plan: plan)
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
        UnsafeRawBufferPointer(packet).littleEndian(T.self, at: offset)
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

    /// The byte offset in the file of the packet the current event is in.
    var currentPacketOffset: UInt64 { packetOffset }

    /// Moves past every whole packet the file holds now without decoding their events, taking over their
    /// sequence numbers and discard counts as seen (a live view starts from here: what came before is not its
    /// loss). A packet still being written is left for the next ``advance(health:)``.
    func skipToEnd() throws(TraceReadError) {
        var size = stat()
        guard fstat(fd, &size) == 0 else { return }
        let headerSize = TraceSchema.packetHeaderSize
        while try readFully(into: packet.baseAddress!, count: headerSize, at: nextPacketOffset) == headerSize {
            packetOffset = nextPacketOffset
            guard load(UInt32.self, at: 0) == TraceSchema.magic else { throw fail("bad packet magic (not a CTF packet)", at: 0) }
            let packetBits = load(UInt64.self, at: 44)
            guard packetBits % 8 == 0, packetBits / 8 >= UInt64(headerSize), packetBits / 8 <= UInt64(Self.maxPacketSize) else {
                throw fail("impossible packet size (\(packetBits) bits)", at: 44)
            }
            guard UInt64(size.st_size) >= packetOffset + packetBits / 8 else { break }
            lastTimestamp = max(lastTimestamp, load(UInt64.self, at: 28))
            lastSequence = load(UInt64.self, at: 52)
            lastDiscarded = load(UInt64.self, at: 60)
            threadID = load(Int32.self, at: 68)
            nextPacketOffset += packetBits / 8
        }
        position = 0
        contentEnd = 0
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
        if got < headerSize && mayEndMidPacket { return false }
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
        if read < body && mayEndMidPacket { return false }
        guard read == body else {
            throw fail("truncated packet: \(read) of \(body) event bytes present", at: headerSize + read)
        }
        // Loss accounting: cumulative discards and sequence gaps, each with the window it affects.
        if discarded < lastDiscarded {
            throw fail("events_discarded went down (\(lastDiscarded) to \(discarded))", at: 60)
        }
        if discarded > lastDiscarded {
            health.eventsLost = health.eventsLost.addingLoss(discarded - lastDiscarded)
            health.noteLossWindow(.init(stream: "tid \(threadID)", from: lastTimestamp, to: max(begin, lastTimestamp), events: discarded - lastDiscarded))
            lastDiscarded = discarded
        }
        if let lastSequence {
            guard sequence > lastSequence else { throw fail("packet sequence number \(sequence) does not follow \(lastSequence)", at: 52) }
            if sequence > lastSequence + 1 {
                health.packetsLost = health.packetsLost.addingLoss(sequence - lastSequence - 1)
                health.noteLossWindow(.init(stream: "tid \(threadID)", from: lastTimestamp, to: begin, events: 0))
            }
        } else if sequence > 0 {
            health.packetsLost = health.packetsLost.addingLoss(sequence)
            health.noteLossWindow(.init(stream: "tid \(threadID)", from: 0, to: begin, events: 0))
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

    /// Decodes the current event and moves past it: nil when it is an event this build does not know (walked
    /// over by its declared fields; the caller counts it).
    func decodeCurrent() throws(TraceReadError) -> TraceEvent? {
        let start = position
        var offset = start + TraceSchema.eventHeaderSize
        let payload: TraceEvent.Payload?
        do {
            payload = try decoder.payload(rawID: Int(packet[start]), eventStart: start, in: UnsafeRawBufferPointer(packet),
                                          offset: &offset, end: contentEnd)
        } catch {
            throw fail(error.reason, at: error.offset)
        }
        guard currentTimestamp <= packetEnd else {
            throw fail("event timestamp \(currentTimestamp) after the packet's end \(packetEnd)", at: start + 1)
        }
        position = offset
        eventsDecoded += 1
        return payload.map { TraceEvent(timestamp: currentTimestamp, threadID: threadID, processID: processID, payload: $0) }
    }
}

import Glibc
import TraceModel

/// One connection to a relay daemon's live port, speaking LTTng's viewer protocol (version 2.4, what
/// `lttng-relayd` 2.13 serves): big-endian, packed records, one request answered by one reply. Every socket
/// operation has a deadline, so a relay daemon that stops answering is an error, never a hang.
final class RelayViewerConnection {
    let relay: String
    private let fd: Int32

    /// A session as the relay daemon lists it.
    struct Session: Equatable {
        var id: UInt64
        var liveTimer: UInt32
        /// Viewers attached to it: a relay daemon lets one viewer follow a session at a time.
        var clients: UInt32
        var streams: UInt32
        var host: String
        var name: String
    }

    /// A stream of an attached session: a data stream (`channel_N`) or the metadata.
    struct Stream: Equatable {
        var id: UInt64
        var traceID: UInt64
        var isMetadata: Bool
        var path: String
        var channel: String
    }

    enum Command: UInt32 {
        case connect = 1, listSessions = 2, attachSession = 3, nextIndex = 4, packet = 5, metadata = 6, newStreams = 7,
             createSession = 8, detachSession = 9
    }

    /// Connects to `net://HOST[:LIVE_PORT]` (port 5344 when none is given) and introduces itself as a viewer.
    init(relay url: String, timeout: Duration = .seconds(10)) throws(TraceReadError) {
        relay = url
        guard let (host, port) = Self.liveEndpoint(url) else {
            throw TraceReadError(path: url, reason: "not a relay daemon's live URL (net://HOST[:LIVE_PORT])")
        }
        fd = try Self.connect(host: host, port: port, timeout: timeout, url: url)
        do throws(TraceReadError) {
            var request = Record()
            request.u64(0)
            request.u32(2)
            request.u32(4)
            request.u32(1)    // a client of commands (2 would be one of notifications)
            try send(.connect, request)
            var reply = try receive(20)
            _ = reply.u64()
            let major = reply.u32()
            guard major == 2 else { throw failure("the relay daemon speaks live protocol \(major), not 2") }
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    func listSessions() throws(TraceReadError) -> [Session] {
        try send(.listSessions, Record())
        var count = try receive(4)
        return try (0..<count.u32()).map { _ throws(TraceReadError) in
            var record = try receive(8 + 4 + 4 + 4 + 64 + 255)
            return Session(id: record.u64(), liveTimer: record.u32(), clients: record.u32(), streams: record.u32(),
                           host: record.text(64), name: record.text(255))
        }
    }

    /// Makes this connection a viewer session, which attaching needs.
    func createViewerSession() throws(TraceReadError) {
        try send(.createSession, Record())
        var reply = try receive(4)
        guard reply.u32() == 1 else { throw failure("the relay daemon refused to create a viewer session") }
    }

    enum Attached {
        case streams([Stream])
        /// Another viewer follows the session.
        case alreadyFollowed
        case unknown
        case notLive
    }

    /// Attaches to a session from where it is now (the relay sends no past).
    func attach(session: UInt64) throws(TraceReadError) -> Attached {
        var request = Record()
        request.u64(session)
        request.u64(0)    // an offset the protocol does not use
        request.u32(2)    // from the newest packets, not the beginning
        try send(.attachSession, request)
        var reply = try receive(8)
        let status = reply.u32()
        let streams = try receiveStreams(reply.u32())
        switch status {
        case 1: return .streams(streams)
        case 2: return .alreadyFollowed
        case 3, 6: return .unknown
        case 4: return .notLive
        default: throw failure("the relay daemon did not attach the session (status \(status))")
        }
    }

    enum NewStreams {
        case streams([Stream])
        case sessionEnded
    }

    func newStreams(session: UInt64) throws(TraceReadError) -> NewStreams {
        var request = Record()
        request.u64(session)
        try send(.newStreams, request)
        var reply = try receive(8)
        let status = reply.u32()
        let streams = try receiveStreams(reply.u32())
        switch status {
        case 1, 2: return .streams(streams)
        case 4: return .sessionEnded
        default: throw failure("the relay daemon could not list the session's new streams (status \(status))")
        }
    }

    /// The relay's answer to "what is the next packet of this stream".
    struct Index {
        enum Status: UInt32 { case ok = 1, retry = 2, hungUp = 3, error = 4, inactive = 5, end = 6 }
        var offset: UInt64
        var packetSize: UInt64
        var contentSize: UInt64
        var timestampBegin: UInt64
        var timestampEnd: UInt64
        var eventsDiscarded: UInt64
        var streamID: UInt64
        var status: Status
        var newMetadata: Bool
        var newStreams: Bool
    }

    func nextIndex(stream: UInt64) throws(TraceReadError) -> Index {
        var request = Record()
        request.u64(stream)
        try send(.nextIndex, request)
        var reply = try receive(7 * 8 + 4 + 4)
        let offset = reply.u64(), packetSize = reply.u64(), contentSize = reply.u64()
        let begin = reply.u64(), end = reply.u64(), discarded = reply.u64(), id = reply.u64()
        let raw = reply.u32(), flags = reply.u32()
        guard let status = Index.Status(rawValue: raw) else { throw failure("unknown index status \(raw)") }
        return Index(offset: offset, packetSize: packetSize, contentSize: contentSize, timestampBegin: begin,
                     timestampEnd: end, eventsDiscarded: discarded, streamID: id, status: status,
                     newMetadata: flags & 1 != 0, newStreams: flags & 2 != 0)
    }

    enum Packet {
        case data([UInt8])
        case retry
        case end
        /// The metadata or the stream list changed first: fetch them, then ask again.
        case needsMetadata
        case needsStreams
    }

    /// `length` bytes of a stream's packet at `offset` (as its index says, in bytes).
    func packet(stream: UInt64, offset: UInt64, length: UInt32) throws(TraceReadError) -> Packet {
        var request = Record()
        request.u64(stream)
        request.u64(offset)
        request.u32(length)
        try send(.packet, request)
        var reply = try receive(12)
        let status = reply.u32(), size = reply.u32(), flags = reply.u32()
        switch status {
        case 1:
            guard size == length else { throw failure("the relay daemon sent \(size) bytes of a packet of \(length)") }
            return .data(try receive(Int(size)).bytes)
        // Relays before 2.9 said "new metadata" or "new streams" with an error status and the flag.
        case 2, 3:
            if flags & 1 != 0 { return .needsMetadata }
            if flags & 2 != 0 { return .needsStreams }
            if status == 2 { return .retry }
            throw failure("the relay daemon could not send a packet (status \(status))")
        case 4: return .end
        default: throw failure("the relay daemon could not send a packet (status \(status))")
        }
    }

    /// The metadata text that arrived since the last call (empty when none), nil once the stream hung up.
    func metadata(stream: UInt64) throws(TraceReadError) -> [UInt8]? {
        var request = Record()
        request.u64(stream)
        try send(.metadata, request)
        var reply = try receive(12)
        let length = reply.u64(), status = reply.u32()
        switch status {
        case 1:
            guard length <= 64 << 20 else { throw failure("the relay daemon announced \(length) bytes of metadata") }
            return try receive(Int(length)).bytes
        case 2: return []
        default: return nil
        }
    }

    func detach(session: UInt64) throws(TraceReadError) {
        var request = Record()
        request.u64(session)
        try send(.detachSession, request)
        _ = try receive(4)
    }

    // ===== wire =====

    private func receiveStreams(_ count: UInt32) throws(TraceReadError) -> [Stream] {
        try (0..<count).map { _ throws(TraceReadError) in
            var record = try receive(8 + 8 + 4 + 4096 + 255)
            return Stream(id: record.u64(), traceID: record.u64(), isMetadata: record.u32() != 0,
                          path: record.text(4096), channel: record.text(255))
        }
    }

    private func send(_ command: Command, _ payload: Record) throws(TraceReadError) {
        var message = Record()
        message.u64(UInt64(payload.bytes.count))
        message.u32(command.rawValue)
        message.u32(0)
        message.bytes += payload.bytes
        var sent = 0
        while sent < message.bytes.count {
            let count = message.bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw failure(errno == EAGAIN ? "the relay daemon stopped answering" : "lost the connection: \(String(cString: strerror(errno)))") }
            sent += count
        }
    }

    private func receive(_ count: Int) throws(TraceReadError) -> Record {
        var bytes = [UInt8](repeating: 0, count: count)
        var received = 0
        while received < count {
            let got = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + received, count - received, 0) }
            if got < 0 && errno == EINTR { continue }
            if got == 0 { throw failure("the relay daemon closed the connection") }
            guard got > 0 else { throw failure(errno == EAGAIN ? "the relay daemon stopped answering" : "lost the connection: \(String(cString: strerror(errno)))") }
            received += got
        }
        return Record(bytes)
    }

    private func failure(_ reason: String) -> TraceReadError { TraceReadError(path: relay, reason: reason) }

    /// The host and live port of `net://HOST[:PORT]`, `net4://` or `net6://` (an IPv6 address in brackets).
    static func liveEndpoint(_ url: String) -> (host: String, port: UInt16)? {
        guard let (host, ports) = RelayAddress.parse(url, schemes: ["net://", "net4://", "net6://"], allowingPath: true),
              ports.count <= 1 else { return nil }
        return (String(host), ports.first ?? 5344)
    }

    private static func connect(host: String, port: UInt16, timeout: Duration, url: String) throws(TraceReadError) -> Int32 {
        let family = url.hasPrefix("net6://") ? AF_INET6 : url.hasPrefix("net4://") ? AF_INET : AF_UNSPEC
        switch TCPConnection.open(host: host, port: port, family: family, timeout: timeout) {
        case .success(let fd): return fd
        case .failure(.connect(let reason)): throw TraceReadError(path: url, reason: "cannot connect to the relay daemon's live port (\(reason))")
        case .failure(let failure): throw TraceReadError(path: url, reason: failure.reason)
        }
    }
}

/// A big-endian packed record being written or read, as the viewer protocol lays them out.
struct Record {
    var bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8] = []) { self.bytes = bytes }

    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }

    mutating func u64() -> UInt64 {
        defer { position += 8 }
        return bytes[position..<position + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func u32() -> UInt32 {
        defer { position += 4 }
        return bytes[position..<position + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A NUL-padded text field of `width` bytes.
    mutating func text(_ width: Int) -> String {
        defer { position += width }
        let field = bytes[position..<position + width]
        return String(decoding: field.prefix { $0 != 0 }, as: UTF8.self)
    }
}

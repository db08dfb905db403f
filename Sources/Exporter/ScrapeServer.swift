import Foundation
import Glibc

/// The HTTP side of `rlctl top --serve`: answers `GET /metrics` with what `metrics` renders, on one thread, one
/// connection at a time (Prometheus scrapes once every few seconds; a scrape is one registry rendering). Each
/// connection has a 2 s deadline to send its request and take the answer, so a client that stalls cannot hold
/// the exporter; a request larger than 8 KiB is refused. Loopback only unless `allowRemote`: the loops'
/// names, threads and programs are this machine's, not the network's.
public final class ScrapeServer: @unchecked Sendable {
    /// The address as bound (a port of 0 asks the kernel for a free one, shown here).
    public let address: String
    public let port: UInt16
    private let listener: Int32
    /// A pipe whose write end ``stop()`` writes to, ending the poll.
    private let wake: (read: Int32, write: Int32)
    private let metrics: @Sendable () -> [UInt8]
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Parses `HOST:PORT` (`127.0.0.1:9464`, `localhost:9464`, `[::1]:9464`, `0.0.0.0:9464`), binds and listens.
    public init(serving address: String, allowRemote: Bool, metrics: @escaping @Sendable () -> [UInt8]) throws(Failure) {
        let (host, port) = try Self.split(address)
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0, let first = found else {
            throw Failure(description: "--serve \(address): cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(found) }
        guard allowRemote || Self.isLoopback(first.pointee.ai_addr) else {
            throw Failure(description: "--serve \(address): not a loopback address, so other machines could read this machine's loops; give --serve-public to serve them anyway")
        }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "--serve \(address): cannot make a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0, listen(fd, 16) == 0 else {
            let reason = errno == EADDRINUSE ? "the port is in use (another exporter?)"
                : errno == EADDRNOTAVAIL ? "no interface of this machine has that address"
                : errno == EACCES ? "a port below 1024 needs root" : String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "--serve \(address): cannot listen: \(reason)")
        }
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let boundPort = withUnsafePointer(to: &bound) { pointer -> UInt16 in
            pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        listener = fd
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            close(fd)
            throw Failure(description: "--serve \(address): cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        for end in ends + [fd] { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        wake = (ends[0], ends[1])
        self.port = boundPort
        self.address = host.contains(":") ? "[\(host)]:\(boundPort)" : "\(host):\(boundPort)"
        self.metrics = metrics
    }

    /// Serves on a thread of its own until ``stop()``.
    public func start() {
        let thread = Thread { [self] in
            serve()
            finished.signal()
        }
        thread.name = "rlctl-exporter"
        self.thread = thread
        thread.start()
    }

    /// Stops serving and closes the socket (a connection being answered is finished first, within its deadline).
    public func stop() {
        var one: UInt8 = 1
        _ = write(wake.write, &one, 1)
        if thread != nil { finished.wait() }
        thread = nil
        close(listener)
        close(wake.read)
        close(wake.write)
    }

    private func serve() {
        var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        while true {
            guard poll(&fds, 2, -1) >= 0 else {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            answer(connection)
            close(connection)
        }
    }

    /// Reads one request and writes one answer; the connection is closed after it.
    private func answer(_ connection: Int32) {
        var deadline = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &deadline, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &deadline, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while request.count <= 8192 {
            let count = read(connection, &chunk, chunk.count)
            guard count > 0 else { return }   // closed, or the deadline passed: nothing to answer
            request += chunk[0..<count]
            if request.firstRange(of: end) != nil { break }
        }
        guard request.count <= 8192 else {
            respond(connection, status: "431 Request Header Fields Too Large", body: Array("request too large\n".utf8))
            // Closing with the rest of the request unread would reset the connection before the client reads the
            // answer: read a little more (256 KiB at most, within the deadline) after saying we are done.
            shutdown(connection, Int32(SHUT_WR))
            var drained = 0
            while drained < 256 * 1024 {
                let count = read(connection, &chunk, chunk.count)
                guard count > 0 else { break }
                drained += count
            }
            return
        }
        let line = String(decoding: request.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self).split(separator: " ")
        guard line.count == 3, line[2].hasPrefix("HTTP/1.") else {
            return respond(connection, status: "400 Bad Request", body: Array("not an HTTP/1.x request\n".utf8))
        }
        let path = line[1].split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        guard line[0] == "GET" || line[0] == "HEAD" else {
            return respond(connection, status: "405 Method Not Allowed", body: Array("only GET\n".utf8), extra: "Allow: GET, HEAD\r\n")
        }
        let head = line[0] == "HEAD"
        switch path {
        case "/metrics":
            respond(connection, status: "200 OK", body: metrics(), type: "text/plain; version=0.0.4; charset=utf-8", head: head)
        case "/":
            respond(connection, status: "200 OK", body: Array("rlctl top --serve: the loops rlctl sees, for Prometheus, at /metrics\n".utf8), head: head)
        default:
            respond(connection, status: "404 Not Found", body: Array("no such page: the metrics are at /metrics\n".utf8), head: head)
        }
    }

    private func respond(_ connection: Int32, status: String, body: [UInt8], type: String = "text/plain; charset=utf-8",
                         extra: String = "", head: Bool = false) {
        let header = "HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\n\(extra)Connection: close\r\n\r\n"
        var bytes = Array(header.utf8)
        if !head { bytes += body }
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return }   // the client left, or the deadline passed
            sent += count
        }
    }

    /// `HOST:PORT` into its parts; IPv6 hosts in brackets.
    static func split(_ address: String) throws(Failure) -> (host: String, port: UInt16) {
        let host: Substring
        let portText: Substring
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") {
            host = address[address.index(after: address.startIndex)..<close]
            let rest = address[address.index(after: close)...]
            guard rest.hasPrefix(":") else { throw Failure(description: "--serve \(address): give HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:9464") }
            portText = rest.dropFirst()
        } else if let colon = address.lastIndex(of: ":"), !address[..<colon].contains(":") {
            host = address[..<colon]
            portText = address[address.index(after: colon)...]
        } else {
            throw Failure(description: "--serve \(address): give HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:9464")
        }
        guard !host.isEmpty else { throw Failure(description: "--serve \(address): the host is missing, e.g. 127.0.0.1:9464") }
        guard let port = UInt16(portText) else {
            throw Failure(description: "--serve \(address): the port must be a number from 0 to 65535 (0: any free port)")
        }
        return (String(host), port)
    }

    static func isLoopback(_ address: UnsafeMutablePointer<sockaddr>?) -> Bool {
        guard let address else { return false }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) >> 24 == 127 }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { socket in
                withUnsafeBytes(of: socket.pointee.sin6_addr) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
            }
        default:
            return false
        }
    }
}

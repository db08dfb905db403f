import Glibc
import RunLoopCore

/// Just enough HTTP/1.1 for a scrape, served by the loop itself: a descriptor source accepts on a loopback socket,
/// one per connection reads the request, and the answer is written and the connection closed. The loop's own work
/// (a slow answer included) is what its metrics measure.
final class LoopHTTPServer: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// What a request's path ("/metrics", "/burn?ms=60") is answered with: a status and a plain-text body.
    typealias Respond = @Sendable (_ path: String) -> (status: Int, body: String)

    let port: Int
    private let listener: DescriptorSource

    init(port: Int, on loop: Loop, respond: @escaping Respond) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { general in
                bind(fd, general, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, general, &length) == 0
            }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "cannot listen on 127.0.0.1:\(port): \(reason)")
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        listener = DescriptorSource(fileDescriptor: fd, label: "http-accept", cancel: { close($0.fileDescriptor) }) { [weak loop] _, _ in
            while let loop {
                let connection = accept(fd, nil, nil)
                guard connection >= 0 else { return }   // EAGAIN: every waiting connection is taken
                _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
                _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                loop.add(Connection.source(fd: connection, respond: respond), forMode: .default)
            }
        }
        loop.add(listener, forMode: .default)
    }

    /// Stops accepting and closes the listening socket.
    func stop() { listener.invalidate() }
}

/// One connection: its request read as it arrives, answered once the header is whole, then closed. Loop thread only.
private final class Connection: @unchecked Sendable {
    private var request: [UInt8] = []

    /// The connection's source, which owns it (and closes `fd` when invalidated).
    static func source(fd: Int32, respond: @escaping LoopHTTPServer.Respond) -> DescriptorSource {
        let connection = Connection()
        return DescriptorSource(fileDescriptor: fd, label: "http", cancel: { close($0.fileDescriptor) }) { source, _ in
            connection.read(from: source, respond: respond)
        }
    }

    private func read(from source: DescriptorSource, respond: LoopHTTPServer.Respond) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = recv(source.fileDescriptor, &chunk, chunk.count, 0)
        if count < 0 && (errno == EAGAIN || errno == EINTR) { return }
        guard count > 0, request.count + count <= 16 * 1024 else { return source.invalidate() }   // gone, or not a scrape
        request += chunk[..<count]
        guard let header = String(decoding: request, as: UTF8.self).split(separator: "\r\n\r\n", maxSplits: 1,
                                                                         omittingEmptySubsequences: false).first,
              request.count >= header.utf8.count + 4 else { return }
        let words = header.prefix { !$0.isNewline }.split(separator: " ")
        let (status, body) = words.count == 3 && words[0] == "GET" ? respond(String(words[1])) : (405, "GET only\n")
        let reason = [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"][status] ?? "Error"
        let head = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/plain; version=0.0.4\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        let answer = Array((head + body).utf8)
        write(answer, to: source.fileDescriptor)
        source.invalidate()
    }

    /// Writes all of `bytes`, waiting for room when the socket's buffer is full (a large scrape, a slow reader).
    private func write(_ bytes: [UInt8], to fd: Int32) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 {
                sent += count
            } else if count < 0 && (errno == EAGAIN || errno == EINTR) {
                var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                guard poll(&ready, 1, 1000) > 0 else { return }   // a reader that takes no more: drop it
            } else {
                return
            }
        }
    }
}

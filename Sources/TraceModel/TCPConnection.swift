import Glibc

/// A TCP connection to a relay daemon's port, each address its name resolves to tried in turn (`localhost` may be
/// ::1 first while the daemon listens on IPv4), each within `timeout`: what recording (`RelayURL`) and viewing
/// (`RelayViewerConnection`) both do to reach one.
public enum TCPConnection {
    public enum Failure: Error {
        /// "cannot resolve HOST: …"
        case resolve(String)
        /// "cannot make a socket: …"
        case socket(String)
        /// "HOST port PORT: Connection refused", "… no answer within 5 s"
        case connect(String)

        public var reason: String {
            switch self {
            case .resolve(let reason), .socket(let reason), .connect(let reason): reason
            }
        }
    }

    /// A connected, blocking socket whose sends and receives each time out after `timeout` (the caller closes
    /// it); `family` is `AF_UNSPEC`, `AF_INET` or `AF_INET6`.
    public static func open(host: String, port: UInt16, family: Int32 = AF_UNSPEC, timeout: Duration) -> Result<Int32, Failure> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = family
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0, found != nil else { return .failure(.resolve("cannot resolve \(host): \(String(cString: gai_strerror(status)))")) }
        defer { freeaddrinfo(found) }
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        var reason = "no address"
        var address = found
        while let candidate = address {
            address = candidate.pointee.ai_next
            let fd = socket(candidate.pointee.ai_family, candidate.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return .failure(.socket("cannot make a socket: \(String(cString: strerror(errno)))")) }
            if let problem = connect(fd, candidate, milliseconds: milliseconds) {
                reason = problem == "timeout" ? "no answer within \(timeout)" : problem
                close(fd)
                continue
            }
            // Blocking from here, every call under the deadline.
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            var limit = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            var on: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            return .success(fd)
        }
        return .failure(.connect("\(host) port \(port): \(reason)"))
    }

    /// Nil once connected, else why not ("timeout" when no answer came in time).
    private static func connect(_ fd: Int32, _ address: UnsafeMutablePointer<addrinfo>, milliseconds: Int32) -> String? {
        if Glibc.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return nil }
        guard errno == EINPROGRESS || errno == EINTR else { return String(cString: strerror(errno)) }
        var waiting = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&waiting, 1, milliseconds) == 1 else { return "timeout" }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error == 0 ? nil : String(cString: strerror(error))
    }
}

import Glibc
import TraceModel

/// The relay daemon URLs `lttng create --set-url` takes, and the name this host's traces have on a relay.
public enum RelayURL {
    static let schemes = ["net://", "net6://", "tcp://", "tcp6://"]

    /// The relay daemon's control port when the URL names none (`lttng-relayd`'s default).
    public static let defaultControlPort: UInt16 = 5342

    /// The host and control port of a well-formed URL.
    public static func controlEndpoint(_ url: String) -> (host: String, port: UInt16)? {
        parse(url).map { (String($0.host), $0.ports.first ?? defaultControlPort) }
    }

    /// Why the relay daemon at `url` cannot be reached (a TCP connection to its control port within `timeout`),
    /// nil when it answers. lttng itself only finds out later, and says "Unknown error".
    public static func unreachableReason(_ url: String, timeout: Duration = .seconds(5)) -> String? {
        guard let (host, port) = controlEndpoint(url) else { return "not a relay daemon URL" }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = url.hasPrefix("net6://") || url.hasPrefix("tcp6://") ? AF_INET6 : AF_UNSPEC
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0, let first = found else { return "cannot resolve \(host): \(String(cString: gai_strerror(status)))" }
        defer { freeaddrinfo(found) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return "cannot make a socket: \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        if connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 { return nil }
        guard errno == EINPROGRESS else { return "\(host) port \(port): \(String(cString: strerror(errno)))" }
        var waiting = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&waiting, 1, milliseconds) == 1 else { return "\(host) port \(port): no answer within \(timeout)" }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error == 0 ? nil : "\(host) port \(port): \(String(cString: strerror(error)))"
    }

    /// Whether `url` has a relay scheme, a host, and ports (when given) that are numbers in range: what lttng
    /// itself would reject later with a less clear message.
    public static func isWellFormed(_ url: String) -> Bool { parse(url) != nil }

    private static func parse(_ url: String) -> (host: Substring, ports: [UInt16])? {
        RelayAddress.parse(url, schemes: schemes)
    }
}

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
        let family = url.hasPrefix("net6://") || url.hasPrefix("tcp6://") ? AF_INET6 : AF_UNSPEC
        switch TCPConnection.open(host: host, port: port, family: family, timeout: timeout) {
        case .success(let fd):
            close(fd)
            return nil
        case .failure(let failure):
            return failure.reason
        }
    }

    /// Whether `url` has a relay scheme, a host, and ports (when given) that are numbers in range: what lttng
    /// itself would reject later with a less clear message.
    public static func isWellFormed(_ url: String) -> Bool { parse(url) != nil }

    private static func parse(_ url: String) -> (host: Substring, ports: [UInt16])? {
        RelayAddress.parse(url, schemes: schemes)
    }
}

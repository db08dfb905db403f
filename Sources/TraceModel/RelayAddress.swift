/// The parts of a relay daemon URL, `SCHEME://HOST[:PORT[:PORT]]`: what recording (`lttng create --set-url`, a
/// control and a data port) and live viewing (`net://HOST[:LIVE_PORT]`) both parse.
public enum RelayAddress {
    /// The host (without an IPv6 address's brackets) and the ports a URL names, nil when it has none of the
    /// `schemes`, no host, or ports that are not numbers in range. A trailing path (`/host/H/S`) is kept apart
    /// when `allowingPath`, and refused otherwise.
    public static func parse(_ url: String, schemes: [String], allowingPath: Bool = false) -> (host: Substring, ports: [UInt16])? {
        guard let scheme = schemes.first(where: { url.hasPrefix($0) }) else { return nil }
        var rest = Substring(url.dropFirst(scheme.count))
        if allowingPath, let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let host: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            rest = rest[rest.index(after: close)...]
        } else {
            host = rest.prefix { $0 != ":" }
            rest = rest.dropFirst(host.count)
        }
        guard !host.isEmpty, !host.contains("/") else { return nil }
        guard !rest.isEmpty else { return (host, []) }
        guard rest.hasPrefix(":") else { return nil }
        let ports = rest.dropFirst().split(separator: ":", omittingEmptySubsequences: false).map { UInt16($0) ?? 0 }
        guard ports.count <= 2, ports.allSatisfy({ $0 > 0 }) else { return nil }
        return (host, ports)
    }
}

import NIOCore

/// The server's command line: `--port P` (0: any free port), `--threads N`, `--duration D` (run for D, then shut
/// down; forever without it), `--probe D` (the lateness probe every D), `--metrics` (its loops' metrics at
/// GET /metrics, in Prometheus's format). Durations: 250ms, 6s, 1m, 500us.
public struct Options: Sendable {
    public var port = 8080
    public var threads = 1
    public var duration: TimeAmount?
    public var probeInterval: TimeAmount?
    public var metrics = false

    public struct UsageError: Error {
        public let message: String
    }

    public init(arguments: [String]) throws(UsageError) {
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            if flag == "--metrics" {
                metrics = true
                continue
            }
            guard let value = remaining.popFirst() else { throw UsageError(message: "\(flag) needs a value") }
            switch flag {
            case "--port":
                guard let port = Int(value), (0...65_535).contains(port) else {
                    throw UsageError(message: "--port must be 0...65535, not \(value)")
                }
                self.port = port
            case "--threads":
                guard let threads = Int(value), (1...256).contains(threads) else {
                    throw UsageError(message: "--threads must be 1...256, not \(value)")
                }
                self.threads = threads
            case "--duration":
                duration = try Self.duration(value, of: flag)
            case "--probe":
                probeInterval = try Self.duration(value, of: flag)
            default:
                throw UsageError(message: "unknown option \(flag) (options: --port P --threads N --duration D --probe D --metrics)")
            }
        }
    }

    /// "250ms" → 250 ms; positive, with a unit.
    static func duration(_ text: String, of flag: String) throws(UsageError) -> TimeAmount {
        let units: [(suffix: String, nanoseconds: Int64)] = [("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000)]
        for unit in units where text.hasSuffix(unit.suffix) {
            let number = text.dropLast(unit.suffix.count)
            // "ms" also ends in "s": only a number before the suffix counts.
            if let count = Int64(number), count > 0, count <= Int64.max / unit.nanoseconds {
                return .nanoseconds(count * unit.nanoseconds)
            }
        }
        throw UsageError(message: "\(flag) must be a positive duration such as 250ms or 6s, not \(text)")
    }
}

import CRunLoopLinux

extension Loop {
    /// A point on CLOCK_MONOTONIC, the clock timers run on and LTTng stamps trace events with, so a timer's
    /// fire date and a trace timestamp compare directly.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable, CustomStringConvertible {
        /// Nanoseconds on CLOCK_MONOTONIC.
        public var nanoseconds: UInt64

        public init(nanoseconds: UInt64) {
            self.nanoseconds = nanoseconds
        }

        /// The current time.
        public static var now: Instant { Instant(nanoseconds: crl_monotonic_ns()) }

        /// Later than any date a timer can have.
        public static let distantFuture = Instant(nanoseconds: UInt64.max / 2)

        public func advanced(by duration: Duration) -> Instant {
            let delta = duration.nanosecondsClamped
            if delta >= 0 {
                let (sum, overflow) = nanoseconds.addingReportingOverflow(UInt64(delta))
                return Instant(nanoseconds: overflow ? UInt64.max : min(sum, Instant.distantFuture.nanoseconds))
            }
            let magnitude = delta == Int64.min ? UInt64(Int64.max) + 1 : UInt64(-delta)
            return Instant(nanoseconds: nanoseconds > magnitude ? nanoseconds - magnitude : 0)
        }

        public func duration(to other: Instant) -> Duration {
            if other.nanoseconds >= nanoseconds {
                return .nanoseconds(Int64(clamping: other.nanoseconds - nanoseconds))
            }
            return .nanoseconds(-Int64(clamping: nanoseconds - other.nanoseconds))
        }

        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.nanoseconds < rhs.nanoseconds
        }

        public var description: String {
            "\(nanoseconds / 1_000_000_000).\(String(nanoseconds % 1_000_000_000).leftPadded(to: 9))s"
        }
    }
}

extension Duration {
    /// Whole nanoseconds, clamped to Int64 (about ±292 years).
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? Int64.min : Int64.max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? Int64.min : Int64.max }
        return sum
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}

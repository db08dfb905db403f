import TraceModel
import Histogram

/// A latency distribution in nanoseconds: an HDR histogram (3 significant digits, 1 ns to 1 hour).
public struct LatencyHistogram {
    private(set) var histogram = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000_000,
                                                   numberOfSignificantValueDigits: .three)
    private(set) var sum: Double = 0

    public init() {}

    public var count: UInt64 { histogram.totalCount }

    /// Records one value; values beyond an hour are clamped, never dropped.
    public mutating func record(_ nanoseconds: UInt64) {
        _ = histogram.record(min(max(nanoseconds, 1), 3_600_000_000_000))
        sum += Double(nanoseconds)
    }

    public mutating func merge(_ other: LatencyHistogram) {
        histogram.add(other.histogram)
        sum += other.sum
    }

    public var summary: DistributionSummary {
        guard count > 0 else { return DistributionSummary() }
        var buckets: [DistributionSummary.Bucket] = []
        // Power-of-two buckets, for the small text histograms.
        var upper: UInt64 = 1
        var lower: UInt64 = 0
        while lower <= histogram.max {
            let n = histogram.count(within: lower...(upper - 1))
            if n > 0 { buckets.append(.init(upTo: upper, count: n)) }
            lower = upper
            upper = upper << 1
        }
        return DistributionSummary(count: count, min: histogram.min, p50: histogram.valueAtPercentile(50),
                                   p90: histogram.valueAtPercentile(90), p99: histogram.valueAtPercentile(99),
                                   p999: histogram.valueAtPercentile(99.9), max: histogram.max,
                                   mean: sum / Double(count), buckets: buckets)
    }
}

/// A distribution's percentiles (nanoseconds) and power-of-two buckets.
public struct DistributionSummary: Codable, Sendable, Equatable {
    public var count: UInt64 = 0
    public var min: UInt64 = 0
    public var p50: UInt64 = 0
    public var p90: UInt64 = 0
    public var p99: UInt64 = 0
    public var p999: UInt64 = 0
    public var max: UInt64 = 0
    public var mean: Double = 0
    /// Counts per bucket `(previous upTo, upTo]` in ns, empty buckets left out.
    public var buckets: [Bucket] = []

    public struct Bucket: Codable, Sendable, Equatable {
        public var upTo: UInt64
        public var count: UInt64
    }

    /// The named statistic, for budgets: min, p50, p90, p99, p99.9, max, mean, count.
    public func value(of statistic: String) -> Double? {
        switch statistic {
        case "min": return Double(min)
        case "p50", "median": return Double(p50)
        case "p90": return Double(p90)
        case "p99": return Double(p99)
        case "p99.9", "p999": return Double(p999)
        case "max": return Double(max)
        case "mean": return mean
        case "count": return Double(count)
        default: return nil
        }
    }
}

/// A small log-linear histogram (16 steps per power of two, ≤ 6.25 % error) for per-timer and per-label
/// figures, where an HDR histogram per item would cost too much memory with thousands of items.
public struct CompactHistogram {
    private var counts = [UInt32](repeating: 0, count: 64 * 16)
    private(set) var count: UInt64 = 0
    private(set) var sum: Double = 0
    private(set) var minimum = UInt64.max
    private(set) var maximum: UInt64 = 0

    public init() {}

    private static func index(_ value: UInt64) -> Int {
        if value < 16 { return Int(value) }
        let exponent = 63 - value.leadingZeroBitCount          // ≥ 4
        let step = Int((value >> (exponent - 4)) & 15)
        return (exponent - 3) * 16 + step
    }

    private static func upperBound(_ index: Int) -> UInt64 {
        if index < 16 { return UInt64(index) }
        let exponent = index / 16 + 3
        let step = UInt64(index % 16)
        return ((16 + step + 1) << (exponent - 4)) - 1
    }

    public mutating func record(_ value: UInt64) {
        let i = Self.index(value)
        if counts[i] < UInt32.max { counts[i] += 1 }
        count += 1
        sum += Double(value)
        minimum = Swift.min(minimum, value)
        maximum = Swift.max(maximum, value)
    }

    public func percentile(_ p: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let target = UInt64((Double(count) * p / 100).rounded(.up))
        var seen: UInt64 = 0
        for (i, n) in counts.enumerated() where n > 0 {
            seen += UInt64(n)
            if seen >= max(target, 1) { return Swift.min(Self.upperBound(i), maximum) }
        }
        return maximum
    }

    public var summary: DistributionSummary {
        guard count > 0 else { return DistributionSummary() }
        return DistributionSummary(count: count, min: minimum, p50: percentile(50), p90: percentile(90), p99: percentile(99),
                                   p999: percentile(99.9), max: maximum, mean: sum / Double(count), buckets: [])
    }
}

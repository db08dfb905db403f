import TraceModel
import Histogram

/// A latency distribution in nanoseconds: an HDR histogram (3 significant digits, 1 ns to 1 hour), the one
/// percentile algorithm of every figure in a summary, so a timer's p99 is the same number in every section.
///
/// Its first values are kept as they are and go into the histogram only once there are more of them than a
/// histogram costs (4 KiB against 16–180 KiB): a trace can have thousands of timers that fire a few times each. Percentiles do not depend on when the values went in.
public struct LatencyHistogram {
    private static let highest: UInt64 = 3_600_000_000_000
    private static let keptValues = 512
    /// Auto-resizing: as precise as a histogram sized for an hour, and as big as the largest value needs. Every
    /// histogram starts as this one and shares its counts (copy on write) until it takes values.
    private static let empty = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
    /// Not an optional: recording through one copies the histogram in and out on every value.
    private var histogram = LatencyHistogram.empty
    private var inHistogram = false
    private var values: [UInt64] = []
    public private(set) var count: UInt64 = 0
    private(set) var sum: Double = 0

    public init() {}

    /// Records one value; values beyond an hour are clamped, never dropped. Zero is a value (a firing on time, an
    /// empty backlog), not rounded up to 1.
    public mutating func record(_ nanoseconds: UInt64) {
        count += 1
        sum += Double(nanoseconds)
        let value = min(nanoseconds, Self.highest)
        if inHistogram {
            histogram.record(value)
        } else {
            values.append(value)
            if values.count == Self.keptValues { moveValuesIntoHistogram() }
        }
    }

    private mutating func moveValuesIntoHistogram() {
        for value in values { histogram.record(value) }
        values = []
        inHistogram = true
    }

    public mutating func merge(_ other: LatencyHistogram) {
        guard other.count > 0 else { return }
        count += other.count
        sum += other.sum
        if other.inHistogram {
            if !inHistogram { moveValuesIntoHistogram() }
            histogram.add(other.histogram)
        } else if inHistogram {
            for value in other.values { histogram.record(value) }
        } else {
            values += other.values
            if values.count >= Self.keptValues { moveValuesIntoHistogram() }
        }
    }

    public var summary: DistributionSummary {
        guard count > 0 else { return DistributionSummary() }
        var histogram = self.histogram
        if !inHistogram { for value in values { histogram.record(value) } }
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

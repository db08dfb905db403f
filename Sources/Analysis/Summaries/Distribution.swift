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

    private mutating func moveValuesIntoHistogram(alsoUpTo other: UInt64 = 0) {
        histogram = Self.histogram(upTo: Swift.max(values.max() ?? 0, other))
        for value in values { histogram.record(value) }
        values = []
        inHistogram = true
    }

    /// An empty histogram whose counts already reach `largest`. Letting the auto-resizing one grow to it costs
    /// far more: the library grows its counts through an unspecialized generic append (~1 G instructions, 150 ms,
    /// in the summary of a 200 ms trace). Sizing changes no figure: the buckets do not depend on it.
    private static func histogram(upTo largest: UInt64) -> Histogram<UInt64> {
        var histogram = Histogram<UInt64>(highestTrackableValue: Swift.max(largest, 2), numberOfSignificantValueDigits: .three)
        histogram.autoResize = true
        return histogram
    }

    /// Grows the histogram to `largest` in one step (see ``histogram(upTo:)``) before values that large go in.
    private mutating func reach(_ largest: UInt64) {
        guard largest > histogram.highestTrackableValue else { return }
        let mine = histogram
        histogram = Self.histogram(upTo: largest)
        histogram.add(mine)
    }

    public mutating func merge(_ other: LatencyHistogram) {
        guard other.count > 0 else { return }
        count += other.count
        sum += other.sum
        if other.inHistogram {
            if inHistogram {
                reach(other.histogram.highestTrackableValue)
            } else {
                moveValuesIntoHistogram(alsoUpTo: other.histogram.highestTrackableValue)
            }
            histogram.add(other.histogram)
        } else if inHistogram {
            reach(other.values.max() ?? 0)
            for value in other.values { histogram.record(value) }
        } else {
            values += other.values
            if values.count >= Self.keptValues { moveValuesIntoHistogram() }
        }
    }

    public var summary: DistributionSummary { summary(withBuckets: true) }

    /// Its summary as a summarizer's options ask: the power-of-two buckets only when every figure is wanted
    /// (``TraceSummarizer/Figures/all``); `rlctl top`'s interval summaries (``TraceSummarizer/Figures/wakeLatencies``)
    /// show p99s, and take the p99 and the maximum alone: each percentile of a histogram is a walk of its counts
    /// through the library's unspecialized generic code, every second, for every loop. Its running totals
    /// (``TraceSummarizer/Figures/totals``) take the count and the mean alone.
    func summary(for options: TraceSummarizer.Options) -> DistributionSummary {
        if options.figures == .totals {
            var summary = DistributionSummary()
            summary.count = count
            summary.mean = count > 0 ? sum / Double(count) : 0
            return summary
        }
        guard options.figures == .wakeLatencies, inHistogram else { return summary(withBuckets: options.figures == .all) }
        var summary = DistributionSummary()
        summary.count = count
        summary.mean = sum / Double(count)
        summary.p99 = histogram.valueAtPercentile(99)
        summary.max = histogram.max
        return summary
    }

    /// The summary, without its power-of-two buckets unless `withBuckets`: a histogram's buckets cost a sweep of
    /// all its counts, through the histogram library's unspecialized generic code (about 40k counts up to a
    /// second), which `rlctl top`, showing p99s every second, does without.
    public func summary(withBuckets: Bool) -> DistributionSummary {
        guard count > 0 else { return DistributionSummary() }
        var summary = inHistogram ? Self.summary(of: histogram, withBuckets: withBuckets) : Self.summary(ofKept: values.sorted())
        summary.count = count
        summary.mean = sum / Double(count)
        return summary
    }

    /// The percentiles and power-of-two buckets of a histogram (count and mean left to the caller).
    static func summary(of histogram: Histogram<UInt64>, withBuckets: Bool = true) -> DistributionSummary {
        DistributionSummary(count: histogram.totalCount, min: histogram.min, p50: histogram.valueAtPercentile(50),
                            p90: histogram.valueAtPercentile(90), p99: histogram.valueAtPercentile(99),
                            p999: histogram.valueAtPercentile(99.9), max: histogram.max,
                            buckets: withBuckets ? powerOfTwoBuckets(through: histogram.max) { histogram.count(within: $0) } : [])
    }

    /// The non-empty power-of-two buckets `[0, 0]`, `[1, 1]`, `[2, 3]`, `[4, 7]`… up to the one holding `maximum`,
    /// for the small text histograms; `count` is asked for each range in ascending order.
    private static func powerOfTwoBuckets(through maximum: UInt64,
                                          count: (ClosedRange<UInt64>) -> UInt64) -> [DistributionSummary.Bucket] {
        var buckets: [DistributionSummary.Bucket] = []
        var upper: UInt64 = 1
        var lower: UInt64 = 0
        while lower <= maximum {
            let n = count(lower...(upper - 1))
            if n > 0 { buckets.append(.init(upTo: upper, count: n)) }
            lower = upper
            upper = upper << 1
        }
        return buckets
    }

    /// The same figures as ``summary(of:)`` for a histogram holding exactly `sorted` (ascending, not empty),
    /// without building one: the histogram's bucket arithmetic applied to the values themselves. Building it
    /// costs far more than the values (the library walks its counts through unspecialized generic code, some
    /// 50 instructions per slot and tens of thousands of slots per figure), and most distributions of a
    /// summary (each timer's, each callout kind's) hold only a few values. LatencyHistogramTests checks that
    /// both give the same figures.
    static func summary(ofKept sorted: [UInt64]) -> DistributionSummary {
        let buckets = empty // only its bucket arithmetic, which does not depend on what it holds
        let minimum = sorted.first!, maxRecorded = sorted.last!
        let maximum = maxRecorded == 0 ? 0 : buckets.highestEquivalentForValue(maxRecorded)
        func percentile(_ percentile: Double) -> UInt64 {
            // As Histogram.valueAtPercentile: one ulp less, times the count, rounded up, at least the first value.
            let requested = Swift.min(Swift.max(percentile.nextDown, 0.0), 100.0)
            let rank = Swift.max(1, UInt64(((requested * Double(sorted.count)) / 100.0).rounded(.up)))
            let value = sorted[Int(rank) - 1]
            return Swift.max(Swift.min(buckets.highestEquivalentForValue(value), maxRecorded), minimum)
        }
        var next = 0
        let counts = powerOfTwoBuckets(through: maximum) { range in
            // Histogram.count(within:) counts whole buckets: every value equivalent to one in the range (the
            // ranges come in ascending order, so one sweep of the sorted values counts them all).
            let last = buckets.highestEquivalentForValue(range.upperBound)
            let first = next
            while next < sorted.count, sorted[next] <= last { next += 1 }
            return UInt64(next - first)
        }
        return DistributionSummary(count: UInt64(sorted.count), min: minimum, p50: percentile(50), p90: percentile(90),
                                   p99: percentile(99), p999: percentile(99.9), max: maximum, buckets: counts)
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
    /// Counts per power-of-two bucket (``Bucket/lowest`` … ``Bucket/highest``), empty buckets left out.
    public var buckets: [Bucket] = []

    public struct Bucket: Codable, Sendable, Equatable {
        /// The bucket's end, not in it: values from `upTo / 2` to `upTo − 1` (0 alone when `upTo` is 1).
        public var upTo: UInt64
        public var count: UInt64

        /// The least value the bucket holds.
        public var lowest: UInt64 { upTo <= 1 ? 0 : upTo / 2 }
        /// The greatest value the bucket holds.
        public var highest: UInt64 { upTo == 0 ? 0 : upTo - 1 }
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

import Histogram
import Testing
import TestSupport
@testable import Analysis

/// A distribution of a few values is summarized from the values themselves, a larger one from its HDR histogram:
/// both must give the same figures, or one timer's p99 would depend on how often it fired.
@Suite struct LatencyHistogramTests {
    static func throughHistogram(_ values: [UInt64]) -> DistributionSummary {
        var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
        for value in values { histogram.record(value) }
        return LatencyHistogram.summary(of: histogram)
    }

    /// Values drawn so that they land on the awkward places: zero, exact small values, bucket edges and the
    /// wide buckets of large values, with repeats.
    static func sample(_ generator: inout SplitMix, count: Int) -> [UInt64] {
        (0..<count).map { _ in
            switch generator.next() % 6 {
            case 0: return 0
            case 1: return generator.next() % 2048
            case 2: return UInt64(1) << (generator.next() % 40)
            case 3: return (UInt64(1) << (generator.next() % 40)) &- 1
            case 4: return 1_000 * (1 + generator.next() % 5)
            default: return generator.next() % 3_600_000_000_000
            }
        }
    }

    @Test func keptValuesGiveTheHistogramsFigures() {
        let seed: UInt64 = 0x5EED_0010
        var generator = SplitMix(seed: seed)
        for round in 0..<200 {
            let values = Self.sample(&generator, count: 1 + Int(generator.next() % 512))
            let kept = LatencyHistogram.summary(ofKept: values.sorted())
            let expected = Self.throughHistogram(values)
            #expect(kept == expected, "seed \(seed), round \(round), values \(values.sorted().prefix(20))…")
            if kept != expected { return }
        }
    }

    @Test func oneValueAndAllEqualValues() {
        for values: [UInt64] in [[0], [1], [7], [2048], [2049], [123_456_789], [5, 5, 5, 5], [0, 0, 3_600_000_000_000]] {
            #expect(LatencyHistogram.summary(ofKept: values.sorted()) == Self.throughHistogram(values), "\(values)")
        }
    }

    @Test func aDistributionsFiguresDoNotDependOnWhetherItsValuesWereKept() {
        // 511 values stay as they are; one more moves them all into the histogram. The percentiles of the 511
        // must be the histogram's, so recording the 512th value changes only what that value changes.
        var generator = SplitMix(seed: 42)
        let values = Self.sample(&generator, count: 512)
        var kept = LatencyHistogram(), moved = LatencyHistogram()
        for value in values.dropLast() { kept.record(value); moved.record(value) }
        moved.merge(kept) // 1022 values: in the histogram
        var doubled = Self.throughHistogram(values.dropLast() + values.dropLast())
        doubled.mean = kept.summary.mean
        #expect(moved.summary == doubled)
        var single = Self.throughHistogram(Array(values.dropLast()))
        single.mean = kept.summary.mean
        #expect(kept.summary == single)
    }
}

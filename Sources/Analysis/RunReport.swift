import TraceModel

/// What `rlctl run --output` writes: every repetition's summary, so `compare` can judge noise.
public struct RunReport: Codable, Sendable {
    public var format = "rlctl-run-report/1"
    public var workload: String
    public var tracer: String
    public var repetitions: [TraceSummary]

    /// The workload's name when a run report gave it, nil for a summary or trace folder (which do not know it).
    public var workloadName: String? { tracer == "summary" || workload.isEmpty || isTraceFolder ? nil : workload }
    /// Set for reports made from a trace folder, whose `workload` is just the folder's path.
    public var isTraceFolder = false

    enum CodingKeys: String, CodingKey { case format, workload, tracer, repetitions }

    public init(workload: String, tracer: String, repetitions: [TraceSummary]) {
        self.workload = workload
        self.tracer = tracer
        self.repetitions = repetitions
    }

    /// The value of a metric in each repetition.
    public func values(of metric: Metric.Definition) -> [Double] {
        repetitions.map { metric.value(in: $0) }
    }
}

/// Noise-aware comparison of two sets of repetitions.
public enum Comparison {
    public struct Result: Sendable {
        public var metric: String
        public var baseline: Double      // median
        public var current: Double       // median
        /// Change of the medians: relative (0.1 = 10 % higher), or in points for ratios (0.1 = 10 points higher),
        /// since a utilization going from 40 % to 44 % is read as "+4 points", not "+10 %".
        public var change: Double
        /// Whether `change`, `low` and `high` are differences in points (ratio metrics) rather than relative.
        public var inPoints: Bool
        /// 95 % bootstrap confidence interval of the change.
        public var low: Double
        public var high: Double
        /// The whole interval is past the threshold in the worse direction.
        public var regressed: Bool
        /// The whole interval is past the threshold in the better direction.
        public var improved: Bool
        public var higherIsWorse: Bool
    }

    /// The tail metrics a comparison looks at by default.
    public static let defaultMetrics = [
        "timer.lateness.p99", "timer.lateness.p50", "loop.busy_per_iteration.p99", "wake.source.p99", "wake.block.p99",
        "wake.port.p99", "callout.timer.p99", "loop.utilization",
    ]

    /// Compares medians with a percentile bootstrap over repetitions (2,000 resamples, fixed seed so a verdict is
    /// reproducible). Metrics with no data on either side are left out. Ratio metrics change in points, and the
    /// threshold applies to them in points (10% = 10 points).
    public static func compare(baseline: RunReport, current: RunReport, metrics: [String], threshold: Double) -> [Result] {
        var results: [Result] = []
        var random = SplitMix64(seed: 0x51ab1e)
        for name in metrics {
            guard let metric = Metric.named(name) else { continue }
            let a = baseline.values(of: metric), b = current.values(of: metric)
            guard !a.isEmpty, !b.isEmpty else { continue }
            let ma = median(a), mb = median(b)
            guard ma > 0 || mb > 0 else { continue }
            let inPoints = metric.unit == .ratio
            func difference(_ new: Double, _ old: Double) -> Double { inPoints ? new - old : relative(new, old) }
            let change = difference(mb, ma)
            var samples: [Double] = []
            samples.reserveCapacity(2000)
            for _ in 0..<2000 {
                let ra = (0..<a.count).map { _ in a[Int(random.next() % UInt64(a.count))] }
                let rb = (0..<b.count).map { _ in b[Int(random.next() % UInt64(b.count))] }
                samples.append(difference(median(rb), median(ra)))
            }
            samples.sort()
            let low = samples[Int(0.025 * Double(samples.count))]
            let high = samples[min(samples.count - 1, Int(0.975 * Double(samples.count)))]
            let worseLow = metric.higherIsWorse ? low : -high
            let betterHigh = metric.higherIsWorse ? high : -low
            results.append(Result(metric: name, baseline: ma, current: mb, change: change, inPoints: inPoints, low: low, high: high,
                                  regressed: worseLow > threshold, improved: betterHigh < -threshold,
                                  higherIsWorse: metric.higherIsWorse))
        }
        return results
    }

    /// Why two reports may not be the same workload (so comparing them says little), nil when nothing suggests it:
    /// different workload names when both runs name one, else different timers or kinds of callouts.
    public static func workloadMismatch(baseline: RunReport, current: RunReport) -> String? {
        if let a = baseline.workloadName, let b = current.workloadName, a != b {
            return "the baseline ran workload \"\(a)\" and the current run \"\(b)\""
        }
        let a = shape(baseline), b = shape(current)
        if a.kinds != b.kinds {
            return "the baseline has \(list(a.kinds)) callouts and the current run \(list(b.kinds))"
        }
        if a.timers != b.timers {
            let onlyA = a.timers.subtracting(b.timers).sorted(), onlyB = b.timers.subtracting(a.timers).sorted()
            var parts: [String] = []
            if !onlyA.isEmpty { parts.append("only the baseline has \(list(onlyA))") }
            if !onlyB.isEmpty { parts.append("only the current run has \(list(onlyB))") }
            return "their timers differ: " + parts.joined(separator: "; ")
        }
        return nil
    }

    private static func shape(_ report: RunReport) -> (kinds: Set<String>, timers: Set<String>) {
        var kinds = Set<String>(), timers = Set<String>()
        for summary in report.repetitions {
            kinds.formUnion(summary.overall.calloutDurations.keys)
            timers.formUnion(summary.timers.map(\.label))
        }
        return (kinds, timers)
    }

    private static func list<S: Sequence>(_ names: S) -> String where S.Element == String {
        let sorted = names.sorted()
        if sorted.isEmpty { return "no" }
        let shown = sorted.prefix(3).joined(separator: ", ")
        return sorted.count > 3 ? shown + " and \(sorted.count - 3) more" : shown
    }

    static func relative(_ new: Double, _ old: Double) -> Double {
        if old == 0 { return new == 0 ? 0 : .infinity }
        return new / old - 1
    }

    public static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }
}

struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

import Foundation
import TraceModel

/// Two reports compared metric by metric: what `rlctl compare` decides (a regression the noise cannot explain)
/// and prints.
public struct ComparisonReport: Sendable {
    /// How `rlctl compare` prints its outcome.
    public enum Format: String, Sendable, CaseIterable {
        case text, json, markdown
    }

    /// Every compared metric with data on both sides, in the order asked for.
    public let results: [Comparison.Result]
    public let baselineRepetitions: Int
    public let currentRepetitions: Int
    /// How much worse counts as a regression (0.1 = 10 %, or 10 points for ratios).
    public let threshold: Double
    /// The threshold as the user wrote it (`10%`), repeated in the verdict.
    public let thresholdText: String
    /// Why the two sides may be different workloads, nil when nothing suggests it.
    public let mismatch: String?
    /// Set when the wall-clock regressions are explained by contention on the machine (``Comparison/contention``).
    public let contention: Comparison.Contention?

    /// Compares `metrics` of the two reports; nil when no metric has data on both sides.
    public init?(baseline: RunReport, current: RunReport, metrics: [String], threshold: Double, thresholdText: String) {
        var results = Comparison.compare(baseline: baseline, current: current, metrics: metrics, threshold: threshold)
        guard !results.isEmpty else { return nil }
        contention = Comparison.contention(baseline: baseline, current: current, threshold: threshold)
        if let contention {
            for index in results.indices where results[index].regressed && contention.explains(results[index].metric) {
                results[index].explainedByContention = true
            }
        }
        self.results = results
        baselineRepetitions = baseline.repetitions.count
        currentRepetitions = current.repetitions.count
        self.threshold = threshold
        self.thresholdText = thresholdText
        mismatch = Comparison.workloadMismatch(baseline: baseline, current: current)
    }

    /// Metrics past the threshold in the worse direction that the machine does not explain.
    public var regressions: [Comparison.Result] { results.filter { $0.regressed && !$0.explainedByContention } }
    /// Wall-clock metrics past the threshold that contention on the machine explains: not counted.
    public var explainedByContention: [Comparison.Result] { results.filter(\.explainedByContention) }
    /// The comparison fails: some metric got worse beyond the threshold, whatever the noise.
    public var regressed: Bool { !regressions.isEmpty }

    /// The warning about different workloads, as one line for stderr (text and JSON print it there; Markdown,
    /// read in a pull request, carries it in the report).
    public var warning: String? { mismatch.map { "warning: these may be different workloads: \($0)" } }

    public func render(_ format: Format) -> String {
        switch format {
        case .text: return text
        case .markdown: return markdown
        case .json: return json
        }
    }

    private var verdict: String {
        let verdict = regressed ? "\(regressions.count) regression(s) beyond \(thresholdText)" : "no regression beyond \(thresholdText)"
        let explained = explainedByContention.count
        return explained == 0 ? verdict : verdict + "; \(explained) metric(s) past it \(Comparison.Contention.phrase)"
    }

    /// What the machine did, for the contention line: the machine's metrics that rose, the on-CPU ones that held.
    public var contentionText: String? { contentionLine }

    private var contentionLine: String? {
        guard let c = contention, !explainedByContention.isEmpty else { return nil }
        func changes(_ results: [Comparison.Result]) -> String {
            results.map { "\($0.metric) \(formatMetric($0.baseline, unit: unit($0))) → \(formatMetric($0.current, unit: unit($0)))" }
                .joined(separator: ", ")
        }
        return "\(Comparison.Contention.phrase): " + changes(c.machine.filter(\.regressed)) + " rose, while time on the CPU did not move ("
            + changes(c.onCPU) + ")"
    }

    private func unit(_ result: Comparison.Result) -> Metric.Unit { Metric.named(result.metric)!.unit }

    /// A change as `+12.3%` (relative) or `+4.00 pts` (points of a ratio).
    private func signed(_ value: Double, _ inPoints: Bool) -> String {
        guard inPoints else { return (value >= 0 ? "+" : "") + formatPercent(value) }
        return formatPoints(value)
    }

    public var text: String {
        var out: [String] = []
        if baselineRepetitions < 2 || currentRepetitions < 2 {
            out.append("note: \(baselineRepetitions) vs \(currentRepetitions) repetitions — intervals need several repetitions per side")
        }
        for r in results {
            let outcome = r.explainedByContention ? "slower: the machine" : r.regressed ? "REGRESSED" : r.improved ? "improved"
                : r.inconclusive ? "inconclusive (the interval crosses the threshold)" : "ok"
            out.append(r.metric.padded(30) + formatMetric(r.baseline, unit: unit(r)).leftPad(10) + " → " + formatMetric(r.current, unit: unit(r)).padded(10)
                       + " " + signed(r.change, r.inPoints).leftPad(9) + "  95% CI [\(signed(r.low, r.inPoints)), \(signed(r.high, r.inPoints))]  " + outcome)
        }
        if let contentionLine { out.append(contentionLine) }
        out.append(verdict)
        return out.joined(separator: "\n")
    }

    public var markdown: String {
        var out = ["### rlctl compare: " + (regressed ? "❌ " : "✅ ") + verdict, ""]
        if let warning { out += ["⚠️ " + warning.markdownEscaped, ""] }
        out.append("| metric | baseline | current | change | 95% CI | |")
        out.append("| --- | --- | --- | --- | --- | --- |")
        for r in results {
            let mark = r.explainedByContention ? "🖥️ the machine" : r.regressed ? "❌" : r.improved ? "🟢" : r.inconclusive ? "❔ inconclusive" : "✅"
            out.append("| `\(r.metric)` | \(formatMetric(r.baseline, unit: unit(r))) | \(formatMetric(r.current, unit: unit(r))) | \(signed(r.change, r.inPoints)) | [\(signed(r.low, r.inPoints)), \(signed(r.high, r.inPoints))] | \(mark) |")
        }
        out.append("")
        if let contentionLine { out += [contentionLine.markdownEscaped + ".", ""] }
        out.append("Repetitions: \(baselineRepetitions) baseline, \(currentRepetitions) current.")
        return out.joined(separator: "\n")
    }

    /// One line of JSON; a change with no finite value (a metric that was 0 in the baseline) is `null`.
    public var json: String {
        struct Metric: Encodable {
            var metric: String
            var baseline: JSONNumber
            var current: JSONNumber
            var change: JSONNumber
            var changeUnit: String
            var low: JSONNumber
            var high: JSONNumber
            var regressed: Bool
            /// Past the threshold, explained by contention on the machine: not counted in `regressions`.
            var explainedByContention: Bool?
        }
        struct Document: Encodable {
            var threshold: JSONNumber
            var regressions: Int
            var warning: String?
            /// Why wall-clock metrics past the threshold are not counted (the machine, not the code).
            var contention: String?
            var metrics: [Metric]
        }
        let metrics = results.map {
            Metric(metric: $0.metric, baseline: JSONNumber($0.baseline), current: JSONNumber($0.current), change: JSONNumber($0.change),
                   changeUnit: $0.inPoints ? "points" : "relative", low: JSONNumber($0.low), high: JSONNumber($0.high),
                   regressed: $0.regressed && !$0.explainedByContention, explainedByContention: $0.explainedByContention ? true : nil)
        }
        return ReportJSON.line(Document(threshold: JSONNumber(threshold), regressions: regressions.count, warning: warning,
                                        contention: contentionLine, metrics: metrics))
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
        /// Neither: the interval reaches past the threshold on one side but not wholly (more repetitions could
        /// tell). Said as such, never as "ok".
        public var inconclusive = false
        /// Regressed, but contention on the machine explains it (``Comparison/contention(baseline:current:threshold:)``):
        /// not counted as a regression.
        public var explainedByContention = false
    }

    /// The rule of "the machine, not the code": when both sides have the kernel view in every repetition, the
    /// loops' time on the CPU did not move (no on-CPU metric regressed) while waiting for a CPU or throttling rose
    /// (one of ``machineMetrics`` regressed), a regression of wall-clock metrics is the machine's contention and is
    /// not counted. A handler that got slower moves its time on the CPU, so it still fails.
    public struct Contention: Sendable {
        /// The on-CPU metrics (none regressed) and the machine's (some regressed), compared as the user's metrics are.
        public let onCPU: [Result]
        public let machine: [Result]

        static let phrase = "explained by contention on this machine (the machine, not the code)"

        /// Whether a regression of `metric` is explained: wall-clock metrics and the machine's own; never the on-CPU
        /// metric that measured the code (``onCPU``), nor a count of lost or late things. With callouts measured, the
        /// time on the CPU per iteration is the machine's too: a loop that wakes late runs the work of several wake-ups
        /// in one iteration (timers due together), which contention changes without the code changing.
        func explains(_ metric: String) -> Bool {
            if onCPU.contains(where: { metric.hasPrefix(Self.family($0.metric)) }) { return false }
            if Comparison.machineMetrics.contains(metric) || metric.hasPrefix("kernel.run_queue") || metric.hasPrefix("kernel.throttled") {
                return true
            }
            if metric.hasPrefix("kernel.oncpu_per_iteration."), onCPU.contains(where: { $0.metric.hasPrefix("kernel.oncpu_per_callout.") }) {
                return true
            }
            return Comparison.wallClockPrefixes.contains { metric.hasPrefix($0) }
        }

        private static func family(_ metric: String) -> String {
            String(metric[..<(metric.lastIndex(of: ".") ?? metric.endIndex)])
        }
    }

    /// On-CPU counterparts of the wall-clock figures: if one of them regressed, the code did. Per callout where the
    /// loops' callouts are seen; per iteration only where they are not (wait loops, NIO without traced channels):
    /// an iteration's time on the CPU also grows when a late loop batches work, a callout's does not.
    public static let onCPUMetrics = onCPUPerCallout + onCPUPerIteration
    public static let onCPUPerCallout = ["kernel.oncpu_per_callout.p50", "kernel.oncpu_per_callout.p99"]
    public static let onCPUPerIteration = ["kernel.oncpu_per_iteration.p50", "kernel.oncpu_per_iteration.p99"]
    /// What contention on the machine shows as.
    public static let machineMetrics = ["kernel.run_queue_per_wakeup.p50", "kernel.run_queue_per_wakeup.p99",
                                        "kernel.run_queue_share", "kernel.throttled_share"]
    /// Metrics measured in wall-clock time, which contention lengthens without the code changing.
    static let wallClockPrefixes = ["timer.lateness.", "timer.beyond_tolerance.", "wake.", "loop.busy_per_iteration.", "loop.utilization",
                                    "callout.", "stalls.worst", "wait.busy.", "wait.lateness.", "nio.busy.", "nio.tick.",
                                    "nio.utilization.", "wait.utilization.", "nio.probe.lateness.", "foundation.busy.", "foundation.utilization"]

    /// The machine's contention explaining wall-clock regressions, or nil: when a side lacks the kernel view in a
    /// repetition, when no on-CPU metric has data, when one regressed, or when neither run-queue delay nor throttling rose.
    public static func contention(baseline: RunReport, current: RunReport, threshold: Double) -> Contention? {
        let viewed = { (report: RunReport) in report.repetitions.allSatisfy { $0.kernel?.overall != nil } }
        guard viewed(baseline), viewed(current) else { return nil }
        var onCPU = compare(baseline: baseline, current: current, metrics: onCPUPerCallout, threshold: threshold)
        if onCPU.isEmpty { onCPU = compare(baseline: baseline, current: current, metrics: onCPUPerIteration, threshold: threshold) }
        let machine = compare(baseline: baseline, current: current, metrics: machineMetrics, threshold: threshold)
        guard !onCPU.isEmpty, !onCPU.contains(where: \.regressed), machine.contains(where: \.regressed) else { return nil }
        return Contention(onCPU: onCPU, machine: machine)
    }

    /// The tail metrics a comparison looks at by default.
    public static let defaultMetrics = [
        "timer.lateness.p99", "timer.lateness.p50", "loop.busy_per_iteration.p99", "wake.source.p99", "wake.block.p99",
        "wake.port.p99", "callout.timer.p99", "loop.utilization",
        // Compared only when both sides have the kernel view; with it, the loops' own time on the CPU beside the wall
        // clock, and the machine's contention.
        "kernel.oncpu_per_callout.p99", "kernel.oncpu_per_iteration.p99", "kernel.run_queue_per_wakeup.p99",
    ]

    /// Compares medians with a percentile bootstrap over repetitions (2,000 resamples, fixed seed so a verdict is
    /// reproducible). Metrics with no data on either side are left out. Ratio metrics change in points, and the
    /// threshold applies to them in points (10% = 10 points).
    public static func compare(baseline: RunReport, current: RunReport, metrics: [String], threshold: Double) -> [Result] {
        var results: [Result] = []
        var random = SplitMix64(seed: 0x51ab1e)
        for name in metrics {
            guard let metric = Metric.named(name) else { continue }
            // A side without the kernel view has no kernel figure: a 0 there would be a change of everything.
            if Metric.isKernel(name), !(baseline.repetitions + current.repetitions).allSatisfy({ metric.isMeasured(in: $0) }) { continue }
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
            let worseHigh = metric.higherIsWorse ? high : -low
            let betterLow = metric.higherIsWorse ? low : -high
            let regressed = worseLow > threshold, improved = betterHigh < -threshold
            results.append(Result(metric: name, baseline: ma, current: mb, change: change, inPoints: inPoints, low: low, high: high,
                                  regressed: regressed, improved: improved, higherIsWorse: metric.higherIsWorse,
                                  inconclusive: !regressed && !improved && (worseHigh > threshold || betterLow < -threshold)))
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

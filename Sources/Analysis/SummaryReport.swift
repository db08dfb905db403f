import Foundation

/// Writes a ``TraceSummary`` for people: a text report with small histograms, or markdown for a pull request.
public enum SummaryReport {
    public static func json(_ summary: TraceSummary) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: (try? encoder.encode(summary)) ?? Data(), as: UTF8.self)
    }

    private static func row(_ d: DistributionSummary) -> String {
        guard d.count > 0 else { return "-" }
        return "n=\(d.count)  min \(formatNanoseconds(d.min))  p50 \(formatNanoseconds(d.p50))  p90 \(formatNanoseconds(d.p90))  p99 \(formatNanoseconds(d.p99))  p99.9 \(formatNanoseconds(d.p999))  max \(formatNanoseconds(d.max))"
    }

    /// A histogram of power-of-two buckets as bars, a line each.
    static func bars(_ d: DistributionSummary, indent: String, unit: (UInt64) -> String = formatNanoseconds) -> [String] {
        guard let peak = d.buckets.map(\.count).max(), peak > 0 else { return [] }
        return d.buckets.map { bucket in
            let width = max(1, Int((Double(bucket.count) / Double(peak) * 30).rounded()))
            return indent + ("≤ " + unit(bucket.upTo)).leftPad(10) + " " + String(repeating: "█", count: width) + " \(bucket.count)"
        }
    }

    public static func text(_ s: TraceSummary, title: String? = nil) -> String {
        var out: [String] = []
        if let title { out.append(title) }
        let h = s.health
        if h.complete {
            out.append("trace: \(h.eventsRead) events, none lost")
        } else {
            out.append("trace: \(h.eventsRead) events — INCOMPLETE: \(h.eventsLost) events and \(h.packetsLost) packets lost in \(h.lossWindows.count) window(s); figures marked (!) cover a window with losses")
        }
        for loop in s.loops {
            out.append("")
            let mark = loop.lostEventsAffecting > 0 ? " (!) \(loop.lostEventsAffecting) lost events in its window" : ""
            out.append("loop \(loop.loopID ?? 0) (thread \(loop.threadID ?? 0)\(loop.name.map { ", \($0)" } ?? ""))\(mark)")
            out += loopLines(loop, indent: "  ")
        }
        if !s.timers.isEmpty {
            out.append("")
            out.append("timers (worst p99 lateness first):")
            for timer in s.timers.prefix(10) {
                let mark = timer.lostEventsAffecting > 0 ? " (!)" : ""
                out.append("  \(timer.label)\(mark): \(timer.firings) firings, missed \(timer.missed), within tolerance \(formatPercent(timer.withinTolerance)), lateness p50 \(formatNanoseconds(timer.lateness.p50)) p99 \(formatNanoseconds(timer.lateness.p99)) max \(formatNanoseconds(timer.lateness.max)), drift \(formatNanoseconds(timer.driftNanosecondsPerSecond))/s")
                for (cause, count) in timer.lateFiringCauses.sorted(by: { $0.value > $1.value }).prefix(3) {
                    out.append("      late \(count)× while: \(cause)")
                }
            }
            if s.timers.count > 10 { out.append("  … \(s.timers.count - 10) more timers (--format json lists all)") }
        }
        return out.joined(separator: "\n")
    }

    static func loopLines(_ l: TraceSummary.LoopSummary, indent: String) -> [String] {
        var out: [String] = []
        let results = l.results.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        out.append(indent + "runs \(l.runs) (\(results)), iterations \(l.iterations)")
        out.append(indent + "wall \(formatNanoseconds(l.wallNanoseconds)), busy \(formatNanoseconds(l.busyNanoseconds)), asleep \(formatNanoseconds(l.sleepNanoseconds)), utilization \(formatPercent(l.utilization))")
        out.append(indent + "busy per iteration: " + row(l.busyPerIteration))
        out += bars(l.busyPerIteration, indent: indent + "  ")
        out.append(indent + "sleep: " + row(l.sleep))
        let reasons = l.wakeReasons.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        if !reasons.isEmpty { out.append(indent + "woken by: " + reasons) }
        if l.backlogAtWakeUp.count > 0 {
            let b = l.backlogAtWakeUp
            out.append(indent + "backlog at wake-up: p50 \(b.p50)  p99 \(b.p99)  max \(b.max) items")
        }
        out.append(indent + "wake-up latency:")
        for (name, d) in [("timer due → callout", l.wakeLatency.timer), ("source signal → perform", l.wakeLatency.source),
                          ("block enqueue → run", l.wakeLatency.block), ("port send → handler", l.wakeLatency.port)] where d.count > 0 {
            out.append(indent + "  " + name.padded(24) + row(d))
        }
        if l.timerFirings > 0 {
            out.append(indent + "timers: \(l.timerFirings) firings, \(l.timerMissed) missed slots, \(formatPercent(l.timerWithinTolerance)) within tolerance, \(l.timerLateFirings) late")
            out.append(indent + "  lateness: " + row(l.timerLateness))
            out += bars(l.timerLateness, indent: indent + "    ")
            for (cause, count) in l.lateFiringCauses.sorted(by: { $0.value > $1.value }).prefix(5) {
                out.append(indent + "  late \(count)× while: \(cause)")
            }
        }
        if !l.calloutDurations.isEmpty {
            out.append(indent + "callouts:")
            for (kind, d) in l.calloutDurations.sorted(by: { $0.key < $1.key }) {
                out.append(indent + "  " + kind.padded(11) + row(d))
            }
        }
        if !l.slowestCallouts.isEmpty {
            out.append(indent + "slowest callouts: " + l.slowestCallouts.prefix(5).map { "\($0.label) \(formatNanoseconds($0.durationNanoseconds))" }.joined(separator: ", "))
        }
        out.append(indent + "stalls (> threshold): \(l.stalls)" + (l.worstStalls.isEmpty ? "" : "; worst: " + l.worstStalls.prefix(3).map { "\(formatNanoseconds($0.busyNanoseconds)) in \($0.cause)" }.joined(separator: ", ")))
        return out
    }

    public static func markdown(_ s: TraceSummary, title: String? = nil) -> String {
        var out: [String] = []
        out.append("### \(title ?? "Run-loop summary")")
        out.append("")
        out.append(s.health.complete ? "Trace: **\(s.health.eventsRead)** events, none lost." :
                   "Trace: **\(s.health.eventsRead)** events — ⚠️ **incomplete**: \(s.health.eventsLost) events and \(s.health.packetsLost) packets lost; figures over those windows undercount.")
        out.append("")
        out.append("| metric | min | p50 | p90 | p99 | p99.9 | max |")
        out.append("| --- | --- | --- | --- | --- | --- | --- |")
        let o = s.overall
        for (name, d) in [("busy per iteration", o.busyPerIteration), ("timer lateness", o.timerLateness),
                          ("source signal → perform", o.wakeLatency.source), ("block enqueue → run", o.wakeLatency.block),
                          ("port send → handler", o.wakeLatency.port), ("sleep", o.sleep)] where d.count > 0 {
            out.append("| \(name) | " + [d.min, d.p50, d.p90, d.p99, d.p999, d.max].map { formatNanoseconds($0) }.joined(separator: " | ") + " |")
        }
        out.append("")
        out.append("Utilization **\(formatPercent(o.utilization))**, \(o.iterations) iterations, \(o.stalls) stalls, \(o.timerMissed) missed timer slots.")
        if o.timerLateness.count > 0 {
            out.append("")
            out.append("```")
            out += bars(o.timerLateness, indent: "")
            out.append("```")
        }
        return out.joined(separator: "\n")
    }
}

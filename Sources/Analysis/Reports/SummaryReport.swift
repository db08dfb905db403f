import TraceModel
import Foundation

/// Writes a ``TraceSummary`` for people: a text report with small histograms, or markdown for a pull request.
public enum SummaryReport {
    /// Pretty-printed, keys sorted. Throws for a figure JSON cannot hold (a non-finite number) rather than write
    /// nothing or an invalid document.
    public static func json(_ summary: TraceSummary) throws -> String {
        var summary = summary
        // A summary read from a file written before the verdict existed gets it here.
        if summary.verdict == nil { summary.verdict = SummaryVerdict(summary).findings }
        return try ReportJSON.pretty(summary)
    }

    static func row(_ d: DistributionSummary) -> String {
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

    /// What a run result means, in words.
    static func describeResult(_ key: String) -> String {
        switch key {
        case "timed_out": return "timed out"
        case "finished": return "finished (nothing left in its mode)"
        case "stopped": return "stopped"
        case "handled_source": return "returned after a source"
        case "did_not_end": return "did not end"
        case "end_lost": return "end event lost"
        case LoopTracker.exitedResult: return "exited"
        default: return key
        }
    }

    /// A moment as an offset from the trace's first event (`+1.20s`), the way people read a trace.
    static func offset(_ time: UInt64, in health: TraceSummary.Health) -> String {
        let origin = health.firstEventNanoseconds ?? time
        return "+" + formatNanoseconds(time >= origin ? time - origin : 0)
    }

    /// Why the trace does not tell the whole story, one line each; empty for a complete trace.
    /// Events of kinds this rlctl does not know (a newer recorder's) are not losses: the figures are whole for the
    /// kinds it knows. Said, never hidden.
    static func skippedNote(_ h: TraceSummary.Health) -> String? {
        let skipped = h.trace.eventsSkipped
        guard skipped > 0 else { return nil }
        return "\(skipped) event(s) of kinds this rlctl does not know were skipped (a newer recorder's trace)"
    }

    /// After a loop's heading: whether losses fall in its window, and how many events.
    static func lossMark(affected: Bool, lostEvents: UInt64) -> String {
        guard affected else { return "" }
        return lostEvents > 0 ? " (!) \(lostEvents) lost events in its window" : " (!) whole packets lost in its window"
    }

    /// Why a trace read as it is (not summarized: no runs known) is incomplete, in the summary's words; empty for
    /// a complete one. For commands that pass a trace on rather than summarize it (`export`).
    public static func traceProblems(_ trace: TraceHealth) -> [String] {
        healthProblems(TraceSummary.Health(trace))
    }

    static func healthProblems(_ h: TraceSummary.Health) -> [String] {
        var out: [String] = []
        if h.eventsRead == 0 {
            out.append("the trace holds no events: nothing traced ran, or the recording was killed before it wrote its first packet")
        }
        if !h.complete {
            out.append("\(h.eventsLost) events and \(h.packetsLost) packets lost in \(h.lossWindows.count) window(s); figures marked (!) cover a window with losses")
        }
        out += h.trace.damage.map { "damaged: " + $0 }
        if let failure = h.trace.writeFailure {
            out.append("the recording could not write its trace (\(failure)) and stopped there; each thread's events after its last written packet are missing (how many is unknown)")
        } else if h.trace.recordingCutOff {
            out.append("the recording was cut off: its process was killed or crashed before it completed the trace; each thread's events after its last written packet are missing (how many is unknown)")
        }
        if let cut = h.runsCutOff, cut > 0 {
            out.append("cut off at \(h.cutOffAtNanoseconds.map { offset($0, in: h) } ?? "its end"): \(cut) run(s) did not end in the trace; their figures stop at their loop's last event")
        }
        if let lost = h.runsEndLost, lost > 0 {
            out.append("\(lost) run(s) lost their end event; their figures stop at their loop's last event before the next run")
        }
        if let early = h.runsBegunBeforeTrace, early > 0 {
            out.append("\(early) run(s) began before the trace's first event (a flight-recorder ring keeps only the newest events, or the oldest were lost); their figures start at their loop's first event")
        }
        return out
    }

    /// The summary as text: its verdict first, then the trace's health and every loop's figures (`brief`: the
    /// verdict and the trace's health only).
    public static func text(_ s: TraceSummary, title: String? = nil, brief: Bool = false) -> String {
        var out: [String] = []
        if let title { out.append(title) }
        out += SummaryVerdict(s).lines()
        let h = s.health
        let problems = healthProblems(h)
        if problems.isEmpty {
            out.append("trace: \(h.eventsRead) events, none lost, every run complete")
        } else {
            out.append("trace: \(h.eventsRead) events — INCOMPLETE:")
            out += problems.map { "  " + $0 }
        }
        if let skipped = skippedNote(h) { out.append("  " + skipped) }
        if let kernel = kernelStatusLine(s) { out.append(kernel) }
        if brief { return out.joined(separator: "\n") }
        for loop in s.loops {
            out.append("")
            let mark = lossMark(affected: loop.affectedByLoss, lostEvents: loop.lostEventsAffecting)
            out.append("loop \(loop.loopID ?? 0) (thread \(loop.threadID ?? 0)\(loop.name.map { ", \($0)" } ?? ""))\(mark)")
            out += loopLines(loop, health: h, stallThreshold: s.stallThresholdNanoseconds, indent: "  ")
        }
        if let nio = s.nio { out += nioText(nio, health: h, stallThreshold: s.stallThresholdNanoseconds) }
        if let waits = s.waits {
            out += waitText(waits, health: h, stallThreshold: s.stallThresholdNanoseconds, lateThreshold: s.lateThresholdNanoseconds)
        }
        let reported = reportedLines(s.reported, health: h, bullet: "  ")
        if !reported.isEmpty { out.append(""); out += reported }
        if !s.timers.isEmpty {
            out.append("")
            out.append("timers (worst p99 lateness first):")
            for timer in s.timers.prefix(10) {
                let mark = timer.affectedByLoss ? " (!)" : ""
                out.append("  \(timer.label)\(mark): \(timer.firings) firings, missed \(timer.missed), \(toleranceText(timer)), lateness p50 \(formatNanoseconds(timer.lateness.p50)) p99 \(formatNanoseconds(timer.lateness.p99)) max \(formatNanoseconds(timer.lateness.max)), drift \(formatNanoseconds(timer.driftNanosecondsPerSecond))/s")
                for (cause, count) in sortedCauses(timer.lateFiringCauses).prefix(3) {
                    out.append("      late \(count)× while: \(cause)\(mark)")
                }
            }
            if s.timers.count > 10 { out.append("  … \(s.timers.count - 10) more timers (--format json lists all)") }
        }
        if let backlog = s.blockBacklog {
            out.append("")
            out.append(backlog.text)
        }
        return out.joined(separator: "\n")
    }

    /// A timer's tolerance figure: with no tolerance there is no window to be within, so no share is printed.
    static func toleranceText(_ timer: TraceSummary.TimerSummary) -> String {
        timer.toleranceNanoseconds == 0 ? "no tolerance"
            : "within tolerance (\(formatNanoseconds(timer.toleranceNanoseconds))) \(formatPercent(timer.withinTolerance))"
    }

    /// Most frequent first; ties by name, so reports are stable.
    static func sortedCauses(_ causes: [String: UInt64]) -> [(key: String, value: UInt64)] {
        causes.sorted { ($0.value, $1.key) > ($1.value, $0.key) }
    }

    /// What the run count means, and how the runs ended.
    static func runsLine(_ l: TraceSummary.LoopSummary, health: TraceSummary.Health) -> String {
        var meaning = l.adapter == LoopAdapter.foundation.description ? "calls of RunLoop.run, entry to exit" : "calls of Loop.run"
        if let nested = l.nestedRuns, nested > 0 { meaning += ", \(nested) nested in a callout" }
        if let early = l.runsBegunBeforeTrace, early > 0 { meaning += ", \(early) begun before the trace" }
        let results = l.results.sorted { $0.key < $1.key }.map { result -> String in
            let text = "\(describeResult(result.key)) \(result.value)"
            guard result.key == "did_not_end", let cut = l.cutOffAtNanoseconds else { return text }
            return text + " (trace cut off at \(offset(cut, in: health)))"
        }.joined(separator: ", ")
        return "runs \(l.runs) (\(meaning))" + (results.isEmpty ? "" : ": " + results) + "; iterations \(l.iterations)"
    }

    static func loopLines(_ l: TraceSummary.LoopSummary, health: TraceSummary.Health, stallThreshold: UInt64, indent: String) -> [String] {
        // Every figure of a loop covers its whole window, so a loss in it marks them all.
        let mark = l.affectedByLoss ? " (!)" : ""
        var out: [String] = []
        if l.adapter != nil && l.runs == 0 {
            return [indent + "never ran in the trace (attached, but not run while it was recorded)" + mark]
        }
        out.append(indent + runsLine(l, health: health) + mark)
        let upTo = l.cutOffAtNanoseconds == nil ? "" : " (up to the cut-off)"
        out.append(indent + "wall \(formatNanoseconds(l.wallNanoseconds))\(upTo), busy \(formatNanoseconds(l.busyNanoseconds)), asleep \(formatNanoseconds(l.sleepNanoseconds)), utilization \(formatPercent(l.utilization))" + onCPUShareText(l.kernel) + mark)
        if l.busyPerIteration.count > 0 {
            out.append(indent + "busy per iteration: " + row(l.busyPerIteration) + mark)
            out += bars(l.busyPerIteration, indent: indent + "  ")
        }
        if l.sleep.count > 0 { out.append(indent + "sleep: " + row(l.sleep) + mark) }
        let reasons = l.wakeReasons.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        if !reasons.isEmpty { out.append(indent + "woken by: " + reasons + mark) }
        if l.backlogAtWakeUp.count > 0 {
            let b = l.backlogAtWakeUp
            out.append(indent + "backlog at wake-up: p50 \(b.p50)  p99 \(b.p99)  max \(b.max) items" + mark)
        }
        let latencies = [("timer due → callout", l.wakeLatency.timer), ("source signal → perform", l.wakeLatency.source),
                         ("block enqueue → run", l.wakeLatency.block), ("port send → handler", l.wakeLatency.port),
                         ("job enqueue → run", l.wakeLatency.jobOrEmpty)].filter { $0.1.count > 0 }
        if !latencies.isEmpty {
            out.append(indent + "wake-up latency:")
            for (name, d) in latencies { out.append(indent + "  " + name.padded(24) + row(d) + mark) }
        }
        if l.timerFirings > 0 {
            let within = (l.timerFiringsWithTolerance ?? l.timerFirings) > 0
                ? "\(formatPercent(l.timerWithinTolerance)) of firings with a tolerance within it" : "no tolerance"
            out.append(indent + "timers: \(l.timerFirings) firings, \(l.timerMissed) missed slots, \(within), \(l.timerLateFirings) late" + mark)
            out.append(indent + "  lateness: " + row(l.timerLateness) + mark)
            out += bars(l.timerLateness, indent: indent + "    ")
            for (cause, count) in sortedCauses(l.lateFiringCauses).prefix(5) {
                out.append(indent + "  late \(count)× while: \(cause)" + mark)
            }
        }
        if !l.calloutDurations.isEmpty {
            out.append(indent + "callouts:")
            for (kind, d) in l.calloutDurations.sorted(by: { $0.key < $1.key }) {
                out.append(indent + "  " + kind.padded(11) + row(d) + mark)
            }
        }
        if !l.slowestCallouts.isEmpty {
            out.append(indent + slowestCalloutsText(l.slowestCallouts) + mark)
        }
        let worst = l.worstStalls.isEmpty ? "" : "; worst: " + l.worstStalls.prefix(3).map { "\(formatNanoseconds($0.busyNanoseconds)) in \(stallCause($0.cause, $0.kernel))" }.joined(separator: ", ")
        out.append(indent + "stalls (> threshold): \(l.stalls) iterations busier than \(formatNanoseconds(stallThreshold))" + worst + mark)
        out += kernelLines(l.kernel, indent: indent)
        if let missing = l.notAvailable {
            out.append(indent + "traced by the \(l.adapter ?? "an") adapter; " + notAvailableLine(missing))
        }
        return out
    }

    public static func markdown(_ s: TraceSummary, title: String? = nil) -> String {
        var out: [String] = []
        out.append("### \((title ?? "Run-loop summary").markdownEscaped)")
        out.append("")
        let verdict = SummaryVerdict(s)
        if verdict.isClean {
            out.append("**Verdict:** " + verdict.nothingFound.markdownEscaped + ".")
        } else {
            out.append("**Verdict:**")
            out.append("")
            out += verdict.findings.map { "- " + $0.markdownEscaped }
        }
        out.append("")
        let problems = healthProblems(s.health)
        if problems.isEmpty {
            out.append("Trace: **\(s.health.eventsRead)** events, none lost, every run complete.")
        } else {
            out.append("Trace: **\(s.health.eventsRead)** events — ⚠️ **incomplete**:")
            out.append("")
            out += problems.map { "- " + $0 }
        }
        if let skipped = skippedNote(s.health) { out.append(""); out.append("Note: " + skipped + ".") }
        if let kernel = kernelStatusLine(s) {
            out.append("")
            out.append(String(kernel.prefix(1).uppercased() + kernel.dropFirst()).markdownEscaped + ".")
            if let overall = s.kernel?.overall {
                out += kernelLines(overall, indent: "").map { "- " + $0.trimmingCharacters(in: .whitespaces).markdownEscaped }
            }
        }
        let o = s.overall
        let mark = o.affectedByLoss ? " (!)" : ""
        // A trace of NIO or wait loops alone has no runs: its run figures would be zeros that describe nothing.
        if !(s.loops.isEmpty && (s.nio != nil || s.waits != nil)) {
            out.append("")
            out.append("| metric | min | p50 | p90 | p99 | p99.9 | max |")
            out.append("| --- | --- | --- | --- | --- | --- | --- |")
            for (name, d) in [("busy per iteration", o.busyPerIteration), ("timer lateness", o.timerLateness),
                              ("source signal → perform", o.wakeLatency.source), ("block enqueue → run", o.wakeLatency.block),
                              ("port send → handler", o.wakeLatency.port), ("job enqueue → run", o.wakeLatency.jobOrEmpty),
                              ("sleep", o.sleep)] where d.count > 0 {
                out.append("| \(name)\(mark) | " + [d.min, d.p50, d.p90, d.p99, d.p999, d.max].map { formatNanoseconds($0) }.joined(separator: " | ") + " |")
            }
            out.append("")
            let cut = s.health.cutOffAtNanoseconds.map { " (up to the cut-off at \(offset($0, in: s.health)))" } ?? ""
            let results = o.results.sorted { $0.key < $1.key }.map { "\(describeResult($0.key)) \($0.value)" }.joined(separator: ", ")
            out.append("Utilization **\(formatPercent(o.utilization))**\(mark) over \(formatNanoseconds(o.wallNanoseconds)) of runs\(cut); \(o.runs) run\(o.runs == 1 ? "" : "s") (calls of Loop.run\(results.isEmpty ? "" : ": " + results)), \(o.iterations) iterations, \(o.stalls) stalls (iterations busier than \(formatNanoseconds(s.stallThresholdNanoseconds))), \(o.timerMissed) missed timer slots.")
        }
        if let foundation = s.foundation { out += foundationMarkdown(foundation, stallThreshold: s.stallThresholdNanoseconds) }
        if let nio = s.nio { out += nioMarkdown(nio, health: s.health) }
        if let waits = s.waits {
            out += waitMarkdown(waits, health: s.health, stallThreshold: s.stallThresholdNanoseconds, lateThreshold: s.lateThresholdNanoseconds)
        }
        let reported = reportedLines(s.reported, health: s.health, bullet: "- ")
        if !reported.isEmpty {
            // Markdown: headings as paragraphs, each list after a blank line.
            for line in reported {
                out.append(line.hasPrefix("- ") ? "- " + String(line.dropFirst(2)).markdownEscaped : "\n" + line.markdownEscaped + "\n")
            }
        }
        if !s.timers.isEmpty {
            out.append("")
            out.append("| timer | firings | missed | tolerance | lateness p50 | p99 | max | drift | late | most late while |")
            out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for timer in s.timers.prefix(10) {
                let t = timer.affectedByLoss ? " (!)" : ""
                let tolerance = timer.toleranceNanoseconds == 0 ? "none"
                    : "\(formatNanoseconds(timer.toleranceNanoseconds)), \(formatPercent(timer.withinTolerance)) within"
                let cause = sortedCauses(timer.lateFiringCauses).first.map { "\($0.key.markdownEscaped) (\($0.value)×)" } ?? "–"
                out.append("| \(timer.label.markdownEscaped)\(t) | \(timer.firings) | \(timer.missed) | \(tolerance) | \(formatNanoseconds(timer.lateness.p50)) | \(formatNanoseconds(timer.lateness.p99)) | \(formatNanoseconds(timer.lateness.max)) | \(formatNanoseconds(timer.driftNanosecondsPerSecond))/s | \(timer.lateFirings) | \(cause) |")
            }
            if s.timers.count > 10 { out.append("") ; out.append("… \(s.timers.count - 10) more timers (`--format json` lists all).") }
        }
        if !o.lateFiringCauses.isEmpty {
            out.append("")
            out.append("Late timer firings (later than tolerance + \(formatNanoseconds(s.lateThresholdNanoseconds))) by what held the loop when they came due\(mark):")
            out.append("")
            for (cause, count) in sortedCauses(o.lateFiringCauses) { out.append("- \(count)× \(cause.markdownEscaped)") }
        }
        if o.timerLateness.count > 0 {
            out.append("")
            out.append("Timer lateness of all firings (firings per power-of-two bucket)\(mark):")
            out.append("")
            out.append("```")
            out += bars(o.timerLateness, indent: "")
            out.append("```")
        }
        return out.joined(separator: "\n")
    }
}

import TraceModel

/// The adapted loops' parts of `rlctl summarize`'s text and Markdown: SwiftNIO event loops, and what Foundation
/// loops cannot show. Figures an adapter cannot see are written "not available", never as zero.
extension SummaryReport {
    static func notAvailableLine(_ items: [String]) -> String {
        "not available: " + items.joined(separator: "; ")
    }

    private static func worstStalls(_ stalls: [TraceSummary.Stall], health: TraceSummary.Health) -> String {
        stalls.isEmpty ? "" : "; worst: " + stalls.prefix(3).map {
            "\(formatNanoseconds($0.busyNanoseconds)) at \(offset($0.atNanoseconds, in: health)) in \(stallCause($0.cause, $0.kernel))"
        }.joined(separator: ", ")
    }

    private static func rate(_ perSecond: Double) -> String {
        perSecond >= 100 ? String(Int(perSecond.rounded())) : threeDigits(perSecond)
    }

    private static func counts(_ d: DistributionSummary) -> String {
        d.count == 0 ? "-" : "p50 \(d.p50)  p99 \(d.p99)  max \(d.max)  mean \(threeDigits(d.mean))"
    }

    static func nioText(_ nio: TraceSummary.NIOSummary, health: TraceSummary.Health, stallThreshold: UInt64) -> [String] {
        var out: [String] = []
        for l in nio.loops {
            out.append("")
            let mark = lossMark(affected: l.affectedByLoss, lostEvents: l.lostEventsAffecting)
            out.append("NIO event loop \(l.loopID) (thread \(l.threadID)\(l.name.map { ", \($0)" } ?? ""), group \(l.groupID))\(mark)")
            guard l.ticks > 0 else {
                out.append("  no tick in the trace (the loop never ticked while it was recorded, or its group shut down first)")
                continue
            }
            out.append("  ticks \(l.ticks) (\(rate(l.ticksPerSecond))/s), tasks \(l.tasks); tasks per tick: \(counts(l.tasksPerTick))")
            out.append("  tick (task phase): " + row(l.tickDuration))
            if let io = l.ioNanoseconds, let d = l.ioDuration {
                out.append("  I/O of traced channels: \(formatNanoseconds(io)) in all; one event: " + row(d))
            } else {
                out.append("  I/O handling: not measured, counted as sleep (add RunLoopNIO's channel handler)")
            }
            out.append("  busy \(formatNanoseconds(l.busyNanoseconds)), asleep \(formatNanoseconds(l.sleepNanoseconds)), utilization \(formatPercent(l.utilization))" + onCPUShareText(l.kernel))
            out.append("  busy per iteration (I/O before a tick + its tasks): " + row(l.busyPerIteration))
            out += bars(l.busyPerIteration, indent: "    ")
            out.append("  sleep: " + row(l.sleep))
            out.append("  stalls (> threshold): \(l.stalls) iterations busier than \(formatNanoseconds(stallThreshold))" + worstStalls(l.worstStalls, health: health))
            if let p = l.probe {
                out.append("  lateness probe (its own task, not the program's): \(p.firings) firings (\(rate(p.firingsPerSecond))/s)")
                out.append("    lateness: " + row(p.lateness))
                out.append("    probe cost: " + row(p.cost))
            } else {
                out.append("  task lateness: not available (no lateness probe in the trace)")
            }
            out += kernelLines(l.kernel, indent: "  ")
        }
        for g in nio.groups {
            out.append("")
            out.append("NIO group \(g.groupID ?? 0):" + totalsLine(g, health: health))
        }
        out.append("")
        out.append("all NIO loops:" + totalsLine(nio.overall, health: health))
        out.append("  " + notAvailableLine(nio.notAvailable))
        return out
    }

    private static func totalsLine(_ t: TraceSummary.NIOTotals, health: TraceSummary.Health) -> String {
        var line = " \(t.loopIDs.count) loop(s), \(t.ticks) ticks (\(rate(t.ticksPerSecond))/s), utilization mean \(formatPercent(t.utilizationMean)), max \(formatPercent(t.utilizationMax)) (loop \(t.busiestLoopID)), \(t.stalls) stalls"
        line += worstStalls(Array(t.worstStalls.prefix(1)), health: health)
        if let p = t.probeLateness { line += "; probe lateness p99 \(formatNanoseconds(p.p99))" }
        return line
    }

    static func nioMarkdown(_ nio: TraceSummary.NIOSummary, health: TraceSummary.Health) -> [String] {
        var out: [String] = ["", "#### SwiftNIO event loops", ""]
        out.append("| loop | group | ticks/s | tasks/tick p50 | tick p99 | I/O | busy p99 | sleep p50 | utilization | stalls | worst stall | probe lateness p99 |")
        out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for l in nio.loops {
            guard l.ticks > 0 else {
                out.append("| \(l.loopID)\(l.name.map { " " + $0.markdownEscaped } ?? "") | \(l.groupID) | no tick in the trace" + String(repeating: " | –", count: 9) + " |")
                continue
            }
            let io = l.ioNanoseconds.map { formatNanoseconds($0) } ?? "not measured (counted as sleep)"
            let worst = l.worstStalls.first.map { "\(formatNanoseconds($0.busyNanoseconds)) in \($0.cause.markdownEscaped)" } ?? "–"
            let probe = l.probe.map { formatNanoseconds($0.lateness.p99) } ?? "not available"
            out.append("| \(l.loopID)\(l.name.map { " " + $0.markdownEscaped } ?? "")\(l.affectedByLoss ? " (!)" : "") | \(l.groupID) | \(rate(l.ticksPerSecond)) | \(l.tasksPerTick.p50) | \(formatNanoseconds(l.tickDuration.p99)) | \(io) | \(formatNanoseconds(l.busyPerIteration.p99)) | \(formatNanoseconds(l.sleep.p50)) | \(formatPercent(l.utilization)) | \(l.stalls) | \(worst) | \(probe) |")
        }
        out.append("")
        for g in nio.groups { out.append("- group \(g.groupID ?? 0):" + totalsLine(g, health: health).markdownEscaped) }
        out.append("- all NIO loops:" + totalsLine(nio.overall, health: health).markdownEscaped)
        if nio.loops.contains(where: { !$0.ioMeasured }) {
            out.append("- I/O handling of loops marked \"not measured\" is inside NIO's sleep time: add RunLoopNIO's channel handler to measure it.")
        }
        out.append("- " + notAvailableLine(nio.notAvailable) + ".")
        return out
    }

    static func foundationMarkdown(_ f: TraceSummary.FoundationSummary, stallThreshold: UInt64) -> [String] {
        let o = f.overall
        return ["", "#### Foundation RunLoops", "",
                "\(f.loopIDs.count) loop(s): \(o.runs) runs, \(o.iterations) iterations, utilization \(formatPercent(o.utilization)) (max \(formatPercent(f.utilizationMax)), loop \(f.busiestLoopID)), busy per iteration p99 \(formatNanoseconds(o.busyPerIteration.p99)), \(o.stalls) stalls (iterations busier than \(formatNanoseconds(stallThreshold)))." ,
                "", "- " + notAvailableLine(f.notAvailable) + "."]
    }
}

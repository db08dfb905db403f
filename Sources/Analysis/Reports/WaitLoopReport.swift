import TraceModel

/// Any program's wait loops (`rlctl record --any`) in `rlctl summarize`'s text and Markdown. What the wait calls
/// cannot show is said once for all of them, never as zeros per loop.
extension SummaryReport {
    /// `node (pid 4242) thread node (tid 4243), epoll fd 5`.
    private static func heading(_ l: TraceSummary.WaitLoopSummary) -> String {
        TraceSummary.WaitLoopSummary.threadName(process: l.process, pid: l.pid, thread: l.thread, threadID: l.threadID)
            + (l.process == nil ? "" : " (tid \(l.threadID))") + ", "
            + TraceSummary.WaitLoopSummary.targetName(family: l.family, target: l.target)
    }

    private static func callsText(_ calls: [String: UInt64]) -> String {
        calls.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }

    private static func waitRate(_ perSecond: Double) -> String {
        perSecond >= 100 ? String(Int(perSecond.rounded())) : threeDigits(perSecond)
    }

    /// `ready 800 (66.7%), timed out 300 (25.0%), …`: every cause, zeros included (a zero here is measured).
    static func causesText(_ c: TraceSummary.WakeCauses) -> String {
        var parts = [("ready", c.ready), ("timed out", c.timedOut), ("interrupted (EINTR)", c.interrupted), ("failed", c.failed)]
            .map { "\($0.0) \($0.1) (\(formatPercent(c.share($0.1))))" }
        if c.emptyWithoutTimeout > 0 {
            parts.append("returned nothing without a timeout \(c.emptyWithoutTimeout) (\(formatPercent(c.share(c.emptyWithoutTimeout))))")
        }
        return parts.joined(separator: ", ") + "; non-blocking checks (timeout 0, not sleeps) \(c.nonBlockingChecks) (\(formatPercent(c.share(c.nonBlockingChecks))), \(c.nonBlockingChecksReady) found events)"
    }

    private static func readyText(_ d: DistributionSummary) -> String {
        d.count == 0 ? "none (no wait returned events)" : "p50 \(d.p50)  p99 \(d.p99)  max \(d.max)  mean \(threeDigits(d.mean))  (n=\(d.count))"
    }

    /// The millisecond rests of a loop or set, when it had any (the summary counts them only where they are Go's).
    static func millisecondRestsText(_ rests: UInt64?, of blockingWaits: UInt64) -> String? {
        guard let rests, rests > 0 else { return nil }
        let share = blockingWaits > 0 ? " (\(formatPercent(Double(rests) / Double(blockingWaits))))" : ""
        return "rounded up to a millisecond (Go's netpoller, by its shape: threads taking turns at epoll_pwait for 128 events): \(rests) of \(blockingWaits) blocking waits\(share) were a 1 ms rest right after a longer wait timed out — Go asks for whole milliseconds, rounding down, and waits out what is left as 1 ms: a timer due then fired up to 1 ms late, though no wait woke late"
    }

    private static func latenessText(_ d: DistributionSummary, late: UInt64, threshold: UInt64) -> String {
        d.count == 0 ? "none (no wait timed out with a timeout > 0)" : row(d) + "; \(late) woke more than \(formatNanoseconds(threshold)) late"
    }

    private static func waitStalls(_ stalls: [TraceSummary.WaitStall], health: TraceSummary.Health, named: Bool) -> String {
        stalls.isEmpty ? "" : "; worst: " + stalls.prefix(3).map {
            "\(formatNanoseconds($0.busyNanoseconds)) at \(offset($0.atNanoseconds, in: health))" + (named ? " in \($0.loopName)" : "")
                + ($0.kernel.map { " (" + kernelSplitText($0) + ")" } ?? "")
        }.joined(separator: ", ")
    }

    static func waitText(_ w: TraceSummary.WaitSummary, health: TraceSummary.Health, stallThreshold: UInt64,
                         lateThreshold: UInt64) -> [String] {
        var out: [String] = []
        if let recorders = w.recordedBy, !recorders.isEmpty {
            out.append("")
            out.append("recorded by: " + recorders.map { recorder in
                "\(recorder.process) (pid \(recorder.pid)) the \(recorder.by.rawValue)" + (recorder.why.map { " (\($0))" } ?? "")
            }.joined(separator: "; "))
        }
        for set in w.sets ?? [] {
            out.append("")
            out.append("wait set: \(set.name) — one loop, waited on by \(set.threads.count) threads: "
                       + zip(set.threads, set.threadNames).map { "\($1) (tid \($0))" }.joined(separator: ", "))
            out.append("  iterations \(set.iterations), busy \(formatNanoseconds(set.busyNanoseconds)) (\(threeDigits(set.busyThreads)) threads busy at once on average), asleep \(formatNanoseconds(set.sleepNanoseconds)), parked \(formatNanoseconds(set.parkedNanoseconds)) (blocked outside the wait while another thread held the loop: not busy)"
                       + (set.parkedSeparated ? "" : "; without the kernel view some parked time could not be told from busy time, and counts as busy"))
            out.append("  stalls (> threshold): \(set.stalls) iterations busier than \(formatNanoseconds(stallThreshold))" + waitStalls(set.worstStalls, health: health, named: true))
            if let rests = millisecondRestsText(set.millisecondRests, of: set.blockingWaits ?? 0) { out.append("  " + rests) }
        }
        for l in w.loops {
            out.append("")
            let mark = lossMark(affected: l.affectedByLoss, lostEvents: l.lostEventsAffecting)
            out.append("wait loop: \(heading(l)) — \(callsText(l.calls))\(mark)")
            out.append("  iterations \(l.iterations) (\(waitRate(l.iterationsPerSecond))/s), busy \(formatNanoseconds(l.busyNanoseconds)), asleep \(formatNanoseconds(l.sleepNanoseconds)), utilization \(formatPercent(l.utilization))" + onCPUShareText(l.kernel))
            out.append("  busy per iteration (wait end → next wait): " + row(l.busyPerIteration))
            out += bars(l.busyPerIteration, indent: "    ")
            out.append("  sleep (one blocking wait): " + row(l.sleep))
            out.append("  wake causes: " + causesText(l.wakeCauses))
            out.append("  wake lateness (sleep − timeout of waits that timed out): " + latenessText(l.lateness, late: l.lateWakeUps, threshold: lateThreshold))
            if let rests = millisecondRestsText(l.millisecondRests, of: l.wakeCauses.blockingWaits) { out.append("  " + rests) }
            out.append("  ready events per wake-up: " + readyText(l.readyPerWakeUp))
            out.append("  stalls (> threshold): \(l.stalls) iterations busier than \(formatNanoseconds(stallThreshold))" + waitStalls(l.worstStalls, health: health, named: false))
            if l.chainBreaks > 0 {
                out.append("  iteration chain broken \(l.chainBreaks)× at lost or missing events: no busy or sleep counted across those gaps")
            }
            if let others = l.sharedWith, !others.isEmpty {
                out.append("  shares its wait set with thread\(others.count == 1 ? "" : "s") \(others.map(String.init).joined(separator: ", ")) (the wait set above): parked \(formatNanoseconds(l.parkedNanoseconds ?? 0)) outside the wait, not busy"
                           + (l.parkedSeparated == false ? " (some of it not told apart without the kernel view: counted as busy)" : ""))
            }
            if l.busyAtStart == true { out.append("  outside its wait when the recording began (its first iteration counts from then; its earlier part is unknown)") }
            if l.waitingAtStart == true { out.append("  already waiting when the recording began (that wait is not counted; the first iteration starts at its end)") }
            if l.lastIterationUnended == true { out.append("  its last iteration had not ended (parked outside its wait until the end): counted up to its last return to a CPU") }
            if l.waitingAtEnd { out.append("  still waiting when the trace ended (that wait is not counted)") }
            out += kernelLines(l.kernel, indent: "  ")
        }
        if !w.rareWaiters.isEmpty {
            out.append("")
            out.append("threads that waited rarely (fewer than \(TraceSummary.WaitSummary.rareWaitLimit) waits and less than one per second; not loops):")
            for r in w.rareWaiters {
                out.append("  \(r.name): \(r.waits) wait\(r.waits == 1 ? "" : "s"), asleep \(formatNanoseconds(r.sleepNanoseconds))" + (r.waitingAtEnd ? ", still waiting at the end" : ""))
            }
        }
        out.append("")
        let t = w.overall
        if t.loops == 0 {
            out.append("all wait loops: none (no thread waited often enough to be a loop)")
        } else {
            out.append("all wait loops: \(t.loops) loop(s), \(t.iterations) iterations, utilization mean \(formatPercent(t.utilizationMean)), max \(formatPercent(t.utilizationMax)) (\(t.busiestLoop)), \(t.stalls) stalls" + waitStalls(t.worstStalls, health: health, named: true))
        }
        if w.unmatchedEnds > 0 {
            out.append("  \(w.unmatchedEnds) wait end(s) without their begin left out (a flight-recorder ring overwrote it, or it was lost)")
        }
        out.append("  " + notAvailableLine(w.notAvailable))
        return out
    }

    static func waitMarkdown(_ w: TraceSummary.WaitSummary, health: TraceSummary.Health, stallThreshold: UInt64,
                             lateThreshold: UInt64) -> [String] {
        var out: [String] = ["", "#### Wait loops (any program)", ""]
        if !w.loops.isEmpty {
            out.append("| loop | calls | iterations/s | busy p50 | busy p99 | busy max | sleep p50 | utilization | ready / timed out / EINTR / failed / non-blocking | lateness p99 | late > \(formatNanoseconds(lateThreshold)) | ready per wake-up p50 | stalls | worst stall |")
            out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for l in w.loops {
                let c = l.wakeCauses
                let lateness = l.lateness.count == 0 ? "–" : formatNanoseconds(l.lateness.p99)
                let ready = l.readyPerWakeUp.count == 0 ? "–" : "\(l.readyPerWakeUp.p50)"
                let worst = l.worstStalls.first.map { "\(formatNanoseconds($0.busyNanoseconds)) at \(offset($0.atNanoseconds, in: health))" } ?? "–"
                out.append("| \(heading(l).markdownEscaped)\(l.affectedByLoss ? " (!)" : "") | \(callsText(l.calls)) | \(waitRate(l.iterationsPerSecond)) | \(formatNanoseconds(l.busyPerIteration.p50)) | \(formatNanoseconds(l.busyPerIteration.p99)) | \(formatNanoseconds(l.busyPerIteration.max)) | \(formatNanoseconds(l.sleep.p50)) | \(formatPercent(l.utilization)) | \(c.ready) / \(c.timedOut) / \(c.interrupted) / \(c.failed) / \(c.nonBlockingChecks) | \(lateness) | \(l.lateWakeUps) | \(ready) | \(l.stalls) | \(worst) |")
            }
            out.append("")
            let t = w.overall
            out.append("- all wait loops: \(t.loops) loop(s), \(t.iterations) iterations, utilization mean \(formatPercent(t.utilizationMean)), max \(formatPercent(t.utilizationMax)) (\(t.busiestLoop.markdownEscaped)), \(t.stalls) stalls (iterations busier than \(formatNanoseconds(stallThreshold)))" + waitStalls(t.worstStalls, health: health, named: true).markdownEscaped + ".")
        } else {
            out.append("- no thread waited often enough to be a loop.")
        }
        for set in w.sets ?? [] {
            if let rests = millisecondRestsText(set.millisecondRests, of: set.blockingWaits ?? 0) { out.append("- \(set.name.markdownEscaped), " + rests + ".") }
        }
        for l in w.loops where l.sharedWith == nil {
            if let rests = millisecondRestsText(l.millisecondRests, of: l.wakeCauses.blockingWaits) { out.append("- \(heading(l).markdownEscaped), " + rests + ".") }
        }
        if !w.rareWaiters.isEmpty {
            out.append("- threads that waited rarely (fewer than \(TraceSummary.WaitSummary.rareWaitLimit) waits and less than one per second; not loops): "
                       + w.rareWaiters.map { "\($0.name.markdownEscaped) (\($0.waits) wait\($0.waits == 1 ? "" : "s")\($0.waitingAtEnd ? ", still waiting at the end" : ""))" }.joined(separator: "; ") + ".")
        }
        if w.unmatchedEnds > 0 {
            out.append("- \(w.unmatchedEnds) wait end(s) without their begin left out (a flight-recorder ring overwrote it, or it was lost).")
        }
        out.append("- " + notAvailableLine(w.notAvailable) + ".")
        return out
    }
}

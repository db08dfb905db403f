import TraceModel

/// The kernel's side of a summary in its text and Markdown: one status line for the trace, and the same lines for
/// every kind of loop, from its ``TraceSummary/KernelFacet``.
extension SummaryReport {
    /// `kernel view: on, 2 threads followed, 1200 records, 0 lost`, `kernel view: not available — WHY`; nil for a
    /// trace without a kernel view that nobody tried to record (it reads as it always did).
    static func kernelStatusLine(_ s: TraceSummary) -> String? {
        guard let view = s.kernel else { return nil }
        guard view.status == TraceSummary.KernelView.on else {
            return "kernel view: \(view.status)" + (view.unavailableReason.map { " — \($0)" } ?? "")
        }
        var line = "kernel view: on, \(view.threadsFollowed) thread\(view.threadsFollowed == 1 ? "" : "s") followed, \(view.records) records"
        if let rebuilt = view.rebuiltRecords, rebuilt > 0 { line += " (\(rebuilt) rebuilt from the scheduler's counters)" }
        line += ", \(view.lostRecords) lost"
        if view.lostRecords > 0 { line += " (causes over those windows are marked (!): incomplete)" }
        if let since = view.processes.map(\.sinceNanoseconds).min(), let first = s.health.firstEventNanoseconds, since > first {
            line += "; it began at \(offset(since, in: s.health)), after the loops started: kernel causes cover only the time since"
        }
        return line
    }

    /// Who held the CPU: `behind sh (pid 4242)`, or with several the first two and their times (two hogs are
    /// usually the same command), `behind sh (pid 4242) 20.0ms and sh (pid 4243) 16.0ms`, then how many more.
    static func culpritText(_ culprits: [TraceSummary.KernelCulprit]?) -> String {
        guard let culprits, let top = culprits.first else { return "" }
        guard culprits.count > 1 else { return " behind \(top.name)" }
        let named = culprits.prefix(2).map { "\($0.name) \(formatNanoseconds($0.nanoseconds))" }.joined(separator: " and ")
        return " behind " + named + (culprits.count > 2 ? " and \(culprits.count - 2) more" : "")
    }

    /// `5.00ms on CPU, 36.0ms waiting for CPU 0 behind sh (pid 4242), 0 blocked`: where a window's time went.
    static func kernelSplitText(_ k: TraceSummary.KernelSplit) -> String {
        var parts = ["\(formatNanoseconds(k.onCPUNanoseconds)) on CPU"]
        if k.runQueueNanoseconds > 0 {
            parts.append("\(formatNanoseconds(k.runQueueNanoseconds)) waiting for " + (k.cpu.map { "CPU \($0)" } ?? "a CPU") + culpritText(k.culprits))
        } else {
            parts.append("0 waiting for a CPU")
        }
        if k.throttledNanoseconds > 0 { parts.append("\(formatNanoseconds(k.throttledNanoseconds)) throttled (CPU quota)") }
        if k.blockedNanoseconds > 0 {
            let top = k.blockedIn?.max { ($0.value, $1.key) < ($1.value, $0.key) }
            parts.append("\(formatNanoseconds(k.blockedNanoseconds)) blocked" + (top.map { " in \($0.key)" } ?? "")
                         + ((k.blockedIn?.count ?? 0) > 1 ? " and \(k.blockedIn!.count - 1) more" : ""))
        } else {
            parts.append("0 blocked")
        }
        if let asleep = k.asleepNanoseconds, asleep > 0 { parts.append("\(formatNanoseconds(asleep)) asleep in a nested run") }
        return parts.joined(separator: ", ") + (k.incomplete == true ? " (!) incomplete: kernel records missing in it" : "")
    }

    /// Where the late wake-ups' time went, the non-zero parts in the order the time passed.
    static func lateWakeUpText(_ late: TraceSummary.LateWakeUps) -> String {
        guard late.count > 0 else { return "none" }
        var text = "\(late.count)"
        guard late.explained > 0 else {
            return text + ", none of them in the kernel view (their wait is not in it: before it began, or lost)"
        }
        if late.explained < late.count { text += " (\(late.explained) in the kernel view)" }
        text += ", \(formatNanoseconds(late.latenessNanoseconds)) late in all: "
        let parts = late.parts.named.filter { $0.nanoseconds > 0 }.map { part -> String in
            let share = late.latenessNanoseconds > 0 ? " (\(formatPercent(Double(part.nanoseconds) / Double(late.latenessNanoseconds))))" : ""
            let behind = part.name == "waiting for a CPU" ? culpritText(late.culprits) : ""
            return "\(part.name) \(formatNanoseconds(part.nanoseconds))\(share)\(behind)"
        }
        text += parts.isEmpty ? "nothing" : parts.joined(separator: ", ")
        if late.incomplete > 0 { text += "; \(late.incomplete) over windows with lost kernel records (!)" }
        return text
    }

    /// After a loop's utilization: the part of it on the CPU (the rest waited for a CPU, was throttled or blocked).
    static func onCPUShareText(_ k: TraceSummary.KernelFacet?) -> String {
        guard let k, k.busy.onCPUNanoseconds > 0 || k.coversWholeLoop else { return "" }
        return " (on CPU \(formatPercent(k.onCPUShare)))"
    }

    /// A loop's kernel lines (any kind of loop), after its own figures; empty without a kernel facet.
    static func kernelLines(_ k: TraceSummary.KernelFacet?, indent: String) -> [String] {
        guard let k else { return [] }
        let mark = k.affectedByLoss ? " (!)" : ""
        var out: [String] = []
        let busy = k.busy.onCPUNanoseconds + k.busy.runQueueNanoseconds + k.busy.throttledNanoseconds + k.busy.blockedNanoseconds
        if busy == 0 && !k.coversWholeLoop {
            // Nothing it measured began inside the view: a split of nothing would read as a measured zero.
            out.append(indent + "kernel: busy time not available (its iterations began before the kernel view)" + mark)
        } else {
            let coverage = k.coversWholeLoop ? "" : " (since the kernel view began)"
            out.append(indent + "kernel: busy \(formatNanoseconds(busy))\(coverage) = " + kernelSplitText(k.busy) + mark)
        }
        if k.onCPUPerIteration.count > 0 { out.append(indent + "  on CPU per iteration: " + row(k.onCPUPerIteration) + mark) }
        if k.onCPUPerCallout.count > 0 { out.append(indent + "  on CPU per callout: " + row(k.onCPUPerCallout) + mark) }
        if k.runQueuePerWakeUp.count > 0 { out.append(indent + "  waiting for a CPU per wake-up: " + row(k.runQueuePerWakeUp) + mark) }
        if k.lateWakeUps.count > 0 { out.append(indent + "  late wake-ups: " + lateWakeUpText(k.lateWakeUps) + mark) }
        if let missing = k.notAvailable { out.append(indent + "  kernel view " + notAvailableLine(missing)) }
        return out
    }

    /// A stall's cause with its kernel split: `timer jank-1 (5.00ms on CPU, 36.0ms waiting for CPU 0 behind …)`.
    static func stallCause(_ cause: String, _ kernel: TraceSummary.KernelSplit?) -> String {
        kernel.map { cause + " (" + kernelSplitText($0) + ")" } ?? cause
    }

    /// The slowest callouts, by time on the CPU when the kernel view shows it (both times then).
    static func slowestCalloutsText(_ callouts: [TraceSummary.Callout]) -> String {
        let byCPU = callouts.contains { $0.kernel != nil }
        let list = callouts.prefix(5).map { c -> String in
            guard let k = c.kernel else { return "\(c.label) \(formatNanoseconds(c.durationNanoseconds))" }
            return "\(c.label) \(formatNanoseconds(k.onCPUNanoseconds)) on CPU of \(formatNanoseconds(c.durationNanoseconds))"
        }.joined(separator: ", ")
        return (byCPU ? "slowest callouts (by time on CPU): " : "slowest callouts: ") + list
    }
}

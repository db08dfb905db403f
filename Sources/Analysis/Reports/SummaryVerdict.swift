import TraceModel

/// What is wrong with the loops of a summary, if anything, in a few lines with their numbers and culprits: what a
/// reader needs before the detail, whatever kind of loop it is (RunLoopCore, Foundation, SwiftNIO, a wait loop).
///
/// The findings, most urgent first: data the figures could not be computed from (lost or damaged events), the
/// stalls with the worst one's culprit and where its time went (its own work on the CPU, or the machine: a
/// CPU it waited for, a quota, a blocking call), and late work (timer firings past `--late`, waits woken past
/// their timeout) with what held it. A summary with none of them says so in one line.
public struct SummaryVerdict: Codable, Sendable, Equatable {
    public var findings: [String]

    /// The stall threshold and late threshold it was judged by.
    public var stallThresholdNanoseconds: UInt64
    public var lateThresholdNanoseconds: UInt64

    public var isClean: Bool { findings.isEmpty }

    public init(_ summary: TraceSummary) {
        stallThresholdNanoseconds = summary.stallThresholdNanoseconds
        lateThresholdNanoseconds = summary.lateThresholdNanoseconds
        findings = []
        if let data = Self.dataFinding(summary) { findings.append(data) }
        if let stalls = Self.stallFinding(summary) { findings.append(stalls) }
        findings += Self.lateTimerFindings(summary)
        if let waits = Self.lateWaitFinding(summary) { findings.append(waits) }
    }

    /// What a verdict with no finding says.
    public var nothingFound: String {
        "no stall over \(formatNanoseconds(stallThresholdNanoseconds)), no work later than \(formatNanoseconds(lateThresholdNanoseconds)), nothing lost"
    }

    /// `verdict: …` and one line per finding, or one line that nothing was found.
    public func lines(bullet: String = "  ") -> [String] {
        isClean ? ["verdict: " + nothingFound] : ["verdict:"] + findings.map { bullet + $0 }
    }

    // MARK: - findings

    private static func dataFinding(_ s: TraceSummary) -> String? {
        let h = s.health
        if h.eventsRead == 0 { return "no events: nothing traced ran (the details below say why)" }
        guard !SummaryReport.healthProblems(h).isEmpty else { return nil }
        var what: [String] = []
        if h.eventsLost > 0 || h.packetsLost > 0 { what.append("\(h.eventsLost) events lost") }
        if !h.trace.damage.isEmpty { what.append("the trace is damaged") }
        if h.trace.writeFailure != nil || h.trace.recordingCutOff || (h.runsCutOff ?? 0) > 0 { what.append("the recording was cut off") }
        if (h.runsBegunBeforeTrace ?? 0) > 0 || (h.runsEndLost ?? 0) > 0 { what.append("runs without their beginning or end") }
        return "INCOMPLETE DATA: " + (what.isEmpty ? "see the trace line" : what.joined(separator: ", "))
            + "; figures marked (!) are lower bounds"
    }

    /// One worst stall of any kind of loop.
    private struct StallCandidate {
        var busy: UInt64
        var cause: String?
        var loop: String
        var kernel: TraceSummary.KernelSplit?
    }

    private static func stallFinding(_ s: TraceSummary) -> String? {
        var count: UInt64 = 0
        var loops = 0
        var candidates: [StallCandidate] = []
        for loop in s.loops where loop.stalls > 0 {
            count += loop.stalls
            loops += 1
            let name = "loop \(loop.loopID ?? 0)" + (loop.name.map { " (\($0))" } ?? "")
            candidates += loop.worstStalls.map { StallCandidate(busy: $0.busyNanoseconds, cause: $0.cause, loop: name, kernel: $0.kernel) }
        }
        for loop in s.nio?.loops ?? [] where loop.stalls > 0 {
            count += loop.stalls
            loops += 1
            let name = "NIO loop \(loop.loopID)" + (loop.name.map { " (\($0))" } ?? "")
            candidates += loop.worstStalls.map { StallCandidate(busy: $0.busyNanoseconds, cause: $0.cause, loop: name, kernel: $0.kernel) }
        }
        for loop in s.waits?.loops ?? [] where loop.stalls > 0 {
            count += loop.stalls
            loops += 1
            candidates += loop.worstStalls.map { StallCandidate(busy: $0.busyNanoseconds, cause: nil, loop: "wait loop " + $0.loopName, kernel: $0.kernel) }
        }
        guard count > 0, let worst = candidates.max(by: { $0.busy < $1.busy }) else { return nil }
        let threshold = formatNanoseconds(s.stallThresholdNanoseconds)
        var text = "\(count) stall\(count == 1 ? "" : "s") (iterations busier than \(threshold))"
        if loops > 1 { text += " in \(loops) loops" }
        text += "; worst \(formatNanoseconds(worst.busy))"
        if let cause = worst.cause { text += " in \(cause)" }
        text += " on \(worst.loop)"
        if let judgement = judgement(busy: worst.busy, worst.kernel, threshold: s.stallThresholdNanoseconds) { text += ": " + judgement }
        return text
    }

    /// Where a busy window's time went, as a verdict: its own work, or the machine. The test is whether it would
    /// have been a stall on its own: with its time on the CPU over the threshold it is the code's, whatever waiting
    /// made it longer; under it, what held it off the CPU made the stall.
    static func judgement(busy: UInt64, _ k: TraceSummary.KernelSplit?, threshold: UInt64) -> String? {
        guard let k, busy > 0 else { return nil }
        let mark = k.incomplete == true ? " (!)" : ""
        let onCPU = formatNanoseconds(k.onCPUNanoseconds)
        let blockedIn = k.blockedIn?.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key
        let parts: [(ns: UInt64, text: String, holder: String?)] = [
            (k.runQueueNanoseconds, "waiting for " + (k.cpu.map { "CPU \($0)" } ?? "a CPU") + mainCulprit(k.culprits), "the machine"),
            (k.throttledNanoseconds, "throttled by the CPU quota", "the CPU quota"),
            (k.blockedNanoseconds, "blocked" + (blockedIn.map { " in \($0)" } ?? ""), nil),
        ]
        guard let largest = parts.max(by: { $0.ns < $1.ns }), largest.ns * 5 >= busy else {
            return "its own work (\(onCPU) on CPU)" + mark
        }
        let part = "\(formatNanoseconds(largest.ns)) \(largest.text)"
        guard let holder = largest.holder else { return "\(part), \(onCPU) on CPU: a blocking call on the loop's thread" + mark }
        if k.onCPUNanoseconds > threshold { return "its own work (\(onCPU) on CPU), made longer by \(part)" + mark }
        return "\(part), only \(onCPU) on CPU: \(holder), not the code" + mark
    }

    /// ` behind sh (pid 4242)`, ` behind sh (pid 4242) and 2 more`: the detail lines name them all.
    private static func mainCulprit(_ culprits: [TraceSummary.KernelCulprit]?) -> String {
        guard let culprits, let top = culprits.max(by: { $0.nanoseconds < $1.nanoseconds }) else { return "" }
        return " behind \(top.name)" + (culprits.count > 1 ? " and \(culprits.count - 1) more" : "")
    }

    /// Late timer firings per loop that has any: how many, the worst, and what held them.
    private static func lateTimerFindings(_ s: TraceSummary) -> [String] {
        s.loops.filter { $0.timerLateFirings > 0 }.map { loop in
            var text = "\(loop.timerLateFirings) timer firing\(loop.timerLateFirings == 1 ? "" : "s") later than \(formatNanoseconds(s.lateThresholdNanoseconds))"
            if s.loops.count > 1 { text += " on loop \(loop.loopID ?? 0)" + (loop.name.map { " (\($0))" } ?? "") }
            text += " (worst \(formatNanoseconds(loop.timerLateness.max)))"
            let causes = SummaryReport.sortedCauses(loop.lateFiringCauses).prefix(3).map { "\($0.value) while \(held($0.key))" }
            if !causes.isEmpty { text += ": " + causes.joined(separator: ", ") }
            if let asleep = asleepParts(loop.kernel) { text += "; of the lateness while asleep, " + asleep }
            return text
        }
    }

    /// A late-firing cause, as the verdict says it: `timer jank-6 ran`, `the loop was asleep`.
    static func held(_ cause: String) -> String {
        LoopTracker.heldPhrase(cause) ?? cause + " ran"
    }

    /// The two largest parts of the late wake-ups' time, from the kernel view.
    private static func asleepParts(_ k: TraceSummary.KernelFacet?) -> String? {
        guard let late = k?.lateWakeUps, late.explained > 0, late.latenessNanoseconds > 0 else { return nil }
        let parts = late.parts.named.filter { $0.nanoseconds > 0 }.sorted { $0.nanoseconds > $1.nanoseconds }.prefix(2)
        guard !parts.isEmpty else { return nil }
        return parts.map { part in
            "\(formatPercent(Double(part.nanoseconds) / Double(late.latenessNanoseconds))) \(part.name)"
                + (part.name == "waiting for a CPU" ? mainCulprit(late.culprits) : "")
        }.joined(separator: ", ") + (late.incomplete > 0 ? " (!)" : "")
    }

    /// Wait loops woken later than `--late` past their timeout.
    private static func lateWaitFinding(_ s: TraceSummary) -> String? {
        guard let totals = s.waits?.overall, totals.lateWakeUps > 0 else { return nil }
        var text = "\(totals.lateWakeUps) wait\(totals.lateWakeUps == 1 ? "" : "s") woke later than \(formatNanoseconds(s.lateThresholdNanoseconds)) past \(totals.lateWakeUps == 1 ? "its" : "their") timeout (worst \(formatNanoseconds(totals.lateness.max)))"
        let facets = (s.waits?.loops ?? []).compactMap(\.kernel)
        if let k = facets.max(by: { $0.lateWakeUps.latenessNanoseconds < $1.lateWakeUps.latenessNanoseconds }),
           let parts = asleepParts(k) {
            text += "; of the lateness, " + parts
        }
        return text
    }
}

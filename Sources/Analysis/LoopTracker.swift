import RunLoopCore
import Tracing

/// One loop's running totals while a trace streams by.
final class LoopTracker {
    enum CalloutKind: String { case timer, source, descriptor, port, block, observer }

    let loopID: UInt64
    let threadID: Int32
    private let options: TraceSummarizer.Options
    private(set) var firstTimestamp: UInt64 = .max
    private(set) var lastTimestamp: UInt64 = 0

    private var runs: UInt64 = 0
    private var results: [String: UInt64] = [:]
    private var runDepth = 0
    private var outerRunStart: UInt64 = 0
    private var wall: UInt64 = 0
    private var slept: UInt64 = 0
    private var iterations: UInt64 = 0

    private var busyPerIteration = LatencyHistogram()
    private var sleeps = LatencyHistogram()
    private var timerLatency = LatencyHistogram()
    private var timerBeyond = LatencyHistogram()
    private var sourceLatency = LatencyHistogram()
    private var blockLatency = LatencyHistogram()
    private var portLatency = LatencyHistogram()
    private var backlog = LatencyHistogram()
    private var calloutDurations: [String: LatencyHistogram] = [:]
    private var timerFirings: UInt64 = 0
    private var timerMissed: UInt64 = 0
    private var timerWithin: UInt64 = 0
    private var lateFirings: UInt64 = 0
    private var lateCauses: [String: UInt64] = [:]
    private var wakeReasons: [String: UInt64] = [:]
    private var stalls: UInt64 = 0
    private var worstStalls: [TraceSummary.Stall] = []
    private var slowest: [TraceSummary.Callout] = []

    /// Open iterations, one per nesting depth: start, sleep inside it, longest callout.
    private struct Iteration {
        var number: UInt64
        var start: UInt64
        var slept: UInt64 = 0
        var longest: (duration: UInt64, label: String)?
    }
    private var openIterations: [Iteration] = []

    /// Callouts in progress (nested runs inside a callout push more).
    private struct OpenCallout {
        var kind: CalloutKind
        var id: UInt64
        var label: String?
        var start: UInt64
    }
    private var calloutStack: [OpenCallout] = []

    /// What recently held the loop, for attributing late timers: completed callouts and sleeps, oldest first,
    /// in a fixed ring (constant memory).
    private struct Interval {
        var start: UInt64
        var end: UInt64
        var what: String
    }
    private var recent: [Interval] = []
    private var recentNext = 0
    private static let recentCapacity = 4096

    /// The wake-up whose backlog is being counted, until the loop sleeps again.
    private var backlogWake: UInt64?
    private var backlogCount: UInt64 = 0

    init(loopID: UInt64, threadID: Int32, options: TraceSummarizer.Options) {
        self.loopID = loopID
        self.threadID = threadID
        self.options = options
    }

    private func seen(_ ts: UInt64) {
        firstTimestamp = min(firstTimestamp, ts)
        lastTimestamp = max(lastTimestamp, ts)
    }

    // ===== runs and iterations =====

    func runBegin(at ts: UInt64) {
        seen(ts)
        runs += 1
        if runDepth == 0 { outerRunStart = ts }
        runDepth += 1
    }

    func runEnd(_ result: Loop.RunResult, at ts: UInt64) {
        seen(ts)
        results[result.description, default: 0] += 1
        closeBacklog()
        if runDepth > 0 {
            runDepth -= 1
            if runDepth == 0 && ts >= outerRunStart { wall += ts - outerRunStart }
        }
    }

    func activity(_ activity: Loop.Activity, _ place: TraceEvent.Place, at ts: UInt64) {
        seen(ts)
        let depth = Int(max(place.depth, 1))
        switch activity {
        case .beforeTimers:
            closeIterations(deeperThanOrAt: depth, at: ts)
            openIterations.append(Iteration(number: place.iteration, start: ts))
            iterations += 1
        case .exit:
            closeIterations(deeperThanOrAt: depth, at: ts)
            closeBacklog()
        case .beforeWaiting:
            closeBacklog()
        default:
            break
        }
    }

    private func closeIterations(deeperThanOrAt depth: Int, at ts: UInt64) {
        while openIterations.count >= depth, let iteration = openIterations.popLast() {
            let elapsed = ts >= iteration.start ? ts - iteration.start : 0
            let busy = elapsed >= iteration.slept ? elapsed - iteration.slept : 0
            busyPerIteration.record(busy)
            if busy > options.stallThreshold {
                stalls += 1
                let stall = TraceSummary.Stall(loopID: loopID, iteration: iteration.number, atNanoseconds: iteration.start,
                                               busyNanoseconds: busy, cause: iteration.longest?.label ?? "loop overhead")
                keepWorst(stall)
            }
        }
    }

    private func keepWorst(_ stall: TraceSummary.Stall) {
        if worstStalls.count < options.keep {
            worstStalls.append(stall)
        } else if let index = worstStalls.indices.min(by: { worstStalls[$0].busyNanoseconds < worstStalls[$1].busyNanoseconds }),
                  worstStalls[index].busyNanoseconds < stall.busyNanoseconds {
            worstStalls[index] = stall
        }
    }

    // ===== sleeps and wake-ups =====

    func wakeUp(_ reason: Loop.WakeReason, slept duration: UInt64, at ts: UInt64) {
        seen(ts)
        slept += duration
        sleeps.record(duration)
        wakeReasons[reason.description, default: 0] += 1
        for index in openIterations.indices { openIterations[index].slept += duration }
        remember(Interval(start: ts >= duration ? ts - duration : 0, end: ts, what: "sleep"))
        backlogWake = ts
        backlogCount = 0
    }

    private func countBacklog(dueAt due: UInt64) {
        if let wake = backlogWake, due <= wake { backlogCount += 1 }
    }

    private func closeBacklog() {
        guard backlogWake != nil else { return }
        backlog.record(backlogCount)
        backlogWake = nil
    }

    // ===== callouts =====

    func timerFired(lateness: UInt64, tolerance: UInt64, missed: UInt64, scheduled: UInt64, cause: String?, at ts: UInt64) {
        seen(ts)
        timerFirings += 1
        timerMissed += missed
        timerLatency.record(lateness)
        timerBeyond.record(lateness > tolerance ? lateness - tolerance : 0)
        if lateness <= tolerance { timerWithin += 1 }
        if let cause {
            lateFirings += 1
            lateCauses[cause, default: 0] += 1
        }
        countBacklog(dueAt: scheduled)
    }

    func sourcePerformed(kind: LoopEventSink.SourceKind, signaled: UInt64, at ts: UInt64) {
        seen(ts)
        switch kind {
        case .custom:
            if signaled != 0 { sourceLatency.record(ts >= signaled ? ts - signaled : 0) }
            countBacklog(dueAt: signaled)
        case .port:
            if signaled != 0 { portLatency.record(ts >= signaled ? ts - signaled : 0) }
            countBacklog(dueAt: signaled)
        case .descriptor:
            countBacklog(dueAt: 0)   // ready when the loop woke
        }
    }

    func blockRan(enqueued: UInt64, at ts: UInt64) {
        seen(ts)
        if enqueued != 0 {
            blockLatency.record(ts >= enqueued ? ts - enqueued : 0)
            countBacklog(dueAt: enqueued)
        }
    }

    func beginCallout(_ kind: CalloutKind, id: UInt64, label: String?, at ts: UInt64) {
        seen(ts)
        calloutStack.append(OpenCallout(kind: kind, id: id, label: label, start: ts))
    }

    func endCallout(id: UInt64, at ts: UInt64) {
        seen(ts)
        // Match by id from the top: a lost begin (trace losses) must not unbalance the stack for good.
        guard let index = calloutStack.lastIndex(where: { $0.id == id }) else { return }
        let callout = calloutStack[index]
        calloutStack.removeSubrange(index...)
        let duration = ts >= callout.start ? ts - callout.start : 0
        let name = callout.label.map { "\(callout.kind.rawValue) \($0)" } ?? callout.kind.rawValue
        calloutDurations[callout.kind.rawValue, default: LatencyHistogram()].record(duration)
        remember(Interval(start: callout.start, end: ts, what: name))
        if let last = openIterations.indices.last, duration > (openIterations[last].longest?.duration ?? 0) {
            openIterations[last].longest = (duration, name)
        }
        let record = TraceSummary.Callout(label: name, kind: callout.kind.rawValue, durationNanoseconds: duration, atNanoseconds: callout.start)
        if slowest.count < options.keep {
            slowest.append(record)
        } else if let minIndex = slowest.indices.min(by: { slowest[$0].durationNanoseconds < slowest[$1].durationNanoseconds }),
                  slowest[minIndex].durationNanoseconds < duration {
            slowest[minIndex] = record
        }
    }

    private func remember(_ interval: Interval) {
        if recent.count < Self.recentCapacity {
            recent.append(interval)
        } else {
            recent[recentNext] = interval
            recentNext = (recentNext + 1) % Self.recentCapacity
        }
    }

    /// What held the loop at `time`: the innermost callout or sleep covering it, a callout still running, or the
    /// loop's own work between callouts.
    func cause(at time: UInt64) -> String {
        if let open = calloutStack.last(where: { $0.start <= time }) {
            return open.label.map { "\(open.kind.rawValue) \($0)" } ?? open.kind.rawValue
        }
        var best: Interval?
        for interval in recent where interval.start <= time && time <= interval.end {
            if best == nil || interval.start >= best!.start { best = interval }
        }
        if let best {
            return best.what == "sleep" ? "wake-up latency (the loop was asleep)" : best.what
        }
        if runDepth == 0 || time < firstTimestamp { return "loop not running" }
        return "loop overhead (between callouts)"
    }

    // ===== results =====

    /// Adds another loop's totals (for the overall figures).
    func absorb(_ other: LoopTracker) {
        runs += other.runs
        for (k, v) in other.results { results[k, default: 0] += v }
        wall += other.wall
        slept += other.slept
        iterations += other.iterations
        busyPerIteration.merge(other.busyPerIteration)
        sleeps.merge(other.sleeps)
        timerLatency.merge(other.timerLatency)
        timerBeyond.merge(other.timerBeyond)
        sourceLatency.merge(other.sourceLatency)
        blockLatency.merge(other.blockLatency)
        portLatency.merge(other.portLatency)
        backlog.merge(other.backlog)
        for (k, v) in other.calloutDurations { calloutDurations[k, default: LatencyHistogram()].merge(v) }
        timerFirings += other.timerFirings
        timerMissed += other.timerMissed
        timerWithin += other.timerWithin
        lateFirings += other.lateFirings
        for (k, v) in other.lateCauses { lateCauses[k, default: 0] += v }
        for (k, v) in other.wakeReasons { wakeReasons[k, default: 0] += v }
        stalls += other.stalls
        firstTimestamp = min(firstTimestamp, other.firstTimestamp)
        lastTimestamp = max(lastTimestamp, other.lastTimestamp)
    }

    func summary(options: TraceSummarizer.Options) -> TraceSummary.LoopSummary {
        var s = TraceSummary.LoopSummary()
        s.loopID = loopID
        s.threadID = threadID
        s.runs = runs
        s.results = results
        s.iterations = iterations
        s.wallNanoseconds = wall
        s.sleepNanoseconds = min(slept, wall)
        s.busyNanoseconds = wall - s.sleepNanoseconds
        s.utilization = wall > 0 ? Double(s.busyNanoseconds) / Double(wall) : 0
        s.busyPerIteration = busyPerIteration.summary
        s.sleep = sleeps.summary
        let timerLateness = timerLatency.summary
        s.wakeLatency = .init(timer: timerLateness, source: sourceLatency.summary, block: blockLatency.summary, port: portLatency.summary)
        s.timerLateness = timerLateness
        s.timerBeyondTolerance = timerBeyond.summary
        s.timerFirings = timerFirings
        s.timerMissed = timerMissed
        s.timerLateFirings = lateFirings
        s.timerWithinTolerance = timerFirings > 0 ? Double(timerWithin) / Double(timerFirings) : 1
        s.lateFiringCauses = lateCauses
        s.wakeReasons = wakeReasons
        s.backlogAtWakeUp = backlog.summary
        s.calloutDurations = calloutDurations.mapValues(\.summary)
        s.slowestCallouts = slowest.sorted { $0.durationNanoseconds > $1.durationNanoseconds }
        s.stalls = stalls
        s.worstStalls = worstStalls.sorted { $0.busyNanoseconds > $1.busyNanoseconds }
        return s
    }
}

/// One timer's running totals.
final class TimerTracker {
    let timerID: UInt64
    let loopID: UInt64
    private(set) var first: UInt64 = .max
    private(set) var last: UInt64 = 0
    private var firings: UInt64 = 0
    private var missed: UInt64 = 0
    private var within: UInt64 = 0
    private var tolerance: UInt64 = 0
    private var interval: UInt64 = 0
    private var lateness = CompactHistogram()
    private var beyond = CompactHistogram()
    private var lateFirings: UInt64 = 0
    private var causes: [String: UInt64] = [:]
    // Least squares of lateness over time (seconds since the first firing).
    private var n = 0.0, sumT = 0.0, sumL = 0.0, sumTT = 0.0, sumTL = 0.0

    init(timerID: UInt64, loopID: UInt64) {
        self.timerID = timerID
        self.loopID = loopID
    }

    func fired(lateness value: UInt64, tolerance: UInt64, interval: UInt64, missed: UInt64, cause: String?, at ts: UInt64) {
        first = min(first, ts)
        last = max(last, ts)
        firings += 1
        self.missed += missed
        self.tolerance = tolerance
        self.interval = interval
        lateness.record(value)
        beyond.record(value > tolerance ? value - tolerance : 0)
        if value <= tolerance { within += 1 }
        if let cause {
            lateFirings += 1
            causes[cause, default: 0] += 1
        }
        let t = Double(ts - first) / 1e9
        let l = Double(value)
        n += 1; sumT += t; sumL += l; sumTT += t * t; sumTL += t * l
    }

    func summary(label: String) -> TraceSummary.TimerSummary {
        let denominator = n * sumTT - sumT * sumT
        let slope = n >= 2 && denominator > 1e-12 ? (n * sumTL - sumT * sumL) / denominator : 0
        return TraceSummary.TimerSummary(timerID: timerID, label: label, loopID: loopID, firings: firings,
                                         missed: missed, toleranceNanoseconds: tolerance, intervalNanoseconds: interval,
                                         lateness: lateness.summary, beyondTolerance: beyond.summary,
                                         withinTolerance: firings > 0 ? Double(within) / Double(firings) : 1,
                                         driftNanosecondsPerSecond: slope, lateFirings: lateFirings,
                                         lateFiringCauses: causes, lostEventsAffecting: 0)
    }
}

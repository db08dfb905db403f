import TraceModel
import TraceReading

/// One loop's running totals while a trace streams by.
final class LoopTracker {
    enum CalloutKind: Int, CaseIterable {
        case timer, source, descriptor, port, block, observer
        var name: String {
            switch self {
            case .timer: return "timer"
            case .source: return "source"
            case .descriptor: return "descriptor"
            case .port: return "port"
            case .block: return "block"
            case .observer: return "observer"
            }
        }
    }

    /// The mode of a run whose begin is not in the trace and whose activities have not named it yet.
    static let unknownMode = -1

    let loopID: UInt64
    let threadID: Int32
    private let options: TraceSummarizer.Options
    /// Interns mode names for the whole trace (shared by every loop), so the hot path compares integers.
    private let modes: ModeTable
    private(set) var firstTimestamp: UInt64 = .max
    private(set) var lastTimestamp: UInt64 = 0

    private var results: [String: UInt64] = [:]
    private var nestedRuns: UInt64 = 0
    private var runsBegunBeforeTrace: UInt64 = 0
    private var cutOffAt: UInt64?
    private var wall: UInt64 = 0
    private var slept: UInt64 = 0
    private var iterations: UInt64 = 0

    /// Open runs, outermost first. A run whose begin the trace lacks (flight-recorder ring, lost events) is opened
    /// at the loop's first event that shows it, so its iterations still count towards wall, busy and asleep.
    private struct OpenRun {
        var start: UInt64
        var mode: Int
    }
    private var runStack: [OpenRun] = []

    private var busyPerIteration = LatencyHistogram()
    private var sleeps = LatencyHistogram()
    private var timerLatency = LatencyHistogram()
    private var timerBeyond = LatencyHistogram()
    private var sourceLatency = LatencyHistogram()
    private var blockLatency = LatencyHistogram()
    private var portLatency = LatencyHistogram()
    private var backlog = LatencyHistogram()
    private var calloutDurations = [LatencyHistogram](repeating: LatencyHistogram(), count: CalloutKind.allCases.count)
    private var timerFirings: UInt64 = 0
    private var timerFiringsWithTolerance: UInt64 = 0
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
        var longest: (duration: UInt64, kind: CalloutKind, label: String?)?
    }
    private var openIterations: [Iteration] = []

    /// Callouts in progress (nested runs inside a callout push more). `depth` is the run depth it was called from.
    private struct OpenCallout {
        var kind: CalloutKind
        var id: UInt64
        var label: String?
        var start: UInt64
        var depth: Int
    }
    private var calloutStack: [OpenCallout] = []

    /// What recently held the loop, for attributing late timers: completed callouts, sleeps and nested runs, in a
    /// fixed ring (constant memory). Names are built only when a late firing needs one, never per callout.
    private struct Interval {
        enum What { case callout(CalloutKind, String?), sleep, run }
        var start: UInt64
        var end: UInt64
        var what: What
        /// Run depth: 1 for what happened in the outermost run.
        var depth: Int
        /// The mode of the run at that depth.
        var mode: Int
    }
    private var recent: [Interval] = []
    private var recentNext = 0
    private static let recentCapacity = 4096

    /// The wake-up whose backlog is being counted, until the loop sleeps again.
    private var backlogWake: UInt64?
    private var backlogCount: UInt64 = 0

    init(loopID: UInt64, threadID: Int32, options: TraceSummarizer.Options, modes: ModeTable) {
        self.loopID = loopID
        self.threadID = threadID
        self.options = options
        self.modes = modes
    }

    private func seen(_ ts: UInt64) {
        firstTimestamp = min(firstTimestamp, ts)
        lastTimestamp = max(lastTimestamp, ts)
    }

    static func name(_ kind: CalloutKind, _ label: String?) -> String {
        guard let label else { return kind.name }
        return kind.name + " " + label
    }

    /// The mode of the innermost open run (what a timer firing now fired in).
    var currentMode: Int { runStack.last?.mode ?? Self.unknownMode }

    // ===== runs and iterations =====

    /// An event of a run: when no run is open, the run began before the trace did (or its begin was lost).
    private func inRun(at ts: UInt64) {
        if runStack.isEmpty { openUnbegunRun(at: ts, mode: Self.unknownMode) }
    }

    private func openUnbegunRun(at ts: UInt64, mode: Int) {
        runsBegunBeforeTrace += 1
        runStack.append(OpenRun(start: ts, mode: mode))
    }

    func runBegin(mode: Int, at ts: UInt64) {
        // Nested runs start only inside a callout: a run still open with no callout in progress lost its end event.
        if !runStack.isEmpty && calloutStack.isEmpty {
            closeRuns(downTo: 0, at: lastTimestamp, result: "end_lost")
        }
        seen(ts)
        if !runStack.isEmpty { nestedRuns += 1 }
        runStack.append(OpenRun(start: ts, mode: mode))
    }

    func runEnd(_ result: LoopRunResult, at ts: UInt64) {
        seen(ts)
        inRun(at: ts)
        closeBacklog()
        closeRuns(downTo: runStack.count - 1, at: ts, result: result.description)
    }

    /// Ends the runs deeper than `depth` at `ts`, each with `result`.
    private func closeRuns(downTo depth: Int, at ts: UInt64, result: String) {
        while runStack.count > max(depth, 0), let run = runStack.popLast() {
            results[result, default: 0] += 1
            let duration = ts >= run.start ? ts - run.start : 0
            if runStack.isEmpty {
                wall += duration
                // Ends lost with the trace's losses must not leave stale callouts to blame.
                calloutStack.removeAll(keepingCapacity: true)
                closeIterations(deeperThanOrAt: 1, at: ts)
            } else {
                remember(Interval(start: run.start, end: ts, what: .run, depth: runStack.count + 1, mode: run.mode))
            }
        }
    }

    func activity(_ activity: LoopActivity, _ place: TraceEvent.Place, at ts: UInt64) {
        seen(ts)
        let depth = Int(max(place.depth, 1))
        if depth > runStack.count {
            // Begins the trace does not have: the activity tells the depth, and its own run's mode.
            while runStack.count < depth - 1 { openUnbegunRun(at: ts, mode: Self.unknownMode) }
            openUnbegunRun(at: ts, mode: modes.id(place.mode))
        } else if runStack[depth - 1].mode == Self.unknownMode {
            runStack[depth - 1].mode = modes.id(place.mode)
        }
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
                let cause = iteration.longest.map { Self.name($0.kind, $0.label) } ?? "loop overhead"
                let stall = TraceSummary.Stall(loopID: loopID, iteration: iteration.number, atNanoseconds: iteration.start,
                                               busyNanoseconds: busy, cause: cause)
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

    /// At the end of the trace: runs still open did not end in it. Their time up to the loop's last event counts;
    /// their unfinished iterations do not count as iterations' busy time (they were cut, not measured).
    func finishTrace() {
        guard !runStack.isEmpty else { return }
        cutOffAt = lastTimestamp
        openIterations.removeAll()
        closeRuns(downTo: 0, at: lastTimestamp, result: "did_not_end")
    }

    // ===== sleeps and wake-ups =====

    func wakeUp(_ reason: LoopWakeReason, slept duration: UInt64, at ts: UInt64) {
        seen(ts)
        inRun(at: ts)
        // A sleep that began before the run's first recorded event counts only from there (flight recorder).
        let outerStart = runStack[0].start
        let counted = min(duration, ts >= outerStart ? ts - outerStart : 0)
        slept += counted
        sleeps.record(duration)
        wakeReasons[reason.description, default: 0] += 1
        for index in openIterations.indices { openIterations[index].slept += duration }
        remember(Interval(start: ts >= duration ? ts - duration : 0, end: ts, what: .sleep,
                          depth: runStack.count, mode: runStack[runStack.count - 1].mode))
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
        inRun(at: ts)
        timerFirings += 1
        timerMissed += missed
        timerLatency.record(lateness)
        timerBeyond.record(lateness > tolerance ? lateness - tolerance : 0)
        if tolerance > 0 {
            timerFiringsWithTolerance += 1
            if lateness <= tolerance { timerWithin += 1 }
        }
        if let cause {
            lateFirings += 1
            lateCauses[cause, default: 0] += 1
        }
        countBacklog(dueAt: scheduled)
    }

    func sourcePerformed(kind: LoopSourceKind, signaled: UInt64, at ts: UInt64) {
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
        inRun(at: ts)
        calloutStack.append(OpenCallout(kind: kind, id: id, label: label, start: ts, depth: runStack.count))
    }

    func endCallout(id: UInt64, at ts: UInt64) {
        seen(ts)
        inRun(at: ts)
        // Match by id from the top: a lost begin (trace losses) must not unbalance the stack for good.
        guard let index = calloutStack.lastIndex(where: { $0.id == id }) else { return }
        let callout = calloutStack[index]
        calloutStack.removeSubrange(index...)
        let duration = ts >= callout.start ? ts - callout.start : 0
        calloutDurations[callout.kind.rawValue].record(duration)
        let mode = callout.depth >= 1 && callout.depth <= runStack.count ? runStack[callout.depth - 1].mode : Self.unknownMode
        remember(Interval(start: callout.start, end: ts, what: .callout(callout.kind, callout.label), depth: callout.depth, mode: mode))
        if let last = openIterations.indices.last, duration > (openIterations[last].longest?.duration ?? 0) {
            openIterations[last].longest = (duration, callout.kind, callout.label)
        }
        if slowest.count < options.keep {
            slowest.append(TraceSummary.Callout(label: Self.name(callout.kind, callout.label), kind: callout.kind.name,
                                                durationNanoseconds: duration, atNanoseconds: callout.start))
        } else if let minIndex = slowest.indices.min(by: { slowest[$0].durationNanoseconds < slowest[$1].durationNanoseconds }),
                  slowest[minIndex].durationNanoseconds < duration {
            slowest[minIndex] = TraceSummary.Callout(label: Self.name(callout.kind, callout.label), kind: callout.kind.name,
                                                     durationNanoseconds: duration, atNanoseconds: callout.start)
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

    static let asleep = "wake-up latency (the loop was asleep)"

    /// What held the loop at `time`, when a timer that fires in the modes of `timerModes` came due.
    ///
    /// It is the outermost callout busy at that moment, unless a run nested inside it could have served the timer
    /// (its mode is one the timer fires in): then what held that nested run, found the same way. A nested run that
    /// could not serve the timer is part of its callout's hold on the outer run, asleep or not.
    func cause(at time: UInt64, timerModes: ModeSet) -> String {
        if time < firstTimestamp { return "before the trace's first event" }
        if runStack.isEmpty { return "loop not running" }
        var depth = 1
        while true {
            let found = covering(time, depth: depth)
            guard let callout = found.callout else {
                return found.asleep ? Self.asleep : "loop overhead (between callouts)"
            }
            guard let nestedMode = found.nestedRunMode, timerModes.contains(nestedMode) else {
                return Self.name(callout.kind, callout.label)
            }
            depth += 1
        }
    }

    /// What covered `time` at run depth `depth`, in one pass over the ring (late firings can be frequent): the
    /// callout made from that run (the latest to start), whether that run slept, and the mode of a run nested one
    /// level deeper.
    private func covering(_ time: UInt64, depth: Int) -> (callout: (kind: CalloutKind, label: String?)?, asleep: Bool, nestedRunMode: Int?) {
        var calloutStart: UInt64 = 0
        var callout: (kind: CalloutKind, label: String?)?
        var asleep = false
        var nestedRunMode: Int?
        for interval in recent where interval.start <= time && time <= interval.end {
            if interval.depth == depth {
                switch interval.what {
                case .callout(let kind, let label):
                    if callout == nil || interval.start >= calloutStart { callout = (kind, label); calloutStart = interval.start }
                case .sleep:
                    asleep = true
                case .run:
                    break
                }
            } else if interval.depth == depth + 1, case .run = interval.what {
                nestedRunMode = interval.mode
            }
        }
        // Callouts and runs still open cover every moment since they began.
        if let open = calloutStack.first(where: { $0.depth == depth && $0.start <= time }) { callout = (open.kind, open.label) }
        if depth < runStack.count, runStack[depth].start <= time { nestedRunMode = runStack[depth].mode }
        return (callout, asleep, nestedRunMode)
    }

    // ===== results =====

    /// Adds another loop's totals (for the overall figures); both have had ``finishTrace()``.
    func absorb(_ other: LoopTracker) {
        for (k, v) in other.results { results[k, default: 0] += v }
        nestedRuns += other.nestedRuns
        runsBegunBeforeTrace += other.runsBegunBeforeTrace
        if let cut = other.cutOffAt { cutOffAt = max(cutOffAt ?? 0, cut) }
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
        for (index, histogram) in other.calloutDurations.enumerated() where histogram.count > 0 {
            calloutDurations[index].merge(histogram)
        }
        timerFirings += other.timerFirings
        timerFiringsWithTolerance += other.timerFiringsWithTolerance
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
        s.runs = results.values.reduce(0, +)
        s.results = results
        s.nestedRuns = nestedRuns
        s.runsBegunBeforeTrace = runsBegunBeforeTrace
        s.cutOffAtNanoseconds = cutOffAt
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
        s.timerFiringsWithTolerance = timerFiringsWithTolerance
        s.timerMissed = timerMissed
        s.timerLateFirings = lateFirings
        // Only firings with a tolerance have a window to be within; none: vacuously all (the text says "no tolerance").
        s.timerWithinTolerance = timerFiringsWithTolerance > 0 ? Double(timerWithin) / Double(timerFiringsWithTolerance) : 1
        s.lateFiringCauses = lateCauses
        s.wakeReasons = wakeReasons
        s.backlogAtWakeUp = backlog.summary
        var durations: [String: DistributionSummary] = [:]
        for kind in CalloutKind.allCases where calloutDurations[kind.rawValue].count > 0 {
            durations[kind.name] = calloutDurations[kind.rawValue].summary
        }
        s.calloutDurations = durations
        s.slowestCallouts = slowest.sorted { $0.durationNanoseconds > $1.durationNanoseconds }
        s.stalls = stalls
        s.worstStalls = worstStalls.sorted { $0.busyNanoseconds > $1.busyNanoseconds }
        return s
    }
}

/// Mode names as small integers, shared by the loops of one trace.
final class ModeTable {
    private var ids: [String: Int] = [:]
    func id(_ mode: String) -> Int {
        if let id = ids[mode] { return id }
        let id = ids.count
        ids[mode] = id
        return id
    }
}

/// The modes a timer has been seen firing in.
struct ModeSet {
    private var bits: UInt64 = 0
    /// Set when a firing's mode is unknown or past the 64th mode: then the set answers yes to every mode, so a
    /// late firing is never blamed on a callout whose nested run might have served it.
    private var any = false

    mutating func insert(_ mode: Int) {
        if mode < 0 || mode >= 64 { any = true } else { bits |= 1 << UInt64(mode) }
    }

    func contains(_ mode: Int) -> Bool {
        any || mode < 0 || mode >= 64 || bits & (1 << UInt64(mode)) != 0
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
    /// The modes of the runs it fired in: which nested runs could have served it.
    private(set) var modes = ModeSet()
    // Least squares of lateness over time (seconds since the first firing).
    private var n = 0.0, sumT = 0.0, sumL = 0.0, sumTT = 0.0, sumTL = 0.0

    init(timerID: UInt64, loopID: UInt64) {
        self.timerID = timerID
        self.loopID = loopID
    }

    /// Counts a firing in `mode`, before its cause is looked up (the cause depends on the modes it fires in).
    func firing(inMode mode: Int) { modes.insert(mode) }

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

import TraceModel

/// One loop's running totals while a trace streams by: its runs, iterations, sleeps, wake-ups and callouts.
/// Timer firings are counted in each timer's ``TimerStatistics``; the loop keeps only what the firing did to it
/// (backlog, the callout).
///
/// A value type kept in the summarizer's array: the per-event calls reach it without the dynamic exclusivity
/// checks a class's stored properties need.
struct LoopTracker {
    let loopID: UInt64
    let threadID: Int32
    private let options: TraceSummarizer.Options
    /// Where its sleeps go over time, when the summary draws a timeline.
    var timeline: TimelineRecorder?
    private let modes: ModeTable
    private let labels: LabelTable
    private(set) var firstTimestamp: UInt64 = .max
    private(set) var lastTimestamp: UInt64 = 0
    /// A loop an adapter traces from its activities alone (Foundation's RunLoop through a CFRunLoop observer): no
    /// run_begin, run_end, wakeup or callouts, so entry and exit delimit runs and before_waiting to after_waiting
    /// is a sleep.
    private(set) var activitiesOnly = false
    /// When an activities-only loop went to sleep (its before_waiting), until its after_waiting.
    private var sleepingSince: UInt64?

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
    private var sourceLatency = LatencyHistogram()
    private var blockLatency = LatencyHistogram()
    private var portLatency = LatencyHistogram()
    private var jobLatency = LatencyHistogram()
    private var backlog = LatencyHistogram()
    private var calloutDurations = [LatencyHistogram](repeating: LatencyHistogram(), count: CalloutKind.allCases.count)
    private var wakeReasons = [UInt64](repeating: 0, count: LoopWakeReason.allCases.count)
    private var stalls: UInt64 = 0
    private var worstStalls: [TraceSummary.Stall] = []
    private var slowest: [TraceSummary.Callout] = []
    /// The shortest of `slowest` once it is full: most callouts are shorter and need no search.
    private var slowestFloor: UInt64 = 0

    /// Open iterations, one per nesting depth: start, sleep inside it, longest callout.
    private struct Iteration {
        var number: UInt64
        var start: UInt64
        var slept: UInt64 = 0
        var longest: (duration: UInt64, kind: CalloutKind, id: UInt64)?
    }
    private var openIterations: [Iteration] = []

    /// Callouts in progress (nested runs inside a callout push more). `depth` is the run depth it was called from.
    private struct OpenCallout {
        var kind: CalloutKind
        var id: UInt64
        var start: UInt64
        var depth: Int
    }
    private var calloutStack: [OpenCallout] = []

    private var holds = HoldHistory()

    /// The kernel's side of its iterations, callouts and wake-ups (nothing without a kernel view).
    private(set) var kernel: KernelFacetRecorder
    /// The loop's last wait: when it began and ended, and the time off the CPU that woke it (late wake-ups are
    /// split along it).
    private var lastWake: (from: UInt64, end: UInt64, episode: KernelEpisode?)?

    /// The wake-up whose backlog is being counted, until the loop sleeps again.
    private var backlogWake: UInt64?
    private var backlogCount: UInt64 = 0

    init(loopID: UInt64, threadID: Int32, options: TraceSummarizer.Options, modes: ModeTable, labels: LabelTable, kernel: KernelViews) {
        self.loopID = loopID
        self.threadID = threadID
        self.kernel = KernelFacetRecorder(threadID: threadID, views: kernel)
        self.options = options
        self.modes = modes
        self.labels = labels
    }

    @inline(__always)
    private mutating func seen(_ ts: UInt64) {
        if ts < firstTimestamp { firstTimestamp = ts }
        if ts > lastTimestamp { lastTimestamp = ts }
        // The timeline's origin is the first loop event, where the summary's times count from.
        timeline?.start(at: ts)
    }

    private func name(_ kind: CalloutKind, id: UInt64) -> String {
        kind.calloutName(label: kind.isItem ? labels[id] : nil)
    }

    /// The mode of the innermost open run (what a timer firing now fired in).
    var currentMode: Int { runStack.last?.mode ?? ModeTable.unknown }

    // ===== runs and iterations =====

    /// An event of a run: when no run is open, the run began before the trace did (or its begin was lost).
    private mutating func inRun(at ts: UInt64) {
        if runStack.isEmpty { openUnbegunRun(at: ts, mode: ModeTable.unknown) }
    }

    private mutating func openUnbegunRun(at ts: UInt64, mode: Int) {
        runsBegunBeforeTrace += 1
        runStack.append(OpenRun(start: ts, mode: mode))
    }

    mutating func runBegin(mode: Int, at ts: UInt64) {
        // Nested runs start only inside a callout: a run still open with no callout in progress lost its end event.
        if !runStack.isEmpty && calloutStack.isEmpty {
            closeRuns(downTo: 0, at: lastTimestamp, result: "end_lost")
        }
        seen(ts)
        if !runStack.isEmpty { nestedRuns += 1 }
        runStack.append(OpenRun(start: ts, mode: mode))
    }

    mutating func runEnd(_ result: LoopRunResult, at ts: UInt64) {
        seen(ts)
        inRun(at: ts)
        closeBacklog()
        closeRuns(downTo: runStack.count - 1, at: ts, result: result.description)
    }

    /// Ends the runs deeper than `depth` at `ts`, each with `result`.
    private mutating func closeRuns(downTo depth: Int, at ts: UInt64, result: String) {
        while runStack.count > max(depth, 0), let run = runStack.popLast() {
            results[result, default: 0] += 1
            let duration = ts >= run.start ? ts - run.start : 0
            if runStack.isEmpty {
                wall += duration
                timeline?.ran(.loop(loopID), from: run.start, to: ts)
                // Ends lost with the trace's losses must not leave stale callouts to blame.
                calloutStack.removeAll(keepingCapacity: true)
                closeIterations(deeperThanOrAt: 1, at: ts)
            } else if options.figures == .all {
                holds.remember(.init(start: run.start, end: ts, what: .run, depth: runStack.count + 1, mode: run.mode))
            }
        }
    }

    mutating func activity(_ activity: LoopActivity, _ place: TraceEvent.Place, at ts: UInt64) {
        seen(ts)
        let depth = Int(max(place.depth, 1))
        if activitiesOnly { runsAndSleeps(activity, depth: depth, mode: place.mode, at: ts) }
        if depth > runStack.count {
            // Begins the trace does not have: the activity tells the depth, and its own run's mode.
            while runStack.count < depth - 1 { openUnbegunRun(at: ts, mode: ModeTable.unknown) }
            openUnbegunRun(at: ts, mode: modes.id(place.mode))
        } else if runStack[depth - 1].mode == ModeTable.unknown {
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
            exitRun(depth: depth, at: ts)
        case .beforeWaiting:
            closeBacklog()
        default:
            break
        }
    }

    /// An adapter announced the loop (`loop_adapted`): from now on its activities alone tell its runs and sleeps.
    mutating func adaptedFromActivities(at ts: UInt64) {
        seen(ts)
        activitiesOnly = true
    }

    /// An activities-only loop's runs and sleeps, which a RunLoopCore loop reports with events of their own.
    private mutating func runsAndSleeps(_ activity: LoopActivity, depth: Int, mode: String, at ts: UInt64) {
        switch activity {
        case .entry:
            // A run still open at this depth lost its exit (trace losses).
            if runStack.count >= depth { closeRuns(downTo: depth - 1, at: lastTimestamp, result: "end_lost") }
            while runStack.count < depth - 1 { openUnbegunRun(at: ts, mode: ModeTable.unknown) }
            if !runStack.isEmpty { nestedRuns += 1 }
            sleepingSince = nil
            runStack.append(OpenRun(start: ts, mode: modes.id(mode)))
        case .beforeWaiting:
            sleepingSince = ts
        case .afterWaiting:
            guard let since = sleepingSince else { return }
            sleepingSince = nil
            let duration = ts >= since ? ts - since : 0
            slept += duration
            if options.figures == .all { sleeps.record(duration) }
            timeline?.slept(.loop(loopID), from: since, to: ts)
            if options.explainsLateWakeUps { lastWake = (since, ts, kernel.wait(from: since, to: ts)) }
            for index in openIterations.indices { openIterations[index].slept += duration }
            if options.figures == .all && !runStack.isEmpty {
                holds.remember(.init(start: since, end: ts, what: .sleep, depth: runStack.count, mode: runStack[runStack.count - 1].mode))
            }
        case .exit:
            sleepingSince = nil
        default:
            break
        }
    }

    /// Ends an activities-only loop's run at its exit (after its iterations closed).
    private mutating func exitRun(depth: Int, at ts: UInt64) {
        guard activitiesOnly, runStack.count >= depth else { return }
        closeRuns(downTo: depth - 1, at: ts, result: Self.exitedResult)
    }

    /// Said of a stall whose iteration the trace's end cut: its busy time is what the trace holds, at least that.
    static let cutOffMark = " (cut off: at least this long)"

    /// How an activities-only loop's runs end: an observer sees the exit, not the result.
    static let exitedResult = "exited"

    private mutating func closeIterations(deeperThanOrAt depth: Int, at ts: UInt64, cutOff: Bool = false) {
        while openIterations.count >= depth, let iteration = openIterations.popLast() {
            let elapsed = ts >= iteration.start ? ts - iteration.start : 0
            let busy = elapsed >= iteration.slept ? elapsed - iteration.slept : 0
            var measured: KernelFacetRecorder.Measured?
            if options.figures == .all {
                busyPerIteration.record(busy)
                measured = kernel.iteration(from: iteration.start, to: ts, busy: busy, outermost: openIterations.isEmpty)
            }
            if busy > options.stallThreshold {
                stalls += 1
                let cause = (iteration.longest.map { name($0.kind, id: $0.id) }
                    ?? (activitiesOnly ? Self.causeNotAvailable : "loop overhead")) + (cutOff ? Self.cutOffMark : "")
                keepWorst(TraceSummary.Stall(loopID: loopID, iteration: iteration.number, atNanoseconds: iteration.start,
                                             busyNanoseconds: busy, cause: cause, cutOff: cutOff ? true : nil,
                                             kernel: measured.map { kernel.split($0) }))
                timeline?.stall(.loop(loopID), at: iteration.start, busy: busy, cause: cause)
            }
        }
    }

    private mutating func keepWorst(_ stall: TraceSummary.Stall) {
        if worstStalls.count < options.stallsKeptPerLoop {
            worstStalls.append(stall)
        } else if let index = worstStalls.indices.min(by: { worstStalls[$0].busyNanoseconds < worstStalls[$1].busyNanoseconds }),
                  worstStalls[index].busyNanoseconds < stall.busyNanoseconds {
            worstStalls[index] = stall
        }
    }

    /// At the end of the trace: runs still open did not end in it. Their time up to the loop's last event counts.
    /// An iteration still open counts with what is known of it, marked cut off: its busy time so far and its
    /// longest callout, one still running included. A callout still running at the trace's end (a snapshot taken
    /// during the stall it reports) held the thread at least until `traceEnd`, the trace's last event.
    mutating func finishTrace(traceEnd: UInt64) {
        guard !runStack.isEmpty else { return }
        cutOffAt = lastTimestamp
        var end = lastTimestamp
        if let running = calloutStack.last, let last = openIterations.indices.last {
            end = max(lastTimestamp, traceEnd)
            let soFar = end >= running.start ? end - running.start : 0
            if soFar > (openIterations[last].longest?.duration ?? 0) {
                openIterations[last].longest = (soFar, running.kind, running.id)
            }
        }
        closeIterations(deeperThanOrAt: 1, at: end, cutOff: true)
        closeRuns(downTo: 0, at: lastTimestamp, result: "did_not_end")
    }

    // ===== sleeps and wake-ups =====

    mutating func wakeUp(_ reason: LoopWakeReason, slept duration: UInt64, at ts: UInt64) {
        seen(ts)
        inRun(at: ts)
        // A sleep that began before the run's first recorded event counts only from there (flight recorder).
        let outerStart = runStack[0].start
        let counted = min(duration, ts >= outerStart ? ts - outerStart : 0)
        slept += counted
        timeline?.slept(.loop(loopID), from: ts - counted, to: ts)
        wakeReasons[Int(reason.rawValue)] += 1
        for index in openIterations.indices { openIterations[index].slept += duration }
        if options.explainsLateWakeUps {
            let from = ts >= duration ? ts - duration : 0
            lastWake = (from, ts, kernel.wait(from: from, to: ts))
        }
        if options.figures == .all {
            sleeps.record(duration)
            holds.remember(.init(start: ts >= duration ? ts - duration : 0, end: ts, what: .sleep,
                                 depth: runStack.count, mode: runStack[runStack.count - 1].mode))
        }
        backlogWake = ts
        backlogCount = 0
    }

    @inline(__always)
    private mutating func countBacklog(dueAt due: UInt64) {
        if let wake = backlogWake, due <= wake { backlogCount += 1 }
    }

    private mutating func closeBacklog() {
        guard backlogWake != nil else { return }
        if options.figures == .all { backlog.record(backlogCount) }
        backlogWake = nil
    }

    // ===== callouts =====

    /// A timer's callout begins (its lateness is in its ``TimerStatistics``).
    mutating func timerFired(_ timerID: UInt64, scheduled: UInt64, at ts: UInt64) {
        seen(ts)
        inRun(at: ts)
        countBacklog(dueAt: scheduled)
        beginCallout(.timer, id: timerID, at: ts)
    }

    mutating func sourcePerformed(_ sourceID: UInt64, kind: LoopSourceKind, signaled: UInt64, at ts: UInt64) {
        seen(ts)
        switch kind {
        case .custom:
            if signaled != 0 && options.figures != .totals { sourceLatency.record(ts >= signaled ? ts - signaled : 0) }
            countBacklog(dueAt: signaled)
            lateIfAsleep(signaled: signaled, at: ts)
        case .port:
            if signaled != 0 && options.figures != .totals { portLatency.record(ts >= signaled ? ts - signaled : 0) }
            countBacklog(dueAt: signaled)
            lateIfAsleep(signaled: signaled, at: ts)
        case .descriptor:
            countBacklog(dueAt: 0)   // ready when the loop woke
        }
        beginCallout(CalloutKind(kind), id: sourceID, at: ts)
    }

    /// A source signalled while the loop was asleep and performed more than the late threshold after: a late
    /// wake-up, split by the kernel view.
    private mutating func lateIfAsleep(signaled: UInt64, at ts: UInt64) {
        guard options.explainsLateWakeUps, signaled != 0, ts >= signaled, ts - signaled > options.lateThreshold,
              let wake = lastWake, wake.from <= signaled, signaled <= wake.end else { return }
        kernel.lateWakeUp(due: signaled, callout: ts, woke: (wake.end, wake.episode))
    }

    /// A timer due at `due` while the loop was asleep, fired late at `ts` (its cause is ``asleep``): the kernel's
    /// split of its lateness, along the loop's last wait when that covered the fire date.
    /// Whether the outermost run's last wait, in the run still open, covered `due` (no nested run open now).
    func sleptThroughOutermost(_ due: UInt64) -> Bool {
        guard runStack.count == 1, let wake = lastWake else { return false }
        return runStack[0].start <= wake.from && wake.from <= due && due <= wake.end
    }

    mutating func lateWakeUp(due: UInt64, at ts: UInt64) {
        let woke = lastWake.flatMap { $0.from <= due && due <= $0.end ? ($0.end, $0.episode) : nil }
        kernel.lateWakeUp(due: due, callout: ts, woke: woke)
    }

    mutating func blockRan(_ blockID: UInt64, enqueued: UInt64, at ts: UInt64) {
        if let waited = queuedWorkRan(.block, id: blockID, enqueued: enqueued, at: ts), options.figures != .totals { blockLatency.record(waited) }
    }

    /// An actor job: a callout of its own kind, queued work like a block.
    mutating func jobRan(_ jobID: UInt64, enqueued: UInt64, at ts: UInt64) {
        if let waited = queuedWorkRan(.job, id: jobID, enqueued: enqueued, at: ts), options.figures != .totals { jobLatency.record(waited) }
    }

    /// A block or job from the loop's queue: the backlog it was part of and its callout. Returns its wait since the
    /// enqueue, when that was traced.
    private mutating func queuedWorkRan(_ kind: CalloutKind, id: UInt64, enqueued: UInt64, at ts: UInt64) -> UInt64? {
        seen(ts)
        let waited = queueWait(enqueued: enqueued, ranAt: ts)
        if waited != nil { countBacklog(dueAt: enqueued) }
        beginCallout(kind, id: id, at: ts)
        return waited
    }

    mutating func beginCallout(_ kind: CalloutKind, id: UInt64, at ts: UInt64) {
        seen(ts)
        inRun(at: ts)
        calloutStack.append(OpenCallout(kind: kind, id: id, start: ts, depth: runStack.count))
    }

    mutating func endCallout(id: UInt64, at ts: UInt64) {
        seen(ts)
        inRun(at: ts)
        // Match by id from the top: a lost begin (trace losses) must not unbalance the stack for good.
        let callout: OpenCallout
        if let top = calloutStack.last, top.id == id {
            callout = calloutStack.removeLast()
        } else if let index = calloutStack.lastIndex(where: { $0.id == id }) {
            callout = calloutStack[index]
            calloutStack.removeSubrange(index...)
        } else {
            return
        }
        let duration = ts >= callout.start ? ts - callout.start : 0
        if let last = openIterations.indices.last, duration > (openIterations[last].longest?.duration ?? 0) {
            openIterations[last].longest = (duration, callout.kind, callout.id)
        }
        guard options.figures == .all else { return }
        calloutDurations[callout.kind.rawValue].record(duration)
        let measured = kernel.callout(from: callout.start, to: ts)
        let mode = callout.depth >= 1 && callout.depth <= runStack.count ? runStack[callout.depth - 1].mode : ModeTable.unknown
        holds.remember(.init(start: callout.start, end: ts, what: .callout(callout.kind, id: callout.id),
                             depth: callout.depth, mode: mode))
        keepSlowest(callout, duration: duration, kernel: measured)
    }

    /// Ranked by ``TraceSummary/Callout/rankNanoseconds``: time on the CPU where the kernel view shows it, so a
    /// callout that waited for a CPU does not pass for a slow one.
    private mutating func keepSlowest(_ callout: OpenCallout, duration: UInt64, kernel measured: KernelFacetRecorder.Measured?) {
        let rank = measured?.onCPU ?? duration
        func entry() -> TraceSummary.Callout {
            TraceSummary.Callout(label: name(callout.kind, id: callout.id), kind: callout.kind.name,
                                 durationNanoseconds: duration, atNanoseconds: callout.start, kernel: measured.map { kernel.split($0) })
        }
        if slowest.count < options.keep {
            slowest.append(entry())
            if slowest.count == options.keep { slowestFloor = slowest.map(\.rankNanoseconds).min() ?? 0 }
        } else if rank > slowestFloor, let index = slowest.indices.min(by: { slowest[$0].rankNanoseconds < slowest[$1].rankNanoseconds }) {
            slowest[index] = entry()
            slowestFloor = slowest.map(\.rankNanoseconds).min() ?? 0
        }
    }

    static let causeNotAvailable = "not available (the adapter sees no callouts)"

    static let asleep = "wake-up latency (the loop was asleep)"
    static let notRunning = "loop not running"
    static let betweenCallouts = "loop overhead (between callouts)"
    static let beforeTrace = "before the trace's first event"

    /// How a verdict says what held a loop when a late timer came due (`N firings while …`): the causes that are
    /// no callout, in words; nil for a callout's name (`timer jank-1`), which the verdict says `ran`.
    static func heldPhrase(_ cause: String) -> String? {
        switch cause {
        case asleep: "the loop was asleep"
        case notRunning: "the loop was not running"
        case betweenCallouts: "the loop was between callouts"
        case beforeTrace: "the trace had not begun"
        case causeNotAvailable: "callouts the adapter cannot see ran"
        default: nil
        }
    }

    /// What held the loop at `time`, when a timer that fires in the modes of `timerModes` came due.
    ///
    /// It is the outermost callout busy at that moment, unless a run nested inside it could have served the timer
    /// (its mode is one the timer fires in): then what held that nested run, found the same way. A nested run that
    /// could not serve the timer is part of its callout's hold on the outer run, asleep or not.
    func cause(at time: UInt64, timerModes: ModeSet) -> String {
        if time < firstTimestamp { return Self.beforeTrace }
        if runStack.isEmpty { return Self.notRunning }
        var depth = 1
        while true {
            var cover = holds.covering(time, depth: depth)
            // Callouts and runs still open cover every moment since they began.
            if let open = calloutStack.first(where: { $0.depth == depth && $0.start <= time }) { cover.callout = (open.kind, open.id) }
            if depth < runStack.count, runStack[depth].start <= time { cover.nestedRunMode = runStack[depth].mode }
            guard let callout = cover.callout else {
                return cover.asleep ? Self.asleep : Self.betweenCallouts
            }
            guard let nestedMode = cover.nestedRunMode, timerModes.contains(nestedMode) else {
                return name(callout.kind, id: callout.id)
            }
            depth += 1
        }
    }

    // ===== results =====

    /// Adds another loop's totals (for the overall figures); both have had ``finishTrace()``.
    mutating func absorb(_ other: LoopTracker) {
        for (k, v) in other.results { results[k, default: 0] += v }
        nestedRuns += other.nestedRuns
        runsBegunBeforeTrace += other.runsBegunBeforeTrace
        if let cut = other.cutOffAt { cutOffAt = max(cutOffAt ?? 0, cut) }
        wall += other.wall
        slept += other.slept
        iterations += other.iterations
        busyPerIteration.merge(other.busyPerIteration)
        sleeps.merge(other.sleeps)
        sourceLatency.merge(other.sourceLatency)
        blockLatency.merge(other.blockLatency)
        portLatency.merge(other.portLatency)
        jobLatency.merge(other.jobLatency)
        backlog.merge(other.backlog)
        for (index, histogram) in other.calloutDurations.enumerated() { calloutDurations[index].merge(histogram) }
        for (index, count) in other.wakeReasons.enumerated() { wakeReasons[index] += count }
        stalls += other.stalls
        kernel.absorb(other.kernel)
        firstTimestamp = min(firstTimestamp, other.firstTimestamp)
        lastTimestamp = max(lastTimestamp, other.lastTimestamp)
    }

    /// The loop's summary; `timers` are the totals of the timers that fire on it.
    func summary(timers: TimerTotals) -> TraceSummary.LoopSummary {
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
        s.busyPerIteration = busyPerIteration.summary(for: options)
        s.sleep = sleeps.summary(for: options)
        // One histogram: the timer wake-up latency is the timer lateness.
        let timerLateness = timers.lateness.summary(for: options)
        s.wakeLatency = .init(timer: timerLateness, source: sourceLatency.summary(for: options), block: blockLatency.summary(for: options), port: portLatency.summary(for: options),
                              job: jobLatency.count > 0 ? jobLatency.summary(for: options) : nil)
        s.timerLateness = timerLateness
        s.timerBeyondTolerance = timers.beyondTolerance.summary(for: options)
        s.timerFirings = timers.firings
        s.timerFiringsWithTolerance = timers.firingsWithTolerance
        s.timerMissed = timers.missed
        s.timerLateFirings = timers.lateFirings
        s.timerWithinTolerance = timers.shareWithinNonzeroTolerance
        s.lateFiringCauses = timers.lateCauses
        var reasons: [String: UInt64] = [:]
        for reason in LoopWakeReason.allCases where wakeReasons[Int(reason.rawValue)] > 0 {
            reasons[reason.description] = wakeReasons[Int(reason.rawValue)]
        }
        s.wakeReasons = reasons
        s.backlogAtWakeUp = backlog.summary(for: options)
        var durations: [String: DistributionSummary] = [:]
        for kind in CalloutKind.allCases where calloutDurations[kind.rawValue].count > 0 {
            durations[kind.name] = calloutDurations[kind.rawValue].summary(for: options)
        }
        s.calloutDurations = durations
        s.slowestCallouts = slowest.sorted { $0.rankNanoseconds > $1.rankNanoseconds }
        s.stalls = stalls
        s.worstStalls = worstStalls.sorted { $0.busyNanoseconds > $1.busyNanoseconds }
        s.kernel = kernel.facet(utilization: s.utilization, first: firstTimestamp, last: lastTimestamp,
                                notAvailable: activitiesOnly ? TraceSummary.NotAvailable.kernelFoundation : nil,
                                distributions: options.figures == .all)
        if activitiesOnly {
            s.adapter = LoopAdapter.foundation.description
            s.notAvailable = TraceSummary.NotAvailable.foundation
            s.forgetWhatActivitiesDoNotShow()
        }
        return s
    }
}

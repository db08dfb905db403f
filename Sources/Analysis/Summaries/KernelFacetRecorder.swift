import TraceModel

/// One loop's kernel figures while a trace streams by, the same for every kind of loop: each tracker tells it
/// its windows (iterations, callouts, waits, late wake-ups) in its own terms, and this asks the thread's
/// ``KernelThreadView`` what happened inside them. Without a kernel view every call returns at its first line.
struct KernelFacetRecorder {
    let threadID: Int32
    private let views: KernelViews
    private var view: KernelThreadView?
    /// Whether any window was asked about while the view followed the thread.
    private var covered = false
    private var uncoveredWindows: UInt64 = 0
    /// The outermost iterations' time off the CPU in the loop's work, and their busy and on-CPU time.
    private var busy = KernelWindow(wall: 0)
    private var busyCovered: UInt64 = 0
    private var onCPUCovered: UInt64 = 0
    private var onCPUPerIteration = LatencyHistogram()
    private var onCPUPerCallout = LatencyHistogram()
    private var runQueuePerWakeUp = LatencyHistogram()
    private var late = TraceSummary.LateWakeUps()
    /// Where late wake-ups waited for a CPU: their culprits.
    private var lateWaits = KernelWindow(wall: 0)

    init(threadID: Int32, views: KernelViews) {
        self.threadID = threadID
        self.views = views
    }

    /// The thread's view once the kernel view is on (looked up once).
    @inline(__always)
    private mutating func threadView() -> KernelThreadView? {
        guard views.isOn else { return nil }
        if view == nil { view = views.thread(threadID) }
        return view
    }

    /// A window of the loop's work, or nil (and counted) when the view did not follow the thread then.
    private mutating func window(from: UInt64, to: UInt64) -> KernelWindow? {
        guard let view = threadView() else { return nil }
        guard let window = view.split(from: from, to: to) else {
            uncoveredWindows += 1
            return nil
        }
        covered = true
        return window
    }

    /// The last moment the thread's whole time is known (it got a CPU back then), nil without a kernel view of it.
    mutating func lastKnown() -> UInt64? {
        guard let view = threadView(), view.lastBack > 0 else { return nil }
        return view.lastBack
    }

    /// One of the loop's waits, [from, to] as the loop measured it: its episodes are sleep from now on. Returns
    /// the episode that woke it, after recording its run-queue delay.
    mutating func wait(from: UInt64, to: UInt64, blockedOnly: Bool = false) -> KernelEpisode? {
        guard let view = threadView(), from >= view.followedSince else { return nil }
        covered = true
        guard let wake = view.markLoopWait(from: from, to: to, blockedOnly: blockedOnly) else { return nil }
        runQueuePerWakeUp.record(wake.offCPU.runnable)
        return wake
    }

    /// What a window measured: its time on the CPU, and the rest, kept as gathered until a summary needs its split
    /// (a slowest callout, a stall): naming and ranking culprits for every callout would cost more than the rest.
    /// The system calls a runtime's thread parks or sleeps in while another thread of its wait set holds the loop.
    static let parkingCalls = ["futex", "futex_waitv", "nanosleep", "clock_nanosleep"]

    struct Measured {
        let onCPU: UInt64
        /// Blocked time taken out of the iteration's busy time (`parksWhenBlocked`).
        var parked: UInt64 = 0
        fileprivate let window: KernelWindow
    }

    /// The split of a measured window, for a summary.
    func split(_ measured: Measured) -> TraceSummary.KernelSplit { measured.window.split(onCPU: measured.onCPU, names: views) }

    /// An iteration from `from` to `to` that was busy `busyTime` (its sleeps left out), measured.
    /// `outermost`: its time is the loop's (a nested run's iterations are inside an outer one's).
    /// `parksWhenBlocked`: the thread shares its wait set with others (a Go or tokio runtime's threads), so the time it
    /// was blocked outside the wait parked (on a futex, or asleep: ``parkingCalls``) is time another thread held the
    /// loop, not busy time: it is taken out (``Measured/parked``), and the busy time measured is what is left. Time
    /// blocked in anything else (a read, a page fault, disk I/O) stays busy: that is the loop's thread held up.
    mutating func iteration(from: UInt64, to: UInt64, busy wholeBusy: UInt64, outermost: Bool, parksWhenBlocked: Bool = false) -> Measured? {
        guard var window = window(from: from, to: to) else { return nil }
        // Its sleeps (its own, and those of runs nested in it) are not busy time: the loop left them out already.
        window.asleep = 0
        var busyTime = wholeBusy, parked: UInt64 = 0
        if parksWhenBlocked {
            for call in Self.parkingCalls {
                guard let time = window.blockedIn.removeValue(forKey: call) else { continue }
                let part = min(time, busyTime - parked)
                parked += part
                window.blocked -= min(time, window.blocked)
            }
            busyTime -= parked
        }
        let off = window.workOffCPU
        let onCPU = busyTime >= off ? busyTime - off : 0
        onCPUPerIteration.record(onCPU)
        if outermost {
            busy.merge(window)
            busyCovered += busyTime
            onCPUCovered += onCPU
        }
        return Measured(onCPU: onCPU, parked: parked, window: window)
    }

    /// A callout from `from` to `to`, measured (on-CPU = wall − every time off the CPU inside it).
    mutating func callout(from: UInt64, to: UInt64) -> Measured? {
        guard let window = window(from: from, to: to) else { return nil }
        let off = window.workOffCPU + window.asleep
        let measured = Measured(onCPU: window.wall >= off ? window.wall - off : 0, window: window)
        onCPUPerCallout.record(measured.onCPU)
        return measured
    }

    /// Work due at `due` while the loop was asleep, called out at `callout`, `threshold` or more late: where the
    /// lateness went. `woke` is the wait that ended (its end, the loop's return, and the episode that woke it);
    /// nil when the loop's last wait did not cover `due`.
    mutating func lateWakeUp(due: UInt64, callout: UInt64, woke: (end: UInt64, episode: KernelEpisode?)?) {
        guard views.isOn else { return }
        late.count += 1
        guard let woke, let episode = woke.episode, let view = threadView() else { return }
        var parts = TraceSummary.LateWakeUpParts()
        var point = due
        func step(_ to: UInt64) -> UInt64 {
            let next = min(callout, max(point, to))
            defer { point = next }
            return next - point
        }
        let e = episode.offCPU
        if let timer = episode.timer {
            parts.armedLateNanoseconds = step(timer.due)
            parts.timerSlackNanoseconds = step(min(timer.fired, timer.latest))
            parts.interruptDeliveryNanoseconds = step(timer.fired)
        }
        parts.wakePathNanoseconds = step(e.woken)
        let runnableFrom = point
        let runnable = step(e.back)
        parts.throttledNanoseconds = min(e.throttled, runnable)
        parts.runQueueNanoseconds = runnable - parts.throttledNanoseconds
        // Off its CPU again before the wait returned, though awake: preempted, or throttled on its way back to user
        // space (where Linux 6.18 stops a task whose group is out of quota). That is the run queue's or the quota's
        // time, not the return path's; the loop counted it in its wait, so its iteration leaves it out anyway. A
        // lock it blocked in on the way back stays the return path's, as before.
        let returnFrom = point
        let returnSpan = step(woke.end)
        let requeued = view.split(from: returnFrom, to: returnFrom + returnSpan, runnableOnly: true) ?? KernelWindow(wall: 0)
        let requeuedThrottled = min(requeued.throttled, returnSpan)
        let requeuedQueued = min(requeued.runQueue, returnSpan - requeuedThrottled)
        parts.throttledNanoseconds += requeuedThrottled
        parts.runQueueNanoseconds += requeuedQueued
        parts.returnPathNanoseconds = returnSpan - requeuedThrottled - requeuedQueued
        lateWaits.merge(requeued)
        // The rest is the loop's own work before the callout, split by what happened inside it.
        let rest = callout - point
        var work = view.split(from: point, to: callout) ?? KernelWindow(wall: rest)
        // The wake-up's wait for a CPU, apart from the sleep it ended (the episode is the loop's wait).
        var waited = KernelWindow(wall: runnable)
        var wakeUp = episode
        wakeUp.inLoopWait = false
        waited.add(wakeUp, from: runnableFrom, to: runnableFrom + runnable)
        lateWaits.merge(waited)
        lateWaits.merge(work)
        // Within the rest whatever the trace says (a damaged one must not break the sum): capped part by part.
        var left = rest
        func cap(_ value: inout UInt64) { value = min(value, left); left -= value }
        cap(&work.runQueue); cap(&work.throttled); cap(&work.blocked); cap(&work.asleep)
        parts.loopWork = work.split(onCPU: left, names: views)
        late.explained += 1
        late.latenessNanoseconds += callout - due
        if view.missesRecords(from: due, to: callout) { late.incomplete += 1 }
        late.parts.add(parts)
    }

    /// Another loop's figures added (for the trace's overall kernel figures).
    mutating func absorb(_ other: KernelFacetRecorder) {
        covered = covered || other.covered
        uncoveredWindows += other.uncoveredWindows
        busy.merge(other.busy)
        busyCovered += other.busyCovered
        onCPUCovered += other.onCPUCovered
        onCPUPerIteration.merge(other.onCPUPerIteration)
        onCPUPerCallout.merge(other.onCPUPerCallout)
        runQueuePerWakeUp.merge(other.runQueuePerWakeUp)
        late.count += other.late.count
        late.explained += other.late.explained
        late.latenessNanoseconds += other.late.latenessNanoseconds
        late.incomplete += other.late.incomplete
        late.parts.add(other.late.parts)
        lateWaits.merge(other.lateWaits)
    }

    /// The loop's kernel facet, nil when the kernel view never followed its thread. `utilization` is the loop's
    /// busy ÷ wall, of which the on-CPU share is the part its covered iterations spent on the CPU. Without
    /// `distributions` (a summary of fewer ``TraceSummarizer/Figures``: `rlctl top`'s, every second) the three
    /// distributions are left empty: each is several walks of a histogram.
    func facet(utilization: Double, first: UInt64, last: UInt64, notAvailable: [String]?,
               distributions: Bool = true) -> TraceSummary.KernelFacet? {
        guard views.isOn, covered || uncoveredWindows > 0 else { return nil }
        var f = TraceSummary.KernelFacet()
        f.followedSinceNanoseconds = views.followedSince
        f.coversWholeLoop = uncoveredWindows == 0 && views.followedSince <= first
        f.busy = busy.split(onCPU: onCPUCovered, names: views)
        f.onCPUShare = busyCovered > 0 ? utilization * Double(onCPUCovered) / Double(busyCovered) : 0
        if distributions {
            f.onCPUPerIteration = onCPUPerIteration.summary
            f.onCPUPerCallout = onCPUPerCallout.summary
            f.runQueuePerWakeUp = runQueuePerWakeUp.summary
        }
        f.lateWakeUps = late
        f.lateWakeUps.culprits = Array(views.culprits(lateWaits.culprits).prefix(TraceSummary.KernelSplit.culpritsKept))
        f.lostRecordsAffecting = first <= last ? views.lostRecords(from: first, to: last) : 0
        f.notAvailable = notAvailable
        return f
    }
}

extension TraceSummary.LateWakeUpParts {
    mutating func add(_ other: Self) {
        armedLateNanoseconds += other.armedLateNanoseconds
        timerSlackNanoseconds += other.timerSlackNanoseconds
        interruptDeliveryNanoseconds += other.interruptDeliveryNanoseconds
        wakePathNanoseconds += other.wakePathNanoseconds
        runQueueNanoseconds += other.runQueueNanoseconds
        throttledNanoseconds += other.throttledNanoseconds
        returnPathNanoseconds += other.returnPathNanoseconds
        loopWork.add(other.loopWork)
    }
}

extension TraceSummary.KernelSplit {
    /// Adds another split's times (culprits and blocking causes are the loop's, gathered apart).
    mutating func add(_ other: Self) {
        onCPUNanoseconds += other.onCPUNanoseconds
        runQueueNanoseconds += other.runQueueNanoseconds
        throttledNanoseconds += other.throttledNanoseconds
        blockedNanoseconds += other.blockedNanoseconds
        if let asleep = other.asleepNanoseconds { asleepNanoseconds = (asleepNanoseconds ?? 0) + asleep }
        if let blockedIn = other.blockedIn {
            var mine = self.blockedIn ?? [:]
            for (name, time) in blockedIn { mine[name, default: 0] += time }
            self.blockedIn = mine
        }
        if other.incomplete == true { incomplete = true }
    }
}

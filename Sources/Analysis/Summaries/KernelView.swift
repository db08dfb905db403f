import TraceModel

/// One time a followed thread was off its CPU, with the timer that woke it and who held the CPU it waited for.
struct KernelEpisode {
    var offCPU: TraceEvent.KernelOffCPU
    var timer: (due: UInt64, latest: UInt64, fired: UInt64)?
    var runQueue: TraceEvent.KernelRunQueue?
    /// A loop's tracker found it inside the loop's own wait (its sleep): its time is sleep, not the loop's work.
    var inLoopWait = false
}

/// What the kernel view recorded of one thread, kept for the trackers of the loops on it: the recent times off
/// the CPU, in the order of their end (the order events reach the summarizer), so that a loop asks, once it knows
/// a window (a callout, an iteration, a wake-up), what happened inside it. A class: the trackers of every loop on
/// the thread share it.
final class KernelThreadView {
    /// Episodes from `head` on; older ones were dropped past ``capacity``.
    private var episodes: [KernelEpisode] = []
    private var head = 0
    /// The end of the newest episode dropped: a window that begins before it may have lost some.
    private(set) var droppedUpTo: UInt64 = 0
    /// The last time the thread got a CPU back: what it did up to then is known.
    private(set) var lastBack: UInt64 = 0
    /// Each thread keeps this many of its latest episodes: windows are a stall or a callout long, far less (a
    /// window older than the oldest kept is marked incomplete). With ``KernelViews/threadLimit`` it bounds memory
    /// whatever a damaged trace holds.
    static let capacity = 4096
    /// The timer and run queue of the episode to come, with the time they were stamped: they belong to the
    /// episode stamped at the same time, not to a later one when that episode's record was lost.
    fileprivate var pendingTimer: (at: UInt64, due: UInt64, latest: UInt64, fired: UInt64)?
    fileprivate var pendingRunQueue: (at: UInt64, queue: TraceEvent.KernelRunQueue)?
    private unowned let views: KernelViews

    fileprivate init(views: KernelViews) {
        self.views = views
    }

    /// When the kernel view began to follow this thread.
    var followedSince: UInt64 { views.followedSince }

    fileprivate func add(_ offCPU: TraceEvent.KernelOffCPU) {
        var episode = KernelEpisode(offCPU: offCPU)
        if let timer = pendingTimer, timer.at == offCPU.back { episode.timer = (timer.due, timer.latest, timer.fired) }
        if let queue = pendingRunQueue, queue.at == offCPU.back { episode.runQueue = queue.queue }
        pendingTimer = nil
        pendingRunQueue = nil
        if offCPU.back > lastBack { lastBack = offCPU.back }
        episodes.append(episode)
        if episodes.count - head > Self.capacity {
            droppedUpTo = episodes[head].offCPU.back
            head += 1
            if head >= Self.capacity {
                episodes.removeFirst(head)
                head = 0
            }
        }
    }

    /// The index of the first kept episode that ends after `time`.
    private func firstEnding(after time: UInt64) -> Int {
        var low = head, high = episodes.count
        while low < high {
            let middle = (low + high) / 2
            if episodes[middle].offCPU.back <= time { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Marks the episodes inside the loop's wait [from, to] as its sleep (`blockedOnly`: only those it blocked
    /// in, when the loop's measure of its sleep also holds work, as NIO's does), and returns the one that woke it.
    ///
    /// That is the last time it blocked in the system call it blocked in first: the wait is the first thing the
    /// loop blocks in once its measure began, a wait woken without an event sleeps again in the same call, and what
    /// it blocks in after the wait returned (a lock on its way back, RunLoopCore's under its state lock) is a
    /// different call.
    func markLoopWait(from: UInt64, to: UInt64, blockedOnly: Bool = false) -> KernelEpisode? {
        guard let last = episodes.last, last.offCPU.back > from else { return nil }
        var wake: KernelEpisode?
        var waitCall: Int32?
        var index = firstEnding(after: from)
        while index < episodes.count, episodes[index].offCPU.back <= to {
            let offCPU = episodes[index].offCPU
            let blocked = !offCPU.reason.leftRunnable
            // A wait the loop measured from just before its system call may start a little after the thread
            // blocked in it: the wake-up inside the loop's measure is what makes it the wait's.
            let inside = offCPU.left >= from || (blocked && offCPU.woken >= from)
            if inside, !blockedOnly || blocked {
                episodes[index].inLoopWait = true
                if blocked {
                    if waitCall == nil { waitCall = offCPU.syscall }
                    if offCPU.syscall == waitCall { wake = episodes[index] }
                }
            }
            index += 1
        }
        return wake
    }

    /// Whether episodes of [from, to] may be missing: the kernel recorder lost records then, or this view no longer
    /// keeps them.
    func missesRecords(from: UInt64, to: UInt64) -> Bool {
        from < droppedUpTo || views.lostOverlaps(from: from, to: to)
    }

    /// The split of [from, to] (`wall` = to − from): every episode's part inside it. Nil when the kernel view did
    /// not follow the thread yet at `from`. `runnableOnly`: only the times it left its CPU runnable (preempted or
    /// throttled), counted as such even inside a loop's wait.
    func split(from: UInt64, to: UInt64, runnableOnly: Bool = false) -> KernelWindow? {
        guard from >= followedSince else { return nil }
        var window = KernelWindow(wall: to >= from ? to - from : 0)
        window.incomplete = missesRecords(from: from, to: to)
        guard let last = episodes.last, last.offCPU.back > from else { return window }
        var index = firstEnding(after: from)
        while index < episodes.count {
            let episode = episodes[index]
            if episode.offCPU.left >= to { break }
            if !runnableOnly {
                window.add(episode, from: from, to: to)
            } else if episode.offCPU.reason.leftRunnable {
                var asItWas = episode
                asItWas.inLoopWait = false
                window.add(asItWas, from: from, to: to)
            }
            index += 1
        }
        return window
    }
}

/// The time off the CPU inside one window of a thread, as it is gathered: the parts, what the thread blocked in
/// and who held its CPU, in small tables (a window sees a few culprits).
struct KernelWindow {
    let wall: UInt64
    var runQueue: UInt64 = 0
    var throttled: UInt64 = 0
    var blocked: UInt64 = 0
    /// Inside the loop's own waits (a nested run's sleep inside a callout).
    var asleep: UInt64 = 0
    /// Episodes inside the loop's work (not its waits).
    var workOffCPU: UInt64 { runQueue + throttled + blocked }
    var blockedIn: [String: UInt64] = [:]
    var culprits: [Int32: (nanoseconds: UInt64, cpu: Int32)] = [:]
    var others: UInt64 = 0
    var perCPU: [Int32: UInt64] = [:]
    var incomplete = false

    init(wall: UInt64) { self.wall = wall }

    private static func overlap(_ a: UInt64, _ b: UInt64, _ from: UInt64, _ to: UInt64) -> UInt64 {
        let low = max(a, from), high = min(b, to)
        return high > low ? high - low : 0
    }

    /// Adds the part of `episode` inside [from, to] (the whole of it, in every window a loop asks about: a window
    /// ends at events the thread emitted, when it was running).
    mutating func add(_ episode: KernelEpisode, from: UInt64, to: UInt64) {
        let e = episode.offCPU
        let blockedPart = Self.overlap(e.left, e.woken, from, to)
        let runnablePart = Self.overlap(e.woken, e.back, from, to)
        if episode.inLoopWait {
            asleep += blockedPart + runnablePart
            return
        }
        let throttledPart = min(e.throttled, runnablePart)
        let queued = runnablePart - throttledPart
        throttled += throttledPart
        runQueue += queued
        if blockedPart > 0 {
            blocked += blockedPart
            blockedIn[KernelNames.blockedIn(e), default: 0] += blockedPart
        }
        guard queued > 0 else { return }
        perCPU[e.cpu, default: 0] += queued
        guard let queue = episode.runQueue else {
            others += queued
            return
        }
        // Culprits are the kernel's for the whole wait on the run queue (throttled time is off it): a window that
        // holds part of it gets its share of each.
        let runnable = e.back &- e.woken
        let whole = runnable - min(e.throttled, runnable)
        func share(_ nanoseconds: UInt64) -> UInt64 {
            queued >= whole || whole == 0 ? nanoseconds : UInt64(Double(nanoseconds) * Double(queued) / Double(whole))
        }
        for culprit in queue.culprits {
            let held = share(culprit.nanoseconds)
            let known = culprits[culprit.threadID]
            culprits[culprit.threadID] = ((known?.nanoseconds ?? 0) + held,
                                          known.map { $0.nanoseconds >= held ? $0.cpu : queue.cpu } ?? queue.cpu)
        }
        others += share(queue.others)
    }

    mutating func merge(_ other: KernelWindow) {
        runQueue += other.runQueue
        throttled += other.throttled
        blocked += other.blocked
        asleep += other.asleep
        for (name, time) in other.blockedIn { blockedIn[name, default: 0] += time }
        for (tid, held) in other.culprits {
            let known = culprits[tid]
            culprits[tid] = ((known?.nanoseconds ?? 0) + held.nanoseconds,
                             known.map { $0.nanoseconds >= held.nanoseconds ? $0.cpu : held.cpu } ?? held.cpu)
        }
        others += other.others
        for (cpu, time) in other.perCPU { perCPU[cpu, default: 0] += time }
        incomplete = incomplete || other.incomplete
    }

    /// The split for a summary. `onCPU` is the window's time on the CPU (its wall, or an iteration's busy time,
    /// minus every part off the CPU).
    func split(onCPU: UInt64, names: KernelViews) -> TraceSummary.KernelSplit {
        var s = TraceSummary.KernelSplit()
        s.onCPUNanoseconds = onCPU
        s.runQueueNanoseconds = runQueue
        s.throttledNanoseconds = throttled
        s.blockedNanoseconds = blocked
        s.asleepNanoseconds = asleep > 0 ? asleep : nil
        s.blockedIn = blockedIn.isEmpty ? nil : blockedIn
        let culprits = names.culprits(self.culprits)
        s.culprits = culprits.isEmpty ? nil : Array(culprits.prefix(TraceSummary.KernelSplit.culpritsKept))
        s.othersNanoseconds = others > 0 ? others : nil
        s.cpu = perCPU.max { ($0.value, -$0.key) < ($1.value, -$1.key) }?.key
        s.incomplete = incomplete ? true : nil
        return s
    }

}

/// The kernel view of a trace, fed by its kernel events: which processes it follows since when, the tasks it
/// names, each followed thread's times off the CPU, and the windows where records were lost. Loops of every kind
/// consult it by their thread id; a trace without kernel events leaves it off, and the trackers never call it.
final class KernelViews {
    /// Some kernel_begin was read: from then on, trackers consult the view.
    private(set) var isOn = false
    /// The first kernel_begin: when the kernel view began.
    private(set) var followedSince: UInt64 = .max
    private(set) var processes: [TraceSummary.KernelView.Process] = []
    private var tasks: [Int32: (pid: Int32, command: String)] = [:]
    private var threads: [Int32: KernelThreadView] = [:]
    private(set) var records: UInt64 = 0
    private(set) var lostRecords: UInt64 = 0
    /// Windows with lost records, [from, to], each with its count.
    private(set) var lost: [(from: UInt64, to: UInt64, records: UInt64)] = []
    /// Kernel records of threads past ``threadLimit``: left out, counted with the kernel view's lost records (they are
    /// not the loops' events).
    private(set) var leftOut: UInt64 = 0

    /// Threads the view keeps apart; their episodes come from the trace, so a damaged one must not size memory.
    static let threadLimit = 1024
    static let taskLimit = 65_536
    static let processLimit = 1024
    /// Loss windows kept apart; past this many each new one is merged into the last (its count stays exact).
    static let lossWindowLimit = 1 << 16

    func consume(_ event: TraceEvent) {
        switch event.payload {
        case .kernelBegin(let pid, let command):
            isOn = true
            followedSince = min(followedSince, event.timestamp)
            if processes.count < Self.processLimit {
                processes.append(.init(pid: pid, command: command, sinceNanoseconds: event.timestamp))
            }
        case .kernelTask(let tid, let pid, let command):
            if tasks.count < Self.taskLimit || tasks[tid] != nil { tasks[tid] = (pid, command) }
        case .kernelTimer(let tid, let due, let latest, let fired):
            thread(tid)?.pendingTimer = (event.timestamp, due, latest, fired)
        case .kernelRunQueue(let queue):
            thread(queue.threadID)?.pendingRunQueue = (event.timestamp, queue)
        case .kernelOffCPU(let offCPU):
            records += 1
            guard let view = thread(offCPU.threadID) else {
                leftOut += 1
                return
            }
            view.add(offCPU)
        case .kernelLost(let count, let from):
            lostRecords = lostRecords.addingLoss(count)
            if lost.count < Self.lossWindowLimit {
                lost.append((min(from, event.timestamp), event.timestamp, count))
            } else {
                lost[lost.count - 1].from = min(lost[lost.count - 1].from, from)
                lost[lost.count - 1].to = max(lost[lost.count - 1].to, event.timestamp)
                lost[lost.count - 1].records = lost[lost.count - 1].records.addingLoss(count)
            }
        default:
            break
        }
    }

    /// The thread's view, made on first use; nil while the kernel view is off or past ``threadLimit`` threads.
    func thread(_ threadID: Int32) -> KernelThreadView? {
        guard isOn else { return nil }
        if let view = threads[threadID] { return view }
        guard threads.count < Self.threadLimit else { return nil }
        let view = KernelThreadView(views: self)
        threads[threadID] = view
        return view
    }

    var threadsFollowed: Int { threads.count }

    /// Windows come in the order of their end (each is stamped when the recorder noticed), and trackers ask about
    /// recent windows: the search stops at the first loss that ended before `from`.
    func lostOverlaps(from: UInt64, to: UInt64) -> Bool {
        for window in lost.reversed() {
            if window.to < from { return false }
            if window.from <= to { return true }
        }
        return false
    }

    /// Records lost in windows overlapping [from, to].
    func lostRecords(from: UInt64, to: UInt64) -> UInt64 {
        lost.reduce(0) { $1.from <= to && $1.to >= from ? $0.addingLoss($1.records) : $0 }
    }

    /// Culprits by thread id, named, longest first (ties by thread id, so reports are stable).
    func culprits(_ byThread: [Int32: (nanoseconds: UInt64, cpu: Int32)]) -> [TraceSummary.KernelCulprit] {
        byThread.map { tid, held in
            let task = tasks[tid]
            return TraceSummary.KernelCulprit(threadID: tid, pid: task?.pid, command: task?.command, nanoseconds: held.nanoseconds, cpu: held.cpu)
        }.sorted { ($0.nanoseconds, -Int64($0.threadID)) > ($1.nanoseconds, -Int64($1.threadID)) }
    }

    /// The status of the trace's kernel view (nil without one), with every loop's figures together.
    func status(overall: TraceSummary.KernelFacet?) -> TraceSummary.KernelView? {
        guard isOn else { return nil }
        var view = TraceSummary.KernelView(status: TraceSummary.KernelView.on)
        view.processes = processes
        view.threadsFollowed = UInt64(threads.values.filter(\.hasEpisodes).count)
        view.records = records
        view.lostRecords = lostRecords.addingLoss(leftOut)
        view.overall = overall
        return view
    }
}

extension KernelThreadView {
    var hasEpisodes: Bool { !episodes.isEmpty }
}

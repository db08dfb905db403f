import TraceModel

extension TraceSummary {
    /// The kernel's side of one time window of a loop's thread (a callout, a stall, the loop's own work before a
    /// late callout): how much of its wall time the thread ran, and where the rest went. The parts add up to the
    /// window's time: `onCPU + runQueue + throttled + blocked + asleep`.
    public struct KernelSplit: Codable, Sendable, Equatable {
        /// Running on a CPU: the window's time minus every time off the CPU inside it.
        public var onCPUNanoseconds: UInt64 = 0
        /// Runnable and waiting for a CPU (preempted, or woken and queued), not counting ``throttledNanoseconds``.
        public var runQueueNanoseconds: UInt64 = 0
        /// Runnable while its cgroup was out of CPU quota (CFS bandwidth control).
        public var throttledNanoseconds: UInt64 = 0
        /// Blocked outside the loop's own waits: in a system call, a lock, a page fault.
        public var blockedNanoseconds: UInt64 = 0
        /// Asleep in the loop's own waits inside the window (a nested run's sleep inside a callout); nil when none.
        public var asleepNanoseconds: UInt64?
        /// What it blocked in (``KernelNames/blockedIn(_:)``: a system call's name, `page fault or I/O`), and how
        /// long; nil when it never blocked.
        public var blockedIn: [String: UInt64]?
        /// Who held the CPU it waited for, longest first (at most ``KernelSplit/culpritsKept``); nil when it never
        /// waited for a CPU.
        public var culprits: [KernelCulprit]?
        /// Of the time it waited for a CPU, what no listed culprit accounts for (tasks past the kernel's list, a
        /// CPU it migrated from).
        public var othersNanoseconds: UInt64?
        /// The CPU it waited for longest.
        public var cpu: Int32?
        /// Kernel records were lost in this window: the parts off the CPU may undercount (on-CPU overcounts).
        public var incomplete: Bool?

        public init() {}

        /// Every part off the CPU.
        public var offCPUNanoseconds: UInt64 { runQueueNanoseconds + throttledNanoseconds + blockedNanoseconds + (asleepNanoseconds ?? 0) }

        static let culpritsKept = 5
    }

    /// A task that held the CPU a loop's thread waited for.
    public struct KernelCulprit: Codable, Sendable, Equatable {
        public var threadID: Int32
        /// Its process (0: a kernel thread or the idle task), nil when the trace does not name it.
        public var pid: Int32?
        public var command: String?
        public var nanoseconds: UInt64
        /// The CPU where it held the loop's thread off longest.
        public var cpu: Int32

        /// `sh (pid 4242)`, `rlctl (pid 4242, thread 4250)` (a thread other than its process's first: several of
        /// one process must read apart), `kworker/0:1 (kernel thread)`, `thread 77`.
        public var name: String {
            guard let command else { return "thread \(threadID)" }
            guard let pid else { return command }
            if pid == 0 { return "\(command) (kernel thread)" }
            return threadID == pid ? "\(command) (pid \(pid))" : "\(command) (pid \(pid), thread \(threadID))"
        }
    }

    /// Where the time of late wake-ups went, from when the work was due (a timer's fire date, a source's signal, a
    /// wait's timeout) to when the loop called it out. Every part is a difference of two consecutive moments, each
    /// moment clamped between the previous one and the callout, so the parts add up exactly to the lateness.
    public struct LateWakeUpParts: Codable, Sendable, Equatable {
        /// The kernel timer that woke the loop was due later than the work (the loop armed its wake-up late:
        /// tolerance, coalescing).
        public var armedLateNanoseconds: UInt64 = 0
        /// Timer slack: from the timer's due time to the earlier of its firing and its latest allowed expiry.
        public var timerSlackNanoseconds: UInt64 = 0
        /// The timer fired after its latest allowed expiry (interrupt delivery, a vCPU or idle-exit delay).
        public var interruptDeliveryNanoseconds: UInt64 = 0
        /// From the timer's firing (or the work being due, without a timer) to the thread being runnable.
        public var wakePathNanoseconds: UInt64 = 0
        /// Runnable, waiting for a CPU (not throttled).
        public var runQueueNanoseconds: UInt64 = 0
        public var throttledNanoseconds: UInt64 = 0
        /// From back on the CPU to the loop's own wake-up event (the wait's return in user space).
        public var returnPathNanoseconds: UInt64 = 0
        /// The loop's own work between its wake-up and the callout, split as any window is.
        public var loopWork = KernelSplit()

        public init() {}

        /// The parts added: the lateness they explain.
        public var totalNanoseconds: UInt64 {
            armedLateNanoseconds + timerSlackNanoseconds + interruptDeliveryNanoseconds + wakePathNanoseconds + runQueueNanoseconds
                + throttledNanoseconds + returnPathNanoseconds + loopWork.onCPUNanoseconds + loopWork.offCPUNanoseconds
        }

        /// The parts by name, in the order the time passed, for renderings.
        public var named: [(name: String, nanoseconds: UInt64)] {
            [("armed late (tolerance, coalescing)", armedLateNanoseconds), ("timer slack", timerSlackNanoseconds),
             ("interrupt delivery", interruptDeliveryNanoseconds), ("wake path", wakePathNanoseconds),
             ("waiting for a CPU", runQueueNanoseconds), ("throttled", throttledNanoseconds),
             ("return path", returnPathNanoseconds), ("loop's own work on CPU", loopWork.onCPUNanoseconds),
             ("loop's own work waiting for a CPU", loopWork.runQueueNanoseconds),
             ("loop's own work throttled", loopWork.throttledNanoseconds),
             ("loop's own work blocked", loopWork.blockedNanoseconds + (loopWork.asleepNanoseconds ?? 0))]
        }
    }

    /// Late wake-ups' time by cause, coarser than ``LateWakeUpParts`` and adding up to the same lateness: the
    /// `cause` label of `rlctl top --serve`'s `runloop_late_time` counter.
    public struct LateTimeByCause: Codable, Sendable, Equatable {
        /// Waiting for a CPU: on the way back from the wait, and inside the loop's own work before the callout.
        public var runQueueNanoseconds: UInt64 = 0
        /// Runnable while the thread's cgroup was out of CPU quota, the same two places.
        public var throttledNanoseconds: UInt64 = 0
        /// The loop's own work blocked off the CPU (a lock, a system call, a page fault) before the callout.
        public var blockedNanoseconds: UInt64 = 0
        /// The wake-up was set up late: armed after the work was due (tolerance, coalescing) and timer slack.
        public var slackNanoseconds: UInt64 = 0
        /// The kernel's delivery: the timer's interrupt late, the wake-up itself, the return to user space.
        public var wakePathNanoseconds: UInt64 = 0
        /// The loop's own work on the CPU before the callout.
        public var loopWorkNanoseconds: UInt64 = 0
        /// Late wake-ups the kernel view explained (their time is above), and their lateness added.
        public var explained: UInt64 = 0

        public init() {}

        public init(_ late: LateWakeUps) {
            let p = late.parts
            runQueueNanoseconds = p.runQueueNanoseconds + p.loopWork.runQueueNanoseconds
            throttledNanoseconds = p.throttledNanoseconds + p.loopWork.throttledNanoseconds
            blockedNanoseconds = p.loopWork.blockedNanoseconds + (p.loopWork.asleepNanoseconds ?? 0)
            slackNanoseconds = p.armedLateNanoseconds + p.timerSlackNanoseconds
            wakePathNanoseconds = p.interruptDeliveryNanoseconds + p.wakePathNanoseconds + p.returnPathNanoseconds
            loopWorkNanoseconds = p.loopWork.onCPUNanoseconds
            explained = late.explained
        }

        /// The causes by the counter's label, in the order the time passes: written once for ``byLabel`` and
        /// ``since(_:)``.
        private static var causes: [(label: String, time: WritableKeyPath<Self, UInt64>)] {
            [("slack", \.slackNanoseconds), ("wake_path", \.wakePathNanoseconds), ("run_queue", \.runQueueNanoseconds),
             ("throttled", \.throttledNanoseconds), ("blocked", \.blockedNanoseconds), ("loop_work", \.loopWorkNanoseconds)]
        }

        /// The causes as the counter labels them, in the order the time passes.
        public var byLabel: [(cause: String, nanoseconds: UInt64)] { Self.causes.map { ($0.label, self[keyPath: $0.time]) } }

        public var totalNanoseconds: UInt64 { byLabel.reduce(0) { $0 + $1.nanoseconds } }

        /// What was added since `before` (running totals only grow; a smaller one is a new loop's: all of it).
        public func since(_ before: Self) -> Self {
            func minus(_ a: UInt64, _ b: UInt64) -> UInt64 { a >= b ? a - b : a }
            var d = Self()
            for cause in Self.causes { d[keyPath: cause.time] = minus(self[keyPath: cause.time], before[keyPath: cause.time]) }
            d.explained = minus(explained, before.explained)
            return d
        }
    }

    /// The late wake-ups of a loop that the kernel view explains, and where their time went in all.
    public struct LateWakeUps: Codable, Sendable, Equatable {
        /// Late wake-ups (work due while the loop was asleep, called out later than the late threshold allows).
        public var count: UInt64 = 0
        /// Of those, the ones whose wake-up the kernel view shows (the rest: its time off the CPU is not in the
        /// trace: before the kernel view began, or lost).
        public var explained: UInt64 = 0
        /// The lateness of the explained ones, added.
        public var latenessNanoseconds: UInt64 = 0
        /// Their parts, added: ``LateWakeUpParts/totalNanoseconds`` equals ``latenessNanoseconds``.
        public var parts = LateWakeUpParts()
        /// Who held the CPU while they waited for one, longest first.
        public var culprits: [KernelCulprit] = []
        /// Explained wake-ups over a window with lost kernel records.
        public var incomplete: UInt64 = 0

        public init() {}
    }

    /// The kernel's view of one loop's thread, the same shape for every kind of loop (RunLoopCore, Foundation,
    /// SwiftNIO, any program's wait loops). Nil in a loop's summary when the trace has no kernel view of it.
    public struct KernelFacet: Codable, Sendable, Equatable {
        /// When the kernel view began to follow the thread; when that was after the loop's first event,
        /// ``coversWholeLoop`` is false and every figure here covers only the time since.
        public var followedSinceNanoseconds: UInt64 = 0
        public var coversWholeLoop = true
        /// The loop's busy time split (iterations: busy = wall − sleep), over the iterations the view covers.
        public var busy = KernelSplit()
        /// Busy time's on-CPU part ÷ the loop's wall time: the on-CPU share of its utilization.
        public var onCPUShare: Double = 0
        /// Time on the CPU of one iteration's busy time.
        public var onCPUPerIteration = DistributionSummary()
        /// Time on the CPU of one callout (of a SwiftNIO loop: one traced I/O event).
        public var onCPUPerCallout = DistributionSummary()
        /// Runnable → on a CPU at each of the loop's wake-ups (its wait ended), throttling included.
        public var runQueuePerWakeUp = DistributionSummary()
        public var lateWakeUps = LateWakeUps()
        /// Kernel records lost in windows overlapping the loop's: its kernel figures may undercount.
        public var lostRecordsAffecting: UInt64 = 0
        /// What this kind of loop cannot show from the kernel view (nil: everything).
        public var notAvailable: [String]?

        public init() {}

        public var affectedByLoss: Bool { lostRecordsAffecting > 0 }
    }

    /// Whether the trace has a kernel view, and what it holds: one status for the whole trace.
    public struct KernelView: Codable, Sendable, Equatable {
        /// `on` (the trace holds a kernel view), `not recorded`, or `not available` (rlctl tried and could not:
        /// ``unavailableReason`` says why).
        public var status: String
        public var unavailableReason: String?
        /// The processes followed, with the moment each began to be followed.
        public var processes: [Process] = []
        /// Threads the kernel view recorded times off the CPU of.
        public var threadsFollowed: UInt64 = 0
        /// kernel_off_cpu records in the trace, and the records the kernel recorder lost.
        public var records: UInt64 = 0
        public var lostRecords: UInt64 = 0
        /// Of the records, those whose switch-in reached no program of the probe, rebuilt from the scheduler's
        /// own counters (docs/kernel-view.md); known to the rlctl that recorded them, nil in a summary of the trace
        /// alone (the trace does not keep the count).
        public var rebuiltRecords: UInt64?
        /// Every loop's kernel figures together (nil without a kernel view): what check and compare read.
        public var overall: KernelFacet?

        public struct Process: Codable, Sendable, Equatable {
            public var pid: Int32
            public var command: String
            public var sinceNanoseconds: UInt64
        }

        public static let on = "on"
        public static let notRecorded = "not recorded"
        public static let notAvailable = "not available"

        public init(status: String) { self.status = status }
    }

    /// rlctl tried to record the kernel view and could not: the summary says "kernel view: not available — WHY"
    /// (a trace with a kernel view keeps it).
    public mutating func noteKernelViewUnavailable(_ reason: String) {
        guard kernel?.status != KernelView.on else { return }
        var view = KernelView(status: KernelView.notAvailable)
        view.unavailableReason = reason
        kernel = view
    }

    /// The recorder rebuilt `count` of the trace's records from the scheduler's counters: the status line says so.
    public mutating func noteKernelRecordsRebuilt(_ count: UInt64) {
        guard kernel?.status == KernelView.on else { return }
        kernel?.rebuiltRecords = count
    }

    /// The kernel view was not asked for (`--kernel off`): the summary says "kernel view: not recorded". A trace
    /// summarized without this says nothing of it, as summaries always did.
    public mutating func noteKernelViewNotRecorded() {
        guard kernel == nil else { return }
        kernel = KernelView(status: KernelView.notRecorded)
    }
}

extension TraceSummary.NotAvailable {
    /// What the kernel view cannot tell for each kind of loop: said in the loop's kernel facet.
    public static let kernelFoundation = ["late wake-ups and on-CPU per callout (a Foundation loop's trace has no callouts or fire dates)"]
    public static let kernelNIO = ["late wake-ups (NIO reports no task's due time; the probe's lateness is not split)",
                                   "an exact busy split: NIO counts its selector's own work between the wait and the tick as sleep, so time preempted there is in the split but not in the busy time (measured: the split about 8-10% over it beside a hog)"]
    public static let kernelWait = ["on-CPU per callout (from outside the program only its wait calls show)"]
}

/// Names for what the kernel view records.
enum KernelNames {
    /// A system call's name. One function, so that the table of names (TraceModel's SyscallNames, being written)
    /// replaces the number in one line.
    static func syscall(_ number: Int32) -> String { SyscallNames.name(number) }

    /// What a thread blocked in: its system call, else what blocking outside one means for its state.
    static func blockedIn(_ episode: TraceEvent.KernelOffCPU) -> String {
        if episode.syscall >= 0 { return syscall(episode.syscall) }
        switch episode.reason {
        case .diskSleep: return "page fault or I/O"
        case .sleeping: return "a sleep outside a system call"
        default: return "stopped or traced"
        }
    }
}

import TraceModel

extension TraceSummary.NotAvailable {
    /// Any program's loops (`rlctl record --any`) are seen through their wait calls alone: said once per report.
    public static let wait = [
        "callout-level figures for wait loops (which callout ran or stalled, timers, sources, wake-up latency: from outside the program only its wait calls show)",
    ]
}

extension TraceSummary {
    /// Any program's waits (`rlctl record --any`): the loops found in its wait calls (`wait_begin`/`wait_end`), and
    /// the threads that waited too rarely to be loops. Their figures are in no other section (they have no runs).
    public struct WaitSummary: Codable, Sendable, Equatable {
        /// Busiest first (by utilization, then by iterations).
        public var loops: [WaitLoopSummary]
        /// (thread, call family, target)s that waited fewer than ``rareWaitLimit`` times and less than once per
        /// second of the trace: a thread pool's idle wait, a one-off `poll` — listed apart, never mixed into loops.
        public var rareWaiters: [RareWaiter]
        /// Across every loop (rare waiters left out).
        public var overall: WaitTotals
        /// Wait sets several threads of a process waited on in turn (Go's netpoller, tokio's multi-threaded runtime),
        /// each as one loop with its threads (who are in ``loops`` too, one by one); nil when there is none.
        public var sets: [WaitSetSummary]? = nil
        /// Which mechanism recorded each process's waits (`record --any` falls back to the kernel where the wait
        /// interposer cannot reach); nil when the recording does not say (a trace summarized on its own).
        public var recordedBy: [ProcessRecorder]? = nil
        /// Wait ends whose begin is not in the trace (a flight-recorder ring overwrote it, or it was lost): left out.
        public var unmatchedEnds: UInt64
        /// What the wait calls cannot show, for every wait loop (said once in a report).
        public var notAvailable: [String]
        /// A (thread, call family, target) with fewer waits than this, and fewer than one per second of the trace, is
        /// a rare waiter rather than a loop.
        public static let rareWaitLimit: UInt64 = 10
    }

    /// One wait loop: a (thread, call family, target) that waited again and again — the family is epoll (`target`
    /// is the epoll descriptor) or poll/select (`target` is -1). An iteration runs from the end of one wait to the
    /// end of the next: busy is the next wait's begin − the previous wait's end, sleep the wait itself (a wait in
    /// another loop of the thread in between — a nested loop — is busy time for this one).
    public struct WaitLoopSummary: Codable, Sendable, Equatable {
        public var threadID: Int32
        /// From the thread's `wait_thread` (nil when it was lost).
        public var pid: Int32?
        public var ppid: Int32?
        public var process: String?
        public var thread: String?
        /// `epoll` or `poll/select`.
        public var family: String
        /// The epoll descriptor, -1 for poll and select.
        public var target: Int32
        /// Calls per libc function (`epoll_pwait` 1200).
        public var calls: [String: UInt64]
        /// Completed wait calls (non-blocking checks included).
        public var waits: UInt64
        /// Iterations with both ends in the trace (a chain broken by a loss starts again after it).
        public var iterations: UInt64
        public var iterationsPerSecond: Double
        /// First wait's begin to last wait's end.
        public var spanNanoseconds: UInt64
        public var busyNanoseconds: UInt64
        public var sleepNanoseconds: UInt64
        /// busy ÷ (busy + sleep) over the loop's observed span (gaps at losses left out).
        public var utilization: Double
        public var busyPerIteration: DistributionSummary
        /// One blocking wait (non-blocking checks are not sleeps).
        public var sleep: DistributionSummary
        public var wakeCauses: WakeCauses
        /// Sleep − requested timeout of waits that timed out with a timeout > 0 (clamped at 0).
        public var lateness: DistributionSummary
        /// Of those, how many woke later than the summary's late threshold.
        public var lateWakeUps: UInt64
        /// Blocking waits that were a millisecond rest: a whole 1 ms begun right after a longer whole-millisecond
        /// wait of the loop or its wait set timed out. The program rounded a deadline down to whole milliseconds
        /// and waits out the remainder, under a millisecond, as 1 ms (Go's netpoller): what was due then ran up to
        /// 1 ms late though no wait woke late, lateness wake lateness cannot show. Nil when there was none. Waits
        /// the kernel recorder sends in batches, thread by thread, pair up in whatever order they are read.
        public var millisecondRests: UInt64? = nil
        /// `ready` of blocking waits that returned events.
        public var readyPerWakeUp: DistributionSummary
        public var stalls: UInt64
        /// Worst first.
        public var worstStalls: [WaitStall]
        /// How often the iteration chain was broken (events lost on the thread, a begin or end missing): no
        /// busy or sleep was counted across those gaps.
        public var chainBreaks: UInt64
        /// Whether the thread was inside a wait of this loop when the trace ended.
        public var waitingAtEnd: Bool
        /// true when the thread was inside a wait of this loop when the recording began (`rlctl record --pid`
        /// attached to it then): that wait is not counted, and the first iteration runs from its end.
        public var waitingAtStart: Bool? = nil
        /// true when the thread was outside its waits when the recording began (`rlctl record --pid`): its first
        /// iteration counts from the attach (busy or parked since then; its earlier part is unknown).
        public var busyAtStart: Bool? = nil
        /// true when its last iteration had not ended at the end (a thread of a shared set, parked outside its wait
        /// while another held the loop): counted up to the thread's last return to a CPU, which the kernel view saw.
        public var lastIterationUnended: Bool? = nil
        /// For a thread whose wait set other threads of its process wait on too (``WaitSummary/sets``): the time it
        /// was blocked outside the wait (parked on a futex, sleeping) while they held the loop, which is not busy time
        /// (busy + sleep + parked = its span); nil for a set of its own.
        public var parkedNanoseconds: UInt64? = nil
        /// false when some parked time could not be told apart from busy time (no kernel view of those iterations):
        /// busy includes it then.
        public var parkedSeparated: Bool? = nil
        /// The other threads of its wait set (filled by the summary).
        public var sharedWith: [Int32]? = nil
        public var lostEventsAffecting: UInt64
        public var lossWindowsAffecting: UInt64
        /// The kernel's side of its busy time and wake-ups: nil when the trace has no kernel view of its thread.
        public var kernel: KernelFacet? = nil
        public var affectedByLoss: Bool { lostEventsAffecting > 0 || lossWindowsAffecting > 0 }

        /// `node (pid 4242) thread node, epoll fd 5`.
        public var name: String {
            WaitLoopSummary.loopName(process: process, pid: pid, thread: thread, threadID: threadID, family: family, target: target)
        }

        /// `node (pid 4242) thread node`; `thread 4242` when its `wait_thread` is not in the trace.
        public static func threadName(process: String?, pid: Int32?, thread: String?, threadID: Int32) -> String {
            guard let process, let pid else { return "thread \(threadID)" }
            return "\(process) (pid \(pid)) thread \(thread ?? String(threadID))"
        }

        /// `epoll fd 5`, or `poll/select`.
        static func targetName(family: String, target: Int32) -> String {
            family == WaitLoopSummary.epollFamily ? "epoll fd \(target)" : family
        }

        /// The name of a (thread, family, target), the same in every section that names one.
        static func loopName(process: String?, pid: Int32?, thread: String?, threadID: Int32, family: String, target: Int32) -> String {
            threadName(process: process, pid: pid, thread: thread, threadID: threadID) + ", " + targetName(family: family, target: target)
        }

        public static let epollFamily = "epoll"
        public static let pollFamily = "poll/select"
    }

    /// One recorded process and what recorded its wait calls.
    public struct ProcessRecorder: Codable, Sendable, Equatable {
        public enum Mechanism: String, Codable, Sendable {
            /// rlctl's wait interposer, preloaded into the process (LD_PRELOAD).
            case interposer = "wait interposer"
            /// The kernel's syscall tracepoints, through rlctl's kernel view: nothing loaded into the process.
            case kernel
        }

        public var pid: Int32
        public var process: String
        public var by: Mechanism
        /// Why the kernel recorded it rather than the interposer (`statically linked`), when that was a fallback.
        public var why: String?

        public init(pid: Int32, process: String, by: Mechanism, why: String? = nil) {
            self.pid = pid
            self.process = process
            self.by = by
            self.why = why
        }
    }

    /// An epoll descriptor that several threads of one process waited on, in turn or at once: one loop with several
    /// threads. Its figures add up its threads' (iterations, busy, sleep, parked time, stalls); `busyThreads` is how
    /// many of them were busy at once on average over its span (busy ÷ span), the share of one CPU it kept busy.
    public struct WaitSetSummary: Codable, Sendable, Equatable {
        public var pid: Int32
        public var process: String?
        public var target: Int32
        public var threads: [Int32]
        public var threadNames: [String]
        public var waits: UInt64
        public var iterations: UInt64
        /// First wait's begin to last wait's end, across its threads.
        public var spanNanoseconds: UInt64
        public var busyNanoseconds: UInt64
        public var sleepNanoseconds: UInt64
        public var parkedNanoseconds: UInt64
        public var busyThreads: Double
        /// false when some of its threads' parked time could not be told from busy time (no kernel view).
        public var parkedSeparated: Bool
        /// Its threads' millisecond rests (``WaitLoopSummary/millisecondRests``), and their blocking waits; both nil
        /// when there was none.
        public var millisecondRests: UInt64? = nil
        public var blockingWaits: UInt64? = nil
        public var stalls: UInt64
        /// Worst first, from every thread.
        public var worstStalls: [WaitStall]

        /// `gosrv (pid 4242), epoll fd 5`.
        public var name: String {
            "\(process ?? "pid \(pid)") (pid \(pid)), " + WaitLoopSummary.targetName(family: WaitLoopSummary.epollFamily, target: target)
        }
    }

    /// What ended each wait call of a loop. The four causes count blocking waits (timeout ≠ 0); non-blocking
    /// checks (timeout 0) are polls, counted apart.
    public struct WakeCauses: Codable, Sendable, Equatable {
        /// Returned events (ready > 0).
        public var ready: UInt64 = 0
        /// Returned 0 after its timeout.
        public var timedOut: UInt64 = 0
        /// Failed with EINTR (a signal).
        public var interrupted: UInt64 = 0
        /// Failed with another error.
        public var failed: UInt64 = 0
        /// Returned 0 with no timeout (the call should not): counted, never guessed into a cause.
        public var emptyWithoutTimeout: UInt64 = 0
        /// Calls with timeout 0, and how many of them found events.
        public var nonBlockingChecks: UInt64 = 0
        public var nonBlockingChecksReady: UInt64 = 0

        public var calls: UInt64 { blockingWaits + nonBlockingChecks }
        /// Calls with a timeout ≠ 0: sleeps.
        public var blockingWaits: UInt64 { ready + timedOut + interrupted + failed + emptyWithoutTimeout }

        /// `cause` ÷ every call (0 without calls).
        public func share(_ count: UInt64) -> Double { calls > 0 ? Double(count) / Double(calls) : 0 }

        mutating func add(_ other: WakeCauses) {
            ready += other.ready
            timedOut += other.timedOut
            interrupted += other.interrupted
            failed += other.failed
            emptyWithoutTimeout += other.emptyWithoutTimeout
            nonBlockingChecks += other.nonBlockingChecks
            nonBlockingChecksReady += other.nonBlockingChecksReady
        }
    }

    /// An iteration of a wait loop busier than the stall threshold: from `atNanoseconds` (the previous wait's end)
    /// for `busyNanoseconds`, until the thread waited again.
    public struct WaitStall: Codable, Sendable, Equatable {
        public var threadID: Int32
        public var pid: Int32?
        public var process: String?
        public var thread: String?
        public var family: String
        public var target: Int32
        /// The iteration's number in its loop.
        public var iteration: UInt64
        public var atNanoseconds: UInt64
        public var busyNanoseconds: UInt64
        /// The iteration's busy time on the CPU and where the rest went, when the kernel view followed its thread.
        public var kernel: KernelSplit? = nil

        /// The loop it stalled, as its heading names it.
        public var loopName: String {
            WaitLoopSummary.loopName(process: process, pid: pid, thread: thread, threadID: threadID, family: family, target: target)
        }
    }

    /// A (thread, call family, target) that waited too rarely to be a loop (``WaitSummary/rareWaitLimit``).
    public struct RareWaiter: Codable, Sendable, Equatable {
        public var threadID: Int32
        public var pid: Int32?
        public var process: String?
        public var thread: String?
        public var family: String
        public var target: Int32
        /// Completed waits.
        public var waits: UInt64
        public var sleepNanoseconds: UInt64
        /// Whether it was still waiting when the trace ended (a thread pool's idle wait usually is).
        public var waitingAtEnd: Bool

        public var name: String {
            WaitLoopSummary.loopName(process: process, pid: pid, thread: thread, threadID: threadID, family: family, target: target)
        }
    }

    /// Totals over every wait loop.
    public struct WaitTotals: Codable, Sendable, Equatable {
        public var loops: UInt64
        public var iterations: UInt64
        public var busyPerIteration: DistributionSummary
        public var sleep: DistributionSummary
        public var lateness: DistributionSummary
        public var lateWakeUps: UInt64
        public var readyPerWakeUp: DistributionSummary
        public var wakeCauses: WakeCauses
        /// Over loops with at least one iteration (a loop that never completed one has no utilization).
        public var utilizationMean: Double
        public var utilizationMax: Double
        /// The name of the busiest loop (empty without iterations).
        public var busiestLoop: String
        public var stalls: UInt64
        public var worstStalls: [WaitStall]
    }
}

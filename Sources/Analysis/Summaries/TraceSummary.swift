import TraceModel

/// Everything `rlctl summarize` reports about a trace, per loop and overall. Codable: `--format json` writes it
/// as is, and `rlctl check` reads budgets' metrics from it.
public struct TraceSummary: Codable, Sendable, Equatable {
    public var health: Health
    public var overall: LoopSummary
    public var loops: [LoopSummary]
    /// Per timer, the worst first.
    public var timers: [TimerSummary]
    public var stallThresholdNanoseconds: UInt64
    public var lateThresholdNanoseconds: UInt64
    /// SwiftNIO event loops, when the trace has some (their figures are not in ``overall``: they have no runs).
    public var nio: NIOSummary? = nil
    /// Foundation RunLoops, when the trace has some (they are in ``loops`` and ``overall`` too).
    public var foundation: FoundationSummary? = nil
    /// Any program's wait loops (`rlctl record --any`), when the trace has wait calls (their figures are in no
    /// other section: they have no runs).
    public var waits: WaitSummary? = nil
    /// Each loop's busy share and each timer's lateness over time, when the summary was asked for them
    /// (``TraceSummarizer/Options/timelineBuckets``; `rlctl report` draws them).
    public var timeline: Timeline? = nil
    /// The stalls and hangs the traced loops reported themselves (`loop_stall`, `loop_hang`), when the trace has
    /// some.
    public var reported: ReportedStalls? = nil
    /// How far the loop fell behind `rlctl run`'s block producers, as they counted it themselves (not in the trace):
    /// set by `rlctl run` for a workload with blocks.
    public var blockBacklog: BlockBacklog? = nil
    /// Whether the trace holds the kernel's view of the loops' threads (`rlctl run|record --kernel`), what it holds,
    /// and every loop's kernel figures together; nil when it has none and nobody said why (a trace recorded without
    /// it reads as before).
    public var kernel: KernelView? = nil
    /// Every loop of every kind in one list, with the figures all kinds have under one name (``LoopOfAnyKind``):
    /// for scripts that do not care which kind a loop is. nil in summaries written before it existed.
    public var allLoops: [LoopOfAnyKind]? = nil
    /// Field of ``allLoops`` → kind → why loops of that kind have no figure for it (each reason once).
    public var allLoopsNotAvailable: [String: [String: String]]? = nil
    /// What the text summary opens with (``SummaryVerdict``): one line per finding, empty when nothing was found.
    /// Written with the JSON; nil in summaries read back from files written before it existed.
    public var verdict: [String]? = nil

    public struct BlockBacklog: Codable, Sendable, Equatable {
        /// The most blocks each producer may have performed that the loop has not run yet.
        public var limitPerProducer: Int
        /// The most blocks performed and not run yet at any moment, every producer's together.
        public var mostQueued: Int
        /// How many times a producer reached its limit and waited for the loop, and how long in all.
        public var heldBack: UInt64
        public var heldBackNanoseconds: UInt64

        public init(limitPerProducer: Int, mostQueued: Int, heldBack: UInt64, heldBackNanoseconds: UInt64) {
            self.limitPerProducer = limitPerProducer
            self.mostQueued = mostQueued
            self.heldBack = heldBack
            self.heldBackNanoseconds = heldBackNanoseconds
        }

        /// One line: whether the producers were held back, and the most blocks the loop had queued.
        public var text: String {
            let backlog = "backlog at most \(mostQueued) blocks (limit \(limitPerProducer) per producer)"
            guard heldBack > 0 else { return "block producers never held back: \(backlog)" }
            return "block producers held back \(heldBack) times (total \(formatNanoseconds(heldBackNanoseconds))) — the loop could not keep up: \(backlog)"
        }
    }

    public struct Health: Codable, Sendable, Equatable {
        /// What the reader counted (events read and lost, packets lost, the loss windows), as it counted it.
        public var trace: TraceHealth
        /// Runs still open when the trace ended (a killed program, a recording stopped early, a buffer that filled up
        /// for good). Optional fields here and below: summaries written before they existed still load.
        public var runsCutOff: UInt64?
        /// Runs whose end event was lost inside the trace (seen because another run began on an idle loop).
        public var runsEndLost: UInt64?
        /// Runs already under way at the trace's first event (a flight-recorder ring dropped their begin).
        public var runsBegunBeforeTrace: UInt64?
        /// The last event of the loop whose run was cut off last.
        public var cutOffAtNanoseconds: UInt64?
        /// The first event of any loop: where times in the report are counted from (`+1.20s`).
        public var firstEventNanoseconds: UInt64?

        public init(_ trace: TraceHealth) {
            self.trace = trace
        }

        public init(eventsRead: UInt64, eventsLost: UInt64, packetsLost: UInt64, lossWindows: [TraceHealth.LossWindow]) {
            trace = TraceHealth()
            trace.eventsRead = eventsRead
            trace.eventsLost = eventsLost
            trace.packetsLost = packetsLost
            trace.lossWindows = lossWindows
        }

        public var eventsRead: UInt64 {
            get { trace.eventsRead }
            set { trace.eventsRead = newValue }
        }
        public var eventsLost: UInt64 {
            get { trace.eventsLost }
            set { trace.eventsLost = newValue }
        }
        public var packetsLost: UInt64 {
            get { trace.packetsLost }
            set { trace.packetsLost = newValue }
        }
        public var lossWindows: [TraceHealth.LossWindow] {
            get { trace.lossWindows }
            set { trace.lossWindows = newValue }
        }

        /// No events or packets lost.
        public var complete: Bool { trace.isComplete }
        /// Some run's start or end is not in the trace: run-level figures cover only the part that is.
        public var runsIncomplete: Bool { incompleteRunCount > 0 }
        /// Runs whose begin or end is not in the trace (the `trace.runs_incomplete` metric, and `check`'s count).
        public var incompleteRunCount: UInt64 { (runsCutOff ?? 0) + (runsEndLost ?? 0) + (runsBegunBeforeTrace ?? 0) }

        // The JSON keeps the shape summaries have always had: the reader's counts beside the run counts, and loss
        // windows with `fromNanoseconds`/`toNanoseconds`.
        private enum CodingKeys: String, CodingKey {
            case eventsRead, eventsLost, packetsLost, lossWindows
            case runsCutOff, runsEndLost, runsBegunBeforeTrace, cutOffAtNanoseconds, firstEventNanoseconds
            case eventsSkipped, recordingCutOff, damage, writeFailure
        }

        private struct EncodedLossWindow: Codable {
            var stream: String
            var fromNanoseconds: UInt64
            var toNanoseconds: UInt64
            var events: UInt64
        }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let windows = try c.decode([EncodedLossWindow].self, forKey: .lossWindows).map {
                TraceHealth.LossWindow(stream: $0.stream, from: $0.fromNanoseconds, to: $0.toNanoseconds, events: $0.events)
            }
            self.init(eventsRead: try c.decode(UInt64.self, forKey: .eventsRead), eventsLost: try c.decode(UInt64.self, forKey: .eventsLost),
                      packetsLost: try c.decode(UInt64.self, forKey: .packetsLost), lossWindows: windows)
            runsCutOff = try c.decodeIfPresent(UInt64.self, forKey: .runsCutOff)
            runsEndLost = try c.decodeIfPresent(UInt64.self, forKey: .runsEndLost)
            runsBegunBeforeTrace = try c.decodeIfPresent(UInt64.self, forKey: .runsBegunBeforeTrace)
            cutOffAtNanoseconds = try c.decodeIfPresent(UInt64.self, forKey: .cutOffAtNanoseconds)
            firstEventNanoseconds = try c.decodeIfPresent(UInt64.self, forKey: .firstEventNanoseconds)
            trace.eventsSkipped = try c.decodeIfPresent(UInt64.self, forKey: .eventsSkipped) ?? 0
            trace.recordingCutOff = try c.decodeIfPresent(Bool.self, forKey: .recordingCutOff) ?? false
            trace.damage = try c.decodeIfPresent([String].self, forKey: .damage) ?? []
            trace.writeFailure = try c.decodeIfPresent(String.self, forKey: .writeFailure)
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(eventsRead, forKey: .eventsRead)
            try c.encode(eventsLost, forKey: .eventsLost)
            try c.encode(packetsLost, forKey: .packetsLost)
            try c.encode(lossWindows.map {
                EncodedLossWindow(stream: $0.stream, fromNanoseconds: $0.from, toNanoseconds: $0.to, events: $0.events)
            }, forKey: .lossWindows)
            try c.encodeIfPresent(runsCutOff, forKey: .runsCutOff)
            try c.encodeIfPresent(runsEndLost, forKey: .runsEndLost)
            try c.encodeIfPresent(runsBegunBeforeTrace, forKey: .runsBegunBeforeTrace)
            try c.encodeIfPresent(cutOffAtNanoseconds, forKey: .cutOffAtNanoseconds)
            try c.encodeIfPresent(firstEventNanoseconds, forKey: .firstEventNanoseconds)
            // Written only when there were some, so that summaries of traces this rlctl reads whole stay as they were.
            if trace.eventsSkipped > 0 { try c.encode(trace.eventsSkipped, forKey: .eventsSkipped) }
            if trace.recordingCutOff { try c.encode(true, forKey: .recordingCutOff) }
            if !trace.damage.isEmpty { try c.encode(trace.damage, forKey: .damage) }
            try c.encodeIfPresent(trace.writeFailure, forKey: .writeFailure)
        }
    }

    public struct LoopSummary: Codable, Sendable, Equatable {
        /// nil for the overall figures.
        public var loopID: UInt64?
        /// The adapter that traces this loop (`foundation`); nil for a RunLoopCore loop.
        public var adapter: String?
        /// Figures the adapter cannot see: reported as not available, never as zero (nil: everything is seen).
        public var notAvailable: [String]?
        public var threadID: Int32?
        /// Its process, when the trace carries process ids (nil in summaries written before it was kept).
        public var processID: Int32?
        public var name: String?
        /// Calls of `Loop.run`, nested ones included (every run, including ones whose begin or end is missing).
        public var runs: UInt64 = 0
        /// How runs ended: the loop's results (`timed_out`, `finished`, `stopped`, `handled_source`), `did_not_end`
        /// (still running when the trace ended) and `end_lost` (its end event was lost).
        public var results: [String: UInt64] = [:]
        /// Runs started inside a callout of an outer run.
        public var nestedRuns: UInt64?
        /// Runs under way before the loop's first event in the trace (their begin is not in it).
        public var runsBegunBeforeTrace: UInt64?
        /// When a run did not end in the trace: the loop's last event, where its figures stop.
        public var cutOffAtNanoseconds: UInt64?
        public var iterations: UInt64 = 0
        public var wallNanoseconds: UInt64 = 0
        public var busyNanoseconds: UInt64 = 0
        public var sleepNanoseconds: UInt64 = 0
        /// busy ÷ wall (Node's event-loop utilization).
        public var utilization: Double = 0
        public var busyPerIteration = DistributionSummary()
        public var sleep = DistributionSummary()
        public var wakeLatency = WakeLatency()
        public var timerLateness = DistributionSummary()
        public var timerBeyondTolerance = DistributionSummary()
        public var timerFirings: UInt64 = 0
        /// Firings of timers with a tolerance (only they have a window to be within).
        public var timerFiringsWithTolerance: UInt64?
        public var timerMissed: UInt64 = 0
        public var timerLateFirings: UInt64 = 0
        /// Share of firings with a tolerance that were within [fire date, fire date + tolerance].
        public var timerWithinTolerance: Double = 1
        /// What was running when each late firing came due, and how often.
        public var lateFiringCauses: [String: UInt64] = [:]
        public var wakeReasons: [String: UInt64] = [:]
        /// Work pending at each wake-up (due timers, signalled sources, ready descriptors, queued blocks).
        public var backlogAtWakeUp = DistributionSummary()
        public var calloutDurations: [String: DistributionSummary] = [:]
        public var slowestCallouts: [Callout] = []
        public var stalls: UInt64 = 0
        public var worstStalls: [Stall] = []
        /// Events lost in windows that overlap this loop's activity: its figures may undercount.
        public var lostEventsAffecting: UInt64 = 0
        /// Loss windows overlapping it (a window of whole lost packets has no event count).
        public var lossWindowsAffecting: UInt64?
        /// The kernel's side of its busy time, callouts and late wake-ups: nil when the trace has no kernel view of
        /// its thread.
        public var kernel: KernelFacet?
        /// Whether any of its figures covers a window with losses.
        public var affectedByLoss: Bool { lostEventsAffecting > 0 || (lossWindowsAffecting ?? 0) > 0 }

        /// The durations of one kind of callout (empty when none ran).
        public func calloutDuration(of kind: CalloutKind) -> DistributionSummary {
            calloutDurations[kind.name] ?? DistributionSummary()
        }
    }

    public struct WakeLatency: Codable, Sendable, Equatable {
        /// Timer due → callout start: the timer lateness (``LoopSummary/timerLateness``), the same histogram.
        public var timer = DistributionSummary()
        /// Source first signal → perform.
        public var source = DistributionSummary()
        /// Block enqueue → run.
        public var block = DistributionSummary()
        /// Port send → handler.
        public var port = DistributionSummary()
        /// Actor job enqueue → run (a loop as an executor); optional so that summaries saved before jobs were
        /// traced still decode.
        public var job: DistributionSummary?

        /// Job latency, empty when there is none.
        public var jobOrEmpty: DistributionSummary { job ?? DistributionSummary() }
    }

    public struct Callout: Codable, Sendable, Equatable {
        public var label: String
        public var kind: String
        public var durationNanoseconds: UInt64
        public var atNanoseconds: UInt64
        /// Its time on the CPU and where the rest went, when the kernel view followed its thread.
        public var kernel: KernelSplit? = nil

        /// What the slowest callouts are ranked by: time on the CPU when the kernel view shows it, else wall time.
        public var rankNanoseconds: UInt64 { kernel?.onCPUNanoseconds ?? durationNanoseconds }
    }

    public struct Stall: Codable, Sendable, Equatable {
        public var loopID: UInt64
        public var iteration: UInt64
        public var atNanoseconds: UInt64
        public var busyNanoseconds: UInt64
        /// The longest callout of the iteration (or "loop overhead" when none).
        public var cause: String
        /// The trace ended inside this iteration (a snapshot during the stall, a killed program): its busy time is
        /// what the trace holds, a lower bound. Nil when it ended in the trace.
        public var cutOff: Bool? = nil
        /// The iteration's busy time on the CPU and where the rest went, when the kernel view followed its thread.
        public var kernel: KernelSplit? = nil
    }

    public struct TimerSummary: Codable, Sendable, Equatable {
        public var timerID: UInt64
        public var label: String
        public var loopID: UInt64
        public var firings: UInt64
        public var missed: UInt64
        public var toleranceNanoseconds: UInt64
        public var intervalNanoseconds: UInt64
        public var lateness: DistributionSummary
        public var beyondTolerance: DistributionSummary
        public var withinTolerance: Double
        /// Trend of lateness over the run (ns of extra lateness per second of run): positive means drifting later.
        public var driftNanosecondsPerSecond: Double
        public var lateFirings: UInt64
        public var lateFiringCauses: [String: UInt64]
        public var lostEventsAffecting: UInt64
        public var lossWindowsAffecting: UInt64?
        public var affectedByLoss: Bool { lostEventsAffecting > 0 || (lossWindowsAffecting ?? 0) > 0 }
    }
}

extension TraceSummary.LoopSummary {
    enum CodingKeys: String, CodingKey {
        case loopID, adapter, notAvailable, threadID, name, runs, results, nestedRuns, runsBegunBeforeTrace, cutOffAtNanoseconds,
             iterations, wallNanoseconds, busyNanoseconds, sleepNanoseconds, utilization, busyPerIteration, sleep, wakeLatency,
             timerLateness, timerBeyondTolerance, timerFirings, timerFiringsWithTolerance, timerMissed, timerLateFirings,
             timerWithinTolerance, lateFiringCauses, wakeReasons, backlogAtWakeUp, calloutDurations, slowestCallouts, stalls,
             worstStalls, lostEventsAffecting, lossWindowsAffecting, kernel
    }

    /// What a loop seen through its activities alone (a Foundation loop's observer) cannot see: left out of its
    /// JSON, where an empty figure or a 0 would read as a measurement (``notAvailable`` says what is missing).
    static let unseenThroughActivities: Set<CodingKeys> = [
        .wakeLatency, .timerLateness, .timerBeyondTolerance, .timerFirings, .timerFiringsWithTolerance, .timerMissed,
        .timerLateFirings, .timerWithinTolerance, .lateFiringCauses, .wakeReasons, .backlogAtWakeUp, .calloutDurations,
        .slowestCallouts,
    ]

    /// Sets those figures to what the JSON's missing keys read back as: a Foundation loop's summary says nothing
    /// of them in memory either.
    mutating func forgetWhatActivitiesDoNotShow() {
        wakeLatency = TraceSummary.WakeLatency(); timerLateness = DistributionSummary(); timerBeyondTolerance = DistributionSummary()
        timerFirings = 0; timerFiringsWithTolerance = nil; timerMissed = 0; timerLateFirings = 0; timerWithinTolerance = 1
        lateFiringCauses = [:]; wakeReasons = [:]; backlogAtWakeUp = DistributionSummary(); calloutDurations = [:]
        slowestCallouts = []
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let hidden = adapter == LoopAdapter.foundation.description ? Self.unseenThroughActivities : []
        func put<T: Encodable>(_ value: T?, _ key: CodingKeys) throws {
            if !hidden.contains(key) { try c.encodeIfPresent(value, forKey: key) }
        }
        try put(loopID, .loopID); try put(adapter, .adapter); try put(notAvailable, .notAvailable)
        try put(threadID, .threadID); try put(name, .name); try put(runs, .runs); try put(results, .results)
        try put(nestedRuns, .nestedRuns); try put(runsBegunBeforeTrace, .runsBegunBeforeTrace)
        try put(cutOffAtNanoseconds, .cutOffAtNanoseconds); try put(iterations, .iterations)
        try put(wallNanoseconds, .wallNanoseconds); try put(busyNanoseconds, .busyNanoseconds)
        try put(sleepNanoseconds, .sleepNanoseconds); try put(utilization, .utilization)
        try put(busyPerIteration, .busyPerIteration); try put(sleep, .sleep); try put(wakeLatency, .wakeLatency)
        try put(timerLateness, .timerLateness); try put(timerBeyondTolerance, .timerBeyondTolerance)
        try put(timerFirings, .timerFirings); try put(timerFiringsWithTolerance, .timerFiringsWithTolerance)
        try put(timerMissed, .timerMissed); try put(timerLateFirings, .timerLateFirings)
        try put(timerWithinTolerance, .timerWithinTolerance); try put(lateFiringCauses, .lateFiringCauses)
        try put(wakeReasons, .wakeReasons); try put(backlogAtWakeUp, .backlogAtWakeUp)
        try put(calloutDurations, .calloutDurations); try put(slowestCallouts, .slowestCallouts)
        try put(stalls, .stalls); try put(worstStalls, .worstStalls); try put(lostEventsAffecting, .lostEventsAffecting)
        try put(lossWindowsAffecting, .lossWindowsAffecting); try put(kernel, .kernel)
    }

    /// Keys a summary leaves out (a Foundation loop's unseen figures) read as their defaults.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        func get<T: Decodable>(_ key: CodingKeys, _ fallback: T) throws -> T { try c.decodeIfPresent(T.self, forKey: key) ?? fallback }
        loopID = try c.decodeIfPresent(UInt64.self, forKey: .loopID)
        adapter = try c.decodeIfPresent(String.self, forKey: .adapter)
        notAvailable = try c.decodeIfPresent([String].self, forKey: .notAvailable)
        threadID = try c.decodeIfPresent(Int32.self, forKey: .threadID)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        runs = try get(.runs, runs); results = try get(.results, results)
        nestedRuns = try c.decodeIfPresent(UInt64.self, forKey: .nestedRuns)
        runsBegunBeforeTrace = try c.decodeIfPresent(UInt64.self, forKey: .runsBegunBeforeTrace)
        cutOffAtNanoseconds = try c.decodeIfPresent(UInt64.self, forKey: .cutOffAtNanoseconds)
        iterations = try get(.iterations, iterations); wallNanoseconds = try get(.wallNanoseconds, wallNanoseconds)
        busyNanoseconds = try get(.busyNanoseconds, busyNanoseconds); sleepNanoseconds = try get(.sleepNanoseconds, sleepNanoseconds)
        utilization = try get(.utilization, utilization); busyPerIteration = try get(.busyPerIteration, busyPerIteration)
        sleep = try get(.sleep, sleep); wakeLatency = try get(.wakeLatency, wakeLatency)
        timerLateness = try get(.timerLateness, timerLateness); timerBeyondTolerance = try get(.timerBeyondTolerance, timerBeyondTolerance)
        timerFirings = try get(.timerFirings, timerFirings)
        timerFiringsWithTolerance = try c.decodeIfPresent(UInt64.self, forKey: .timerFiringsWithTolerance)
        timerMissed = try get(.timerMissed, timerMissed); timerLateFirings = try get(.timerLateFirings, timerLateFirings)
        timerWithinTolerance = try get(.timerWithinTolerance, timerWithinTolerance)
        lateFiringCauses = try get(.lateFiringCauses, lateFiringCauses); wakeReasons = try get(.wakeReasons, wakeReasons)
        backlogAtWakeUp = try get(.backlogAtWakeUp, backlogAtWakeUp); calloutDurations = try get(.calloutDurations, calloutDurations)
        slowestCallouts = try get(.slowestCallouts, slowestCallouts); stalls = try get(.stalls, stalls)
        worstStalls = try get(.worstStalls, worstStalls); lostEventsAffecting = try get(.lostEventsAffecting, lostEventsAffecting)
        lossWindowsAffecting = try c.decodeIfPresent(UInt64.self, forKey: .lossWindowsAffecting)
        kernel = try c.decodeIfPresent(TraceSummary.KernelFacet.self, forKey: .kernel)
    }
}

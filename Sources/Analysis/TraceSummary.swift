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

    public struct Health: Codable, Sendable, Equatable {
        public var eventsRead: UInt64
        public var eventsLost: UInt64
        public var packetsLost: UInt64
        public var lossWindows: [LossWindow]
        public var complete: Bool { eventsLost == 0 && packetsLost == 0 }

        public struct LossWindow: Codable, Sendable, Equatable {
            public var stream: String
            public var fromNanoseconds: UInt64
            public var toNanoseconds: UInt64
            public var events: UInt64
        }
    }

    public struct LoopSummary: Codable, Sendable, Equatable {
        /// nil for the overall figures.
        public var loopID: UInt64?
        public var threadID: Int32?
        public var name: String?
        public var runs: UInt64 = 0
        public var results: [String: UInt64] = [:]
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
        public var timerMissed: UInt64 = 0
        public var timerLateFirings: UInt64 = 0
        /// Share of firings within [fire date, fire date + tolerance].
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
    }

    public struct WakeLatency: Codable, Sendable, Equatable {
        /// Timer due → callout start.
        public var timer = DistributionSummary()
        /// Source first signal → perform.
        public var source = DistributionSummary()
        /// Block enqueue → run.
        public var block = DistributionSummary()
        /// Port send → handler.
        public var port = DistributionSummary()
    }

    public struct Callout: Codable, Sendable, Equatable {
        public var label: String
        public var kind: String
        public var durationNanoseconds: UInt64
        public var atNanoseconds: UInt64
    }

    public struct Stall: Codable, Sendable, Equatable {
        public var loopID: UInt64
        public var iteration: UInt64
        public var atNanoseconds: UInt64
        public var busyNanoseconds: UInt64
        /// The longest callout of the iteration (or "loop overhead" when none).
        public var cause: String
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
    }
}

import TraceModel

extension TraceSummary {
    /// Figures an adapter cannot see, named in every rendering instead of being shown as zero.
    public enum NotAvailable {
        /// SwiftNIO reports ticks, not what ran in them: only traced channels' I/O has names.
        public static let nio = [
            "callout names (other than traced channels' I/O)",
            "per-task lateness (NIO does not report it; see the lateness probe)",
            "wake-up reasons",
        ]
        /// A CFRunLoop observer sees the six activities only.
        public static let foundation = [
            "callout-level figures (durations, slowest callouts, stall causes)",
            "timers (firings, lateness) and wake-up latencies",
            "wake-up reasons and the work pending at each",
            "how runs ended",
        ]
        /// A SwiftNIO loop without traced channels: its I/O handling is inside NIO's sleep time.
        public static let nioIO = "I/O handling time (not measured: it counts as sleep; add RunLoopNIO's channel handler)"
    }

    /// The SwiftNIO event loops of the trace (`loop_adapted` adapter nio): per loop, per group and overall.
    public struct NIOSummary: Codable, Sendable, Equatable {
        public var loops: [NIOLoopSummary]
        /// Per `MultiThreadedEventLoopGroup`, in order of their first loop.
        public var groups: [NIOTotals]
        /// Across every NIO loop.
        public var overall: NIOTotals
        /// What NIO gives no data for, in any loop.
        public var notAvailable: [String]
    }

    /// One SwiftNIO event loop. An iteration k is the time from tick k−1's end to tick k's end: the I/O handled
    /// before tick k (`nio_io` of traced channels), then its task phase; what is left of NIO's sleep time is sleep.
    public struct NIOLoopSummary: Codable, Sendable, Equatable {
        public var loopID: UInt64
        public var threadID: Int32
        /// Its process, when the trace carries process ids (nil in summaries written before it was kept).
        public var processID: Int32? = nil
        public var name: String?
        public var groupID: UInt64
        public var ticks: UInt64
        public var ticksPerSecond: Double
        public var tasks: UInt64
        /// Tasks run per tick (a count, not a duration).
        public var tasksPerTick: DistributionSummary
        /// The task phase of a tick (what `NIOEventLoopTickInfo` covers).
        public var tickDuration: DistributionSummary
        /// Whether any traced channel reported I/O on this loop; when not, I/O handling counts as sleep.
        public var ioMeasured: Bool
        /// I/O handling time of traced channels (nil when not measured).
        public var ioNanoseconds: UInt64?
        /// One I/O event's handling (nil when not measured).
        public var ioDuration: DistributionSummary?
        public var busyNanoseconds: UInt64
        public var sleepNanoseconds: UInt64
        /// busy ÷ (busy + sleep) over the loop's traced iterations.
        public var utilization: Double
        public var busyPerIteration: DistributionSummary
        public var sleep: DistributionSummary
        public var stalls: UInt64
        /// Worst first; `iteration` is the tick's number, `cause` the longest I/O event or "tasks (N)".
        public var worstStalls: [Stall]
        public var probe: ProbeSummary?
        public var notAvailable: [String]
        /// Events lost in windows overlapping this loop's activity, and those windows: its figures may undercount.
        public var lostEventsAffecting: UInt64
        public var lossWindowsAffecting: UInt64
        /// The kernel's side of its busy time, I/O events and wake-ups: nil when the trace has no kernel view of it.
        public var kernel: KernelFacet? = nil
        public var affectedByLoss: Bool { lostEventsAffecting > 0 || lossWindowsAffecting > 0 }
    }

    /// Totals over several NIO loops (a group, or all of them).
    public struct NIOTotals: Codable, Sendable, Equatable {
        /// nil for the overall totals.
        public var groupID: UInt64?
        public var loopIDs: [UInt64]
        public var ticks: UInt64
        /// The loops' ticks per second, added.
        public var ticksPerSecond: Double
        public var tasksPerTick: DistributionSummary
        public var tickDuration: DistributionSummary
        public var busyPerIteration: DistributionSummary
        public var sleep: DistributionSummary
        public var utilizationMean: Double
        public var utilizationMax: Double
        public var busiestLoopID: UInt64
        public var stalls: UInt64
        public var worstStalls: [Stall]
        /// Probe lateness of all loops with a probe (nil without one).
        public var probeLateness: DistributionSummary?
    }

    /// The lateness probe: a task it schedules itself, so a figure of the probe, and what the probe cost.
    public struct ProbeSummary: Codable, Sendable, Equatable {
        public var firings: UInt64
        public var firingsPerSecond: Double
        /// Start − scheduled time of the probe's own task.
        public var lateness: DistributionSummary
        /// How long the probe's task ran (its own cost on the loop).
        public var cost: DistributionSummary
    }

    /// The Foundation RunLoops of the trace (`loop_adapted` adapter foundation); their loops are in ``loops`` too.
    public struct FoundationSummary: Codable, Sendable, Equatable {
        public var loopIDs: [UInt64]
        /// The Foundation loops' figures added (as ``overall`` adds every loop's).
        public var overall: LoopSummary
        public var utilizationMax: Double
        public var busiestLoopID: UInt64
        public var notAvailable: [String]
    }
}

import TraceModel

/// The metric names budgets and comparisons use, and how to read each from a summary.
public enum Metric {
    /// What a metric's number means, which decides how thresholds are written and checked.
    public enum Unit: String, Sendable {
        /// Nanoseconds: thresholds need a unit (`2ms`).
        case duration
        /// A fraction from 0 to 1 (`0.8` or `80%`).
        case ratio
        /// A count (a plain whole number).
        case count
        /// Nanoseconds of lateness gained per second of run (drift); thresholds need a unit, read per second.
        case rate
    }

    public struct Definition: Sendable {
        public let name: String
        public let unit: Unit
        public let help: String
        /// Whether a bigger value is worse (for comparisons).
        public let higherIsWorse: Bool
        /// Whether the summary has the figure at all (a distribution with values, a loop that ran): a budget must
        /// never pass on a figure that is not there, such as the p99 of a latency nothing measured.
        var hasData: @Sendable (TraceSummary) -> Bool = { _ in true }
        /// Why a trace lacks the figure, when that is simpler than "no data" (no NIO loop in it at all).
        var noDataReason: String? = nil
        /// The distribution a statistic is read from (`timer.lateness.p99`: the timer lateness), for pages that draw
        /// it; nil for other metrics.
        public var distribution: (@Sendable (TraceSummary) -> DistributionSummary)? = nil
        let read: @Sendable (TraceSummary) -> Double
    }

    static let statistics = ["min", "p50", "p90", "p99", "p99.9", "max", "mean"]

    private static func distribution(_ prefix: String, _ help: String, _ path: @escaping @Sendable (TraceSummary) -> DistributionSummary) -> [Definition] {
        statistics.map { stat in
            Definition(name: "\(prefix).\(stat)", unit: .duration, help: "\(help) (\(stat))", higherIsWorse: true,
                       hasData: { path($0).count > 0 }, distribution: path) {
                path($0).value(of: stat) ?? 0
            }
        }
    }

    private static func count(_ name: String, _ help: String, _ read: @escaping @Sendable (TraceSummary) -> UInt64) -> Definition {
        Definition(name: name, unit: .count, help: help, higherIsWorse: true) { Double(read($0)) }
    }

    static let noNIOLoop = "no NIO loop in the trace"
    static let noRunLoop = "no RunLoopCore, Foundation or wait loop in the trace; NIO loops have nio.stalls.*"
    static let noFoundationLoop = "no Foundation loop in the trace"
    static let noLoopRuns = "no RunLoopCore or Foundation loop in the trace; NIO loops have nio.*, wait loops wait.*"
    static let noWaitLoop = "no wait loop in the trace"
    static let noKernelView = "no kernel view in the trace (record with --kernel on: rlctl doctor says what it needs)"

    /// A metric of the kernel view (`kernel.*`): without one it has no data, whatever its type; `compare` judges it
    /// only between sides that both have it.
    private static func kernel(_ definitions: [Definition]) -> [Definition] {
        definitions.map { d in
            Definition(name: d.name, unit: d.unit, help: d.help, higherIsWorse: d.higherIsWorse,
                       hasData: { $0.kernel?.overall != nil && d.hasData($0) }, noDataReason: noKernelView, distribution: d.distribution, read: d.read)
        }
    }

    /// Whether `name` is a metric of the kernel view.
    public static func isKernel(_ name: String) -> Bool { name.hasPrefix("kernel.") }

    /// The kernel metrics: every loop's kernel figures together (``TraceSummary/KernelView/overall``).
    private static var kernelMetrics: [Definition] {
        @Sendable func facet(_ s: TraceSummary) -> TraceSummary.KernelFacet { s.kernel?.overall ?? TraceSummary.KernelFacet() }
        @Sendable func busy(_ s: TraceSummary) -> UInt64 {
            let b = facet(s).busy
            return b.onCPUNanoseconds + b.runQueueNanoseconds + b.throttledNanoseconds + b.blockedNanoseconds
        }
        @Sendable func share(_ s: TraceSummary, _ part: UInt64) -> Double { busy(s) > 0 ? Double(part) / Double(busy(s)) : 0 }
        var list = kernel(distribution("kernel.oncpu_per_callout", "time on the CPU of one callout: its wall time minus its time off the CPU") {
            facet($0).onCPUPerCallout
        })
        list += kernel(distribution("kernel.oncpu_per_iteration", "time on the CPU of one iteration's busy time") { facet($0).onCPUPerIteration })
        list += kernel(distribution("kernel.run_queue_per_wakeup", "runnable → on a CPU at a loop's wake-up (throttling included)") {
            facet($0).runQueuePerWakeUp
        })
        list += kernel([
            Definition(name: "kernel.oncpu_share", unit: .ratio, help: "the loops' busy time on the CPU ÷ their wall time (utilization's on-CPU part)",
                       higherIsWorse: true, hasData: { busy($0) > 0 }) { facet($0).onCPUShare },
            Definition(name: "kernel.run_queue", unit: .duration, help: "busy time spent waiting for a CPU (not throttled), all loops",
                       higherIsWorse: true) { Double(facet($0).busy.runQueueNanoseconds) },
            Definition(name: "kernel.run_queue_share", unit: .ratio, help: "busy time waiting for a CPU ÷ busy time", higherIsWorse: true,
                       hasData: { busy($0) > 0 }) { share($0, facet($0).busy.runQueueNanoseconds) },
            Definition(name: "kernel.throttled", unit: .duration, help: "busy time throttled by the cgroup's CPU quota, all loops",
                       higherIsWorse: true) { Double(facet($0).busy.throttledNanoseconds) },
            Definition(name: "kernel.throttled_share", unit: .ratio, help: "busy time throttled ÷ busy time", higherIsWorse: true,
                       hasData: { busy($0) > 0 }) { share($0, facet($0).busy.throttledNanoseconds) },
            Definition(name: "kernel.blocked", unit: .duration, help: "busy time blocked outside the loops' waits (system calls, page faults)",
                       higherIsWorse: true) { Double(facet($0).busy.blockedNanoseconds) },
            Definition(name: "kernel.blocked_share", unit: .ratio, help: "busy time blocked outside the loops' waits ÷ busy time", higherIsWorse: true,
                       hasData: { busy($0) > 0 }) { share($0, facet($0).busy.blockedNanoseconds) },
            count("kernel.late_wakeups", "late wake-ups (work due while the loop slept, called out past the late threshold)") {
                facet($0).lateWakeUps.count
            },
            count("kernel.lost", "kernel records the kernel recorder lost (they make kernel.* figures incomplete, not the loops' own)") { $0.kernel?.lostRecords ?? 0 },
        ])
        return list
    }

    /// A metric of the wait-loop totals: without wait loops (rare waiters are none) it has no data, whatever its type.
    private static func wait(_ definitions: [Definition]) -> [Definition] {
        definitions.map { d in
            Definition(name: d.name, unit: d.unit, help: d.help, higherIsWorse: d.higherIsWorse,
                       hasData: { ($0.waits?.overall.loops ?? 0) > 0 && d.hasData($0) }, noDataReason: noWaitLoop, distribution: d.distribution, read: d.read)
        }
    }

    /// The wait loops that `stalls.*` judge with the run loops: those on threads where no RunLoopCore, Foundation or
    /// NIO loop runs. A loop traced both by its own events and through its wait calls (`--any`) is the same loop:
    /// its own events tell its stalls, and it must not count twice.
    static func waitLoopsApart(_ s: TraceSummary) -> [TraceSummary.WaitLoopSummary] {
        guard let loops = s.waits?.loops, !loops.isEmpty else { return [] }
        let traced = Set(s.loops.compactMap(\.threadID) + (s.nio?.loops.map(\.threadID) ?? []))
        return loops.filter { !traced.contains($0.threadID) }
    }

    /// The wait metrics: every wait loop's figures together (rare waiters left out).
    private static var waitMetrics: [Definition] {
        @Sendable func totals(_ s: TraceSummary) -> TraceSummary.WaitTotals? { s.waits?.overall }
        var list = wait([
            count("wait.iterations", "iterations of all wait loops (wait end → next wait end)") { totals($0)?.iterations ?? 0 },
            Definition(name: "wait.utilization.mean", unit: .ratio, help: "busy ÷ (busy + sleep) of a wait loop, mean over the loops", higherIsWorse: true,
                       hasData: { (totals($0)?.iterations ?? 0) > 0 }) { totals($0)?.utilizationMean ?? 0 },
            Definition(name: "wait.utilization.max", unit: .ratio, help: "busy ÷ (busy + sleep) of the busiest wait loop", higherIsWorse: true,
                       hasData: { (totals($0)?.iterations ?? 0) > 0 }) { totals($0)?.utilizationMax ?? 0 },
            count("wait.stalls.count", "wait-loop iterations (wait end → next wait) busier than the stall threshold") { totals($0)?.stalls ?? 0 },
            Definition(name: "wait.stalls.worst", unit: .duration, help: "busy time of the worst wait-loop stall", higherIsWorse: true) {
                Double(totals($0)?.worstStalls.first?.busyNanoseconds ?? 0)
            },
            count("wait.late_wakeups", "waits that timed out later than their timeout + the late threshold") { totals($0)?.lateWakeUps ?? 0 },
        ])
        list += wait(distribution("wait.busy", "busy time of one wait-loop iteration (previous wait end → next wait begin)") {
            totals($0)?.busyPerIteration ?? DistributionSummary()
        })
        list += wait(distribution("wait.sleep", "one blocking wait of a wait loop") { totals($0)?.sleep ?? DistributionSummary() })
        list += wait(distribution("wait.lateness", "sleep − timeout of waits that timed out (timeout > 0)") { totals($0)?.lateness ?? DistributionSummary() })
        list += wait(distribution("wait.ready_per_wakeup", "events a blocking wait returned (a count, not a duration)") {
            totals($0)?.readyPerWakeUp ?? DistributionSummary()
        }.map {
            Definition(name: $0.name, unit: .count, help: $0.help, higherIsWorse: false, hasData: $0.hasData, distribution: $0.distribution, read: $0.read)
        })
        return list
    }

    /// A metric of the NIO totals: without NIO loops it has no data, whatever its type.
    private static func nio(_ definitions: [Definition], extra: @escaping @Sendable (TraceSummary.NIOSummary) -> Bool = { _ in true }) -> [Definition] {
        definitions.map { d in
            Definition(name: d.name, unit: d.unit, help: d.help, higherIsWorse: d.higherIsWorse,
                       hasData: { $0.nio.map(extra) ?? false && d.hasData($0) }, noDataReason: noNIOLoop, distribution: d.distribution, read: d.read)
        }
    }

    private static func foundation(_ definitions: [Definition]) -> [Definition] {
        definitions.map { d in
            Definition(name: d.name, unit: d.unit, help: d.help, higherIsWorse: d.higherIsWorse,
                       hasData: { $0.foundation != nil && d.hasData($0) }, noDataReason: noFoundationLoop, distribution: d.distribution, read: d.read)
        }
    }

    private static let emptyNIO = TraceSummary.NIOTotals(groupID: nil, loopIDs: [], ticks: 0, ticksPerSecond: 0, tasksPerTick: .init(),
                                                         tickDuration: .init(), busyPerIteration: .init(), sleep: .init(),
                                                         utilizationMean: 0, utilizationMax: 0, busiestLoopID: 0, stalls: 0,
                                                         worstStalls: [], probeLateness: nil)

    /// The SwiftNIO metrics: every NIO loop's figures together.
    private static var nioMetrics: [Definition] {
        @Sendable func totals(_ s: TraceSummary) -> TraceSummary.NIOTotals { s.nio?.overall ?? emptyNIO }
        var list = nio([
            count("nio.ticks", "ticks of all NIO event loops") { totals($0).ticks },
            Definition(name: "nio.ticks_per_second", unit: .count, help: "ticks per second, all NIO loops added", higherIsWorse: false,
                       hasData: { totals($0).ticks > 0 }) { totals($0).ticksPerSecond },
            Definition(name: "nio.utilization.mean", unit: .ratio, help: "busy ÷ (busy + sleep) of a NIO loop, mean over the loops", higherIsWorse: true,
                       hasData: { totals($0).ticks > 0 }) { totals($0).utilizationMean },
            Definition(name: "nio.utilization.max", unit: .ratio, help: "busy ÷ (busy + sleep) of the busiest NIO loop", higherIsWorse: true,
                       hasData: { totals($0).ticks > 0 }) { totals($0).utilizationMax },
            count("nio.stalls.count", "NIO iterations (I/O before a tick + its tasks) busier than the stall threshold") { totals($0).stalls },
            Definition(name: "nio.stalls.worst", unit: .duration, help: "busy time of the worst NIO stall", higherIsWorse: true) {
                Double(totals($0).worstStalls.first?.busyNanoseconds ?? 0)
            },
        ])
        list += nio(distribution("nio.tick", "task phase of one NIO tick") { totals($0).tickDuration })
        list += nio(distribution("nio.busy", "busy time of one NIO iteration (traced I/O + task phase)") { totals($0).busyPerIteration })
        list += nio(distribution("nio.sleep", "sleep of one NIO iteration (NIO's sleep − traced I/O)") { totals($0).sleep })
        list += nio(distribution("nio.tasks_per_tick", "tasks run by one NIO tick (a count, not a duration)") { totals($0).tasksPerTick }.map {
            Definition(name: $0.name, unit: .count, help: $0.help, higherIsWorse: true, hasData: $0.hasData, distribution: $0.distribution, read: $0.read)
        })
        list += nio(distribution("nio.probe.lateness", "lateness of the lateness probe's task (a probe: off unless enabled)") {
            totals($0).probeLateness ?? DistributionSummary()
        })
        return list
    }

    /// The Foundation RunLoop metrics: every Foundation loop's figures together.
    private static var foundationMetrics: [Definition] {
        @Sendable func totals(_ s: TraceSummary) -> TraceSummary.LoopSummary { s.foundation?.overall ?? TraceSummary.LoopSummary() }
        var list = foundation([
            count("foundation.runs", "runs of Foundation RunLoops (entry to exit)") { totals($0).runs },
            count("foundation.iterations", "iterations of Foundation RunLoops") { totals($0).iterations },
            Definition(name: "foundation.utilization", unit: .ratio, help: "busy ÷ wall of all Foundation loops", higherIsWorse: true,
                       hasData: { totals($0).wallNanoseconds > 0 }) { totals($0).utilization },
            Definition(name: "foundation.utilization.max", unit: .ratio, help: "busy ÷ wall of the busiest Foundation loop", higherIsWorse: true,
                       hasData: { totals($0).wallNanoseconds > 0 }) {
                $0.foundation?.utilizationMax ?? 0
            },
            count("foundation.stalls.count", "Foundation iterations busier than the stall threshold") { totals($0).stalls },
        ])
        list += foundation(distribution("foundation.busy", "busy time of one Foundation iteration") { totals($0).busyPerIteration })
        list += foundation(distribution("foundation.sleep", "one sleep of a Foundation loop (before_waiting → after_waiting)") { totals($0).sleep })
        return list
    }

    /// Every metric, in a stable order.
    public static let all: [Definition] = {
        var list: [Definition] = [
            Definition(name: "loop.utilization", unit: .ratio, help: "busy time ÷ wall time of all loops", higherIsWorse: true,
                       hasData: { $0.overall.wallNanoseconds > 0 }) { $0.overall.utilization },
            // Runs and their iterations are RunLoopCore's and Foundation's: on NIO or wait loops alone they have
            // nothing to count, and must not pass a budget as 0.
            Definition(name: "loop.iterations", unit: .count, help: "iterations of all runs", higherIsWorse: true,
                       hasData: { !$0.loops.isEmpty }, noDataReason: noLoopRuns) { Double($0.overall.iterations) },
            Definition(name: "loop.runs", unit: .count, help: "runs", higherIsWorse: true,
                       hasData: { !$0.loops.isEmpty }, noDataReason: noLoopRuns) { Double($0.overall.runs) },
        ]
        list += distribution("loop.busy_per_iteration", "busy time of one iteration") { $0.overall.busyPerIteration }
        list += distribution("loop.sleep", "one sleep of the loop") { $0.overall.sleep }
        // The same histogram as timer.lateness (a timer's wake-up latency is its lateness): kept for budgets
        // written before, read from the one figure.
        list += distribution("wake.timer", "alias of timer.lateness: timer due → callout start") { $0.overall.timerLateness }
        list += distribution("wake.source", "source first signal → perform") { $0.overall.wakeLatency.source }
        list += distribution("wake.block", "block enqueue → run") { $0.overall.wakeLatency.block }
        list += distribution("wake.port", "port send → handler") { $0.overall.wakeLatency.port }
        list += distribution("wake.job", "actor job enqueue → run") { $0.overall.wakeLatency.jobOrEmpty }
        list += distribution("timer.lateness", "timer lateness: actual − scheduled fire date") { $0.overall.timerLateness }
        list += distribution("timer.beyond_tolerance", "timer lateness beyond its tolerance window") { $0.overall.timerBeyondTolerance }
        list += [
            count("timer.firings", "timer callouts") { $0.overall.timerFirings },
            count("timer.missed", "grid slots skipped by repeating timers") { $0.overall.timerMissed },
            count("timer.late_firings", "firings later than tolerance + the late threshold") { $0.overall.timerLateFirings },
            Definition(name: "timer.within_tolerance", unit: .ratio, help: "share of firings of timers with a tolerance within it", higherIsWorse: false,
                       hasData: { ($0.overall.timerFiringsWithTolerance ?? $0.overall.timerFirings) > 0 }) { $0.overall.timerWithinTolerance },
            Definition(name: "timer.drift.max", unit: .rate, help: "largest lateness trend of any timer (per second of run)", higherIsWorse: true,
                       hasData: { !$0.timers.isEmpty }) {
                $0.timers.map { abs($0.driftNanosecondsPerSecond) }.max() ?? 0
            },
        ]
        list += distribution("backlog", "work pending at a wake-up (a count, not a duration)") { $0.overall.backlogAtWakeUp }.map {
            Definition(name: $0.name, unit: .count, help: $0.help, higherIsWorse: true, hasData: $0.hasData, distribution: $0.distribution, read: $0.read)
        }
        for kind in CalloutKind.allCases {
            list += distribution("callout.\(kind.name)", "duration of one \(kind.name) callout") { $0.overall.calloutDuration(of: kind) }
        }
        list += [
            // A trace of NIO loops alone has no runs: "no stall" there would be a pass on nothing (nio.stalls.* is theirs).
            // Any program's wait loops are judged here too (`rlctl record --any` then `check` with `stalls.count == 0`),
            // those on threads without a loop traced by its own events (waitLoopsApart).
            Definition(name: "stalls.count", unit: .count, help: "iterations busier than the stall threshold (RunLoopCore, Foundation and wait loops)",
                       higherIsWorse: true, hasData: { !$0.loops.isEmpty || !waitLoopsApart($0).isEmpty }, noDataReason: noRunLoop) {
                Double($0.overall.stalls + waitLoopsApart($0).reduce(0) { $0 + $1.stalls })
            },
            Definition(name: "stalls.worst", unit: .duration, help: "busy time of the worst stall (RunLoopCore, Foundation and wait loops)", higherIsWorse: true,
                       hasData: { !$0.loops.isEmpty || !waitLoopsApart($0).isEmpty }, noDataReason: noRunLoop) {
                let wait = waitLoopsApart($0).compactMap { $0.worstStalls.first?.busyNanoseconds }.max() ?? 0
                return Double(max($0.overall.worstStalls.first?.busyNanoseconds ?? 0, wait))
            },
            // What the loops reported themselves, at the threshold set in the traced process (0 also when it set none).
            count("reported.stalls.count", "loop_stall events: iterations the loops reported busier than their RLCTL_STALL_THRESHOLD") {
                $0.reported?.stalls ?? 0
            },
            Definition(name: "reported.stalls.worst", unit: .duration, help: "busy time of the worst stall a loop reported (loop_stall)",
                       higherIsWorse: true) {
                Double($0.reported?.worst.first?.busyNanoseconds ?? 0)
            },
            count("reported.hangs.count", "loop_hang events: loops the watchdog (RLCTL_WATCHDOG) saw stuck while still stuck") {
                $0.reported?.hangs ?? 0
            },
            count("trace.lost", "events lost by the tracer (never hidden)") { $0.health.eventsLost },
            count("trace.packets_lost", "whole packets lost by the tracer") { $0.health.packetsLost },
            count("trace.runs_incomplete", "runs whose begin or end is not in the trace (cut off, flight-recorder ring, lost)") { $0.health.incompleteRunCount },
            count("trace.events", "events read") { $0.health.eventsRead },
            count(Budget.cutOffMetric, "1 when the recording was cut off by its process's death (killed, crashed), else 0") {
                $0.health.trace.recordingCutOff ? 1 : 0
            },
        ]
        list += nioMetrics
        list += foundationMetrics
        list += waitMetrics
        list += kernelMetrics
        return list
    }()

    private static let byName: [String: Definition] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    public static func named(_ name: String) -> Definition? { byName[name] }

    /// ` (did you mean timer.lateness.p90?)` for a mistyped metric name, else nothing.
    public static func suggestion(for name: String) -> String {
        Spelling.closest(to: name, among: all.map(\.name)).map { " (did you mean \($0)?)" } ?? ""
    }
}

extension Metric.Definition {
    public func value(in summary: TraceSummary) -> Double { read(summary) }
    /// Whether `summary` has this figure; when not, `value(in:)` is a placeholder 0 that must not be judged.
    public func isMeasured(in summary: TraceSummary) -> Bool { hasData(summary) }
    /// Why a trace without the figure lacks it, when there is more to say than "no data".
    public var missingReason: String? { noDataReason }
}

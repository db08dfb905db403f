import TraceModel

/// One iteration of a SwiftNIO loop, the one computation the summary and the Chrome export share: the I/O of
/// traced channels since the previous tick is part of NIO's sleep time, so it moves from sleep to busy (no more
/// than NIO's sleep: the handler's clock and NIO's may differ slightly).
struct NIOIteration {
    let io: UInt64
    let busy: UInt64
    let sleep: UInt64

    init(ioSincePreviousTick: UInt64, tickStart: UInt64, tickEnd: UInt64, nioSleep: UInt64) {
        io = min(ioSincePreviousTick, nioSleep)
        busy = io + (tickEnd >= tickStart ? tickEnd - tickStart : 0)
        sleep = nioSleep - io
    }
}

/// One SwiftNIO event loop's running totals while a trace streams by.
///
/// NIO's tick info covers only a tick's task phase; the I/O handled before it is inside its sleep time. So an
/// iteration k runs from tick k−1's end to tick k's end: io_k (the traced channels' `nio_io` that ended since the
/// previous tick) plus the task phase is busy, NIO's sleep minus io_k is sleep. Readers deliver events in time
/// order and `nio_io` is emitted when it ends, `nio_tick` right after its tick: the I/O events between two ticks
/// are exactly the ones of the iteration, summed as they come (no per-event storage).
struct NIOLoopTracker {
    let loopID: UInt64
    let threadID: Int32
    private(set) var groupID: UInt64 = 0
    private let options: TraceSummarizer.Options
    /// Where its sleeps go over time, when the summary draws a timeline.
    var timeline: TimelineRecorder?
    private let labels: LabelTable
    private(set) var firstTimestamp: UInt64 = .max
    private(set) var lastTimestamp: UInt64 = 0

    private(set) var ticks: UInt64 = 0
    private var tasks: UInt64 = 0
    private var tasksPerTick = LatencyHistogram()
    private var tickDurations = LatencyHistogram()
    private var busyPerIteration = LatencyHistogram()
    private var sleeps = LatencyHistogram()
    private var ioDurations = LatencyHistogram()
    private var busy: UInt64 = 0
    private var slept: UInt64 = 0
    private var io: UInt64 = 0
    private var stalls: UInt64 = 0
    private var worstStalls: [TraceSummary.Stall] = []

    /// The I/O of the iteration in progress: its total and its longest event (the stall culprit).
    private var pendingIO: UInt64 = 0
    private var longestIO: (duration: UInt64, start: UInt64, channelID: UInt64, event: NIOIOEvent)?

    /// The kernel's side of its iterations, I/O events and wake-ups (nothing without a kernel view).
    private(set) var kernel: KernelFacetRecorder

    private var probeFirings: UInt64 = 0
    private var probeLateness = LatencyHistogram()
    private var probeCost = LatencyHistogram()

    init(loopID: UInt64, threadID: Int32, options: TraceSummarizer.Options, labels: LabelTable, kernel: KernelViews) {
        self.loopID = loopID
        self.threadID = threadID
        self.kernel = KernelFacetRecorder(threadID: threadID, views: kernel)
        self.options = options
        self.labels = labels
    }

    @inline(__always)
    private mutating func seen(_ ts: UInt64) {
        if ts < firstTimestamp { firstTimestamp = ts }
        if ts > lastTimestamp { lastTimestamp = ts }
        timeline?.start(at: ts)
    }

    mutating func adapted(groupID: UInt64, at ts: UInt64) {
        seen(ts)
        self.groupID = groupID
    }

    mutating func io(channelID: UInt64, event: NIOIOEvent, start: UInt64, end: UInt64) {
        seen(start)
        seen(end)
        let duration = end >= start ? end - start : 0
        ioDurations.record(duration)
        _ = kernel.callout(from: start, to: end)
        pendingIO += duration
        if duration > (longestIO?.duration ?? 0) || longestIO == nil {
            longestIO = (duration, start, channelID, event)
        }
    }

    mutating func tick(start: UInt64, end: UInt64, sleep: UInt64, tasks taskCount: UInt64) {
        // The iteration began when the previous tick ended: the loop's window starts there.
        seen(start >= sleep ? start - sleep : 0)
        seen(end)
        ticks += 1
        tasks += taskCount
        tasksPerTick.record(taskCount)
        let taskPhase = end >= start ? end - start : 0
        tickDurations.record(taskPhase)
        let iteration = NIOIteration(ioSincePreviousTick: pendingIO, tickStart: start, tickEnd: end, nioSleep: sleep)
        let ioTime = iteration.io, iterationBusy = iteration.busy, iterationSleep = iteration.sleep
        io += ioTime
        busy += iterationBusy
        slept += iterationSleep
        // The wait is the part of the time before the tick that its I/O did not take.
        timeline?.slept(.nio(loopID), from: start >= iterationSleep ? start - iterationSleep : 0, to: start)
        busyPerIteration.record(iterationBusy)
        sleeps.record(iterationSleep)
        // NIO's sleep also holds the I/O handled before the tick: only the times it blocked there are its wait.
        let iterationStart = start >= sleep ? start - sleep : 0
        _ = kernel.wait(from: iterationStart, to: start, blockedOnly: true)
        let measured = kernel.iteration(from: iterationStart, to: end, busy: iterationBusy, outermost: true)
        if iterationBusy > options.stallThreshold {
            let split = measured.map { kernel.split($0) }
            stalls += 1
            let stall: TraceSummary.Stall
            if let culprit = longestIO, culprit.duration > taskPhase {
                let channel = labels[culprit.channelID] ?? "channel-\(culprit.channelID)"
                stall = .init(loopID: loopID, iteration: ticks, atNanoseconds: culprit.start, busyNanoseconds: iterationBusy,
                              cause: "\(culprit.event) on \(channel)", kernel: split)
            } else {
                stall = .init(loopID: loopID, iteration: ticks, atNanoseconds: start, busyNanoseconds: iterationBusy,
                              cause: "tasks (\(taskCount))", kernel: split)
            }
            timeline?.stall(.nio(loopID), at: stall.atNanoseconds, busy: iterationBusy, cause: stall.cause)
            worstStalls.keepLargest(stall, limit: options.stallsKeptPerLoop, by: \.busyNanoseconds)
        }
        pendingIO = 0
        longestIO = nil
    }

    mutating func probe(lateness: UInt64, cost: UInt64, at ts: UInt64) {
        seen(ts)
        probeFirings += 1
        probeLateness.record(lateness)
        probeCost.record(cost)
    }

    /// The time the loop's iterations cover (busy + sleep), the base of its rates.
    private var span: UInt64 { busy + slept }

    private static func perSecond(_ count: UInt64, over nanoseconds: UInt64) -> Double {
        nanoseconds > 0 ? Double(count) / (Double(nanoseconds) / 1e9) : 0
    }

    func summary(name: String?) -> TraceSummary.NIOLoopSummary {
        let measured = ioDurations.count > 0
        var notAvailable = TraceSummary.NotAvailable.nio
        if !measured { notAvailable.append(TraceSummary.NotAvailable.nioIO) }
        let probe = probeFirings == 0 ? nil : TraceSummary.ProbeSummary(
            firings: probeFirings, firingsPerSecond: Self.perSecond(probeFirings, over: span),
            lateness: probeLateness.summary(for: options), cost: probeCost.summary(for: options))
        return TraceSummary.NIOLoopSummary(
            loopID: loopID, threadID: threadID, name: name, groupID: groupID, ticks: ticks,
            ticksPerSecond: Self.perSecond(ticks, over: span), tasks: tasks, tasksPerTick: tasksPerTick.summary(for: options),
            tickDuration: tickDurations.summary(for: options), ioMeasured: measured, ioNanoseconds: measured ? io : nil,
            ioDuration: measured ? ioDurations.summary(for: options) : nil, busyNanoseconds: busy, sleepNanoseconds: slept,
            utilization: span > 0 ? Double(busy) / Double(span) : 0,
            busyPerIteration: busyPerIteration.summary(for: options), sleep: sleeps.summary(for: options), stalls: stalls,
            worstStalls: worstStalls.sorted { $0.busyNanoseconds > $1.busyNanoseconds }, probe: probe,
            notAvailable: notAvailable, lostEventsAffecting: 0, lossWindowsAffecting: 0,
            kernel: kernel.facet(utilization: span > 0 ? Double(busy) / Double(span) : 0, first: firstTimestamp, last: lastTimestamp,
                                 notAvailable: TraceSummary.NotAvailable.kernelNIO))
    }

    /// Totals over `trackers` (with their summaries, for the per-loop utilizations and rates).
    static func totals(_ trackers: [NIOLoopTracker], _ summaries: [TraceSummary.NIOLoopSummary], groupID: UInt64?,
                       keep: Int) -> TraceSummary.NIOTotals {
        var tasksPerTick = LatencyHistogram(), tickDurations = LatencyHistogram()
        var busy = LatencyHistogram(), sleeps = LatencyHistogram(), lateness = LatencyHistogram()
        for tracker in trackers {
            tasksPerTick.merge(tracker.tasksPerTick)
            tickDurations.merge(tracker.tickDurations)
            busy.merge(tracker.busyPerIteration)
            sleeps.merge(tracker.sleeps)
            lateness.merge(tracker.probeLateness)
        }
        // A loop that never ticked in the trace has no utilization: it must not pull the mean down as a 0.
        let ticked = summaries.filter { $0.ticks > 0 }
        let busiest = ticked.max { $0.utilization < $1.utilization }
        return TraceSummary.NIOTotals(
            groupID: groupID, loopIDs: summaries.map(\.loopID), ticks: summaries.reduce(0) { $0 + $1.ticks },
            ticksPerSecond: summaries.reduce(0) { $0 + $1.ticksPerSecond },
            tasksPerTick: tasksPerTick.summary, tickDuration: tickDurations.summary,
            busyPerIteration: busy.summary, sleep: sleeps.summary,
            utilizationMean: ticked.isEmpty ? 0 : ticked.reduce(0) { $0 + $1.utilization } / Double(ticked.count),
            utilizationMax: busiest?.utilization ?? 0, busiestLoopID: busiest?.loopID ?? 0,
            stalls: summaries.reduce(0) { $0 + $1.stalls },
            worstStalls: Array(summaries.flatMap(\.worstStalls).sorted { $0.busyNanoseconds > $1.busyNanoseconds }.prefix(keep)),
            probeLateness: lateness.count > 0 ? lateness.summary : nil)
    }
}

import TraceModel
import TraceReading

/// The loss windows a reader reported since the last call. Wait loops must not count busy or sleep time across
/// lost events: readers report a loss window before the first event after it, so passing new windows on to the
/// summarizer before each event is in time.
struct NewLossWindows {
    private var seen = 0

    mutating func since(_ health: TraceHealth) -> ArraySlice<TraceHealth.LossWindow> {
        let windows = health.lossWindows
        defer { seen = windows.count }
        return seen < windows.count ? windows[seen...] : []
    }
}

/// Computes a ``TraceSummary`` from a stream of events, in constant memory whatever the trace's length
/// (memory grows only with the number of loops, timers and labels, not with events).
public struct TraceSummarizer {
    /// How much of a RunLoopCore loop's summary to compute.
    public enum Figures: Sendable {
        case all
        /// The totals (runs, iterations, wall, busy, sleep, wake-ups, stalls) and the wake-up latencies (timer
        /// lateness, source, port, block and job): no busy, sleep or backlog distribution, no callout durations,
        /// slowest callouts or late timers' causes, no per-timer summaries and no kernel distributions; of each
        /// latency distribution held in a histogram, its count, mean, p99 and maximum only (its other percentiles
        /// read 0). What `rlctl top` shows for each interval.
        case wakeLatencies
        /// The totals alone (with no per-timer summaries, nor kernel distributions): the running totals `rlctl top`
        /// differences each interval.
        case totals
    }

    public struct Options: Sendable {
        /// Iterations busier than this are stalls (default 16 ms: one 60 Hz frame).
        public var stallThreshold: UInt64 = 16_000_000
        /// A timer firing later than its tolerance by more than this is late and gets a cause (default 1 ms).
        public var lateThreshold: UInt64 = 1_000_000
        /// How many slowest callouts and worst stalls to keep.
        public var keep = 10
        /// How many worst stalls each loop keeps for its own section (`keep` unless set): a reader that draws every
        /// stall (the Chrome export) sets it to `.max`; the overall lists still stop at `keep`.
        public var stallsPerLoop: Int?
        var stallsKeptPerLoop: Int { stallsPerLoop ?? keep }
        /// When set, the summary has a ``TraceSummary/timeline`` of at most this many buckets (`rlctl report`).
        public var timelineBuckets: Int?
        /// Which figures RunLoopCore loops keep (``Figures/all`` unless set): `rlctl top` needs less, every event.
        public var figures = Figures.all
        /// Keeps where late wake-ups' time went (the kernel view's split of each) with fewer ``figures`` too: the
        /// running totals behind `rlctl top --serve`'s late-time counters. A timer then counts as due while its loop
        /// slept when the outermost run's last wait covered its fire date (the nesting and modes that ``Figures/all``
        /// tells apart are not kept).
        public var lateTimeByCause = false
        var explainsLateWakeUps: Bool { figures == .all || lateTimeByCause }
        /// When set, the events of other processes are left out (events that name no process are kept): `record --any`
        /// following children through LTTng, whose session takes every interposed process's events, a concurrent
        /// recording's too.
        public var onlyProcesses: Set<Int32>?
        public init() {}
    }

    /// How many of each thing a summary keeps apart. Each holds distributions and tables of its own, and their ids
    /// come from the trace: without a limit a trace of distinct ids (a damaged one) would size memory by its values.
    /// Events of things past a limit are left out of the figures and counted as lost (``finish(health:)``), so a
    /// summary still never reads as complete. Real traces stay far below: a loop per thread, timers per loop.
    public enum Limits {
        public static let loops = 4096
        public static let timers = 65_536
        public static let nioLoops = 4096
        public static let waitThreads = 4096
        public static let waitLoops = 4096
        public static let modes = 4096
        public static let labels = 65_536
    }

    /// Events left out because what they belong to is past ``Limits``.
    private var leftOut: UInt64 = 0

    public let options: Options
    /// Loops in order of their first event; `loopIDs[i]` is `loops[i]`'s id. Most traces have a few loops, and
    /// a linear search of a few ids beats hashing one per event; past that the index takes over.
    private var loops: [LoopTracker] = []
    private var loopIDs: [UInt64] = []
    private var loopIndexes: [UInt64: Int] = [:]
    private static let linearSearchLimit = 8
    private var timers: [TimerStatistics] = []
    private var timerIndexes: [UInt64: Int] = [:]
    /// The last timer that fired: repeating timers fire in runs.
    private var lastTimer: (id: UInt64, index: Int)?
    private var loopNames: [UInt64: (tid: Int32, name: String)] = [:]
    /// The process of each loop, from its first event (when the trace carries process ids: embedded traces, LTTng's
    /// `vpid` context).
    private var loopProcesses: [UInt64: Int32] = [:]
    /// SwiftNIO event loops: kept apart, since they have ticks instead of runs and activities.
    private var nioLoops: [NIOLoopTracker] = []
    private var nioIndexes: [UInt64: Int] = [:]
    /// The last NIO loop an event went to: a loaded server's events come in runs per loop.
    private var lastNIO: (id: UInt64, index: Int)?
    private let modes = ModeTable()
    private let labels = LabelTable()
    /// Any program's waits (`rlctl record --any`): loops found in wait calls, kept apart like NIO's.
    private var waits: WaitTracking
    private var reported: ReportedStallTracker
    /// The kernel's view of the loops' threads, when the trace has one: every kind of loop consults it.
    private let kernel = KernelViews()
    /// The trace's first and last events: the span rare waiters are measured against.
    private var firstTimestamp: UInt64 = .max
    private var lastTimestamp: UInt64 = 0

    /// Each loop's busy share and each timer's lateness over time, when the options ask for them.
    private let timeline: TimelineRecorder?

    public init(options: Options = Options()) {
        self.options = options
        timeline = options.timelineBuckets.map { TimelineRecorder(limit: $0) }
        waits = WaitTracking(options: options, kernel: kernel)
        reported = ReportedStallTracker(keep: options.keep)
        waits.timeline = timeline
    }

    /// Reads `reader` to the end and summarizes it.
    public static func summarize(_ reader: inout some TraceEventReader, options: Options = Options()) throws(TraceReadError) -> TraceSummary {
        var summarizer = TraceSummarizer(options: options)
        var losses = NewLossWindows()
        while let event = try reader.next() {
            for window in losses.since(reader.health) { summarizer.noteLoss(window) }
            summarizer.consume(event)
        }
        return summarizer.finish(health: reader.health)
    }

    /// A loss window the reader found while reading: feed it before the events after it (``NewLossWindows``), so
    /// that wait loops break their iteration chains there.
    public mutating func noteLoss(_ window: TraceHealth.LossWindow) {
        waits.loss(window)
    }

    @inline(__always)
    private mutating func loop(_ loopID: UInt64, _ event: TraceEvent) -> Int? {
        if loopIDs.count <= Self.linearSearchLimit {
            if let index = loopIDs.firstIndex(of: loopID) { return index }
        } else if let index = loopIndexes[loopID] {
            return index
        }
        guard loops.count < Limits.loops else {
            leftOut += 1
            return nil
        }
        var tracker = LoopTracker(loopID: loopID, threadID: event.threadID, options: options, modes: modes, labels: labels, kernel: kernel)
        tracker.timeline = timeline
        if event.processID != 0 { loopProcesses[loopID] = event.processID }
        loops.append(tracker)
        loopIDs.append(loopID)
        loopIndexes[loopID] = loops.count - 1
        return loops.count - 1
    }

    /// The NIO loop `loopID`, created on its first event (its loop_adapted normally, or a tick when that was lost).
    @inline(__always)
    private mutating func nioLoop(_ loopID: UInt64, _ event: TraceEvent) -> Int? {
        let (options, labels, timeline, kernel) = (options, labels, timeline, kernel)
        let known = nioLoops.count
        let index = Self.index(of: loopID, in: &nioLoops, indexes: &nioIndexes, last: &lastNIO, limit: Limits.nioLoops, leftOut: &leftOut) {
            var tracker = NIOLoopTracker(loopID: loopID, threadID: event.threadID, options: options, labels: labels, kernel: kernel)
            tracker.timeline = timeline
            return tracker
        }
        if nioLoops.count > known && event.processID != 0 { loopProcesses[loopID] = event.processID }
        return index
    }

    private mutating func timer(_ timerID: UInt64, loopID: UInt64) -> Int? {
        Self.index(of: timerID, in: &timers, indexes: &timerIndexes, last: &lastTimer, limit: Limits.timers, leftOut: &leftOut) {
            TimerStatistics(timerID: timerID, loopID: loopID)
        }
    }

    /// The index of `id`'s tracker in `items`, made on its first sight; `last` keeps the previous answer, as
    /// an item's events come in runs. Nil for a new id once `items` holds `limit` trackers (``Limits``): the event
    /// is counted in `leftOut` instead.
    @inline(__always)
    static func index<Key: Hashable, Tracker>(of id: Key, in items: inout [Tracker], indexes: inout [Key: Int],
                                              last: inout (id: Key, index: Int)?, limit: Int, leftOut: inout UInt64,
                                              make: () -> Tracker) -> Int? {
        if let last, last.id == id { return last.index }
        let index: Int
        if let known = indexes[id] {
            index = known
        } else {
            guard items.count < limit else {
                leftOut += 1
                return nil
            }
            index = items.count
            items.append(make())
            indexes[id] = index
        }
        last = (id, index)
        return index
    }

    /// Feeds one event (events must come in timestamp order, as readers deliver them).
    public mutating func consume(_ event: TraceEvent) {
        if let only = options.onlyProcesses, event.processID != 0, !only.contains(event.processID) { return }
        let ts = event.timestamp
        if ts < firstTimestamp { firstTimestamp = ts }
        if ts > lastTimestamp { lastTimestamp = ts }
        switch event.payload {
        case .activity(let activity, let place):
            if let l = loop(place.loopID, event) { loops[l].activity(activity, place, at: ts) }
        case .runBegin(let loopID, let mode, _, _):
            if let l = loop(loopID, event) { loops[l].runBegin(mode: modes.id(mode), at: ts) }
        case .runEnd(let loopID, _, let result):
            if let l = loop(loopID, event) { loops[l].runEnd(result, at: ts) }
        case .wakeUp(let loopID, let reason, let slept):
            if let l = loop(loopID, event) { loops[l].wakeUp(reason, slept: slept, at: ts) }
        case .timerFireBegin(let loopID, let timerID, let scheduled, let tolerance, let interval, let missed):
            guard let l = loop(loopID, event), let t = timer(timerID, loopID: loopID) else { break }
            let firing = TimerFiring(scheduled: scheduled, tolerance: tolerance, firedAt: ts)
            timers[t].firing(inMode: loops[l].currentMode)
            if options.figures != .totals {
                let cause = firing.isLate(threshold: options.lateThreshold) && options.figures == .all
                    ? loops[l].cause(at: scheduled, timerModes: timers[t].modes) : nil
                if cause == LoopTracker.asleep { loops[l].lateWakeUp(due: scheduled, at: ts) }
                timers[t].record(firing, interval: interval, missed: missed, lateCause: cause)
            } else if options.lateTimeByCause, firing.isLate(threshold: options.lateThreshold), loops[l].sleptThroughOutermost(scheduled) {
                loops[l].lateWakeUp(due: scheduled, at: ts)
            }
            timeline?.start(at: ts)
            timeline?.firing(timerID: timerID, loopID: loopID, at: ts, lateness: firing.lateness, tolerance: tolerance,
                             interval: interval, missed: missed)
            loops[l].timerFired(timerID, scheduled: scheduled, at: ts)
        case .sourcePerformBegin(let loopID, let sourceID, let kind, _, let signaled):
            if let l = loop(loopID, event) { loops[l].sourcePerformed(sourceID, kind: kind, signaled: signaled, at: ts) }
        case .blockBegin(let loopID, let blockID, let enqueued):
            if let l = loop(loopID, event) { loops[l].blockRan(blockID, enqueued: enqueued, at: ts) }
        case .observerBegin(let loopID, let observerID, _):
            if let l = loop(loopID, event) { loops[l].beginCallout(.observer, id: observerID, at: ts) }
        case .mainQueueBegin(let loopID):
            if let l = loop(loopID, event) { loops[l].beginCallout(.mainQueue, id: CalloutKind.mainQueueCalloutID, at: ts) }
        case .mainQueueEnd(let loopID):
            if let l = loop(loopID, event) { loops[l].endCallout(id: CalloutKind.mainQueueCalloutID, at: ts) }
        case .loopCreate(let loopID, let tid, let name):
            if loopNames.count < Limits.loops || loopNames[loopID] != nil { loopNames[loopID] = (tid, name) }
        case .itemLabel(let itemID, _, let label):
            labels.set(label, for: itemID)
        case .jobBegin(let loopID, let jobID, let enqueued, _):
            if let l = loop(loopID, event) { loops[l].jobRan(jobID, enqueued: enqueued, at: ts) }
        case .timerFireEnd(let loopID, let id), .sourcePerformEnd(let loopID, let id), .blockEnd(let loopID, let id),
             .observerEnd(let loopID, let id), .jobEnd(let loopID, let id):
            if let l = loop(loopID, event) { loops[l].endCallout(id: id, at: ts) }
        case .sourceSignal:
            break
        case .loopAdapted(let loopID, let adapter, let groupID):
            switch adapter {
            case .nio: if let n = nioLoop(loopID, event) { nioLoops[n].adapted(groupID: groupID, at: ts) }
            case .foundation: if let l = loop(loopID, event) { loops[l].adaptedFromActivities(at: ts) }
            }
        case .nioTick(let loopID, let start, let end, let sleep, let tasks):
            if let n = nioLoop(loopID, event) { nioLoops[n].tick(start: start, end: end, sleep: sleep, tasks: tasks) }
        case .nioIO(let loopID, let channelID, let io, let start, let end):
            if let n = nioLoop(loopID, event) { nioLoops[n].io(channelID: channelID, event: io, start: start, end: end) }
        case .probeFire(let loopID, _, let lateness, let cost):
            if let n = nioLoop(loopID, event) { nioLoops[n].probe(lateness: lateness, cost: cost, at: ts) }
        case .waitBegin(let call, let target, let setSize, let timeout):
            waits.begin(event.threadID, call: call, target: target, setSize: setSize, timeout: timeout, at: ts)
        case .waitEnd(let ready, let error):
            waits.end(event.threadID, ready: ready, error: error, at: ts)
        case .waitThread(let pid, let ppid, let thread, let process):
            waits.threadNamed(event.threadID, pid: pid, ppid: ppid, thread: thread, process: process, at: ts)
        case .waitBatch(let batch):
            waits.batch(batch, at: ts)
        case .loopStall(let stall):
            reported.stall(stall, at: ts)
        case .loopHang(let loopID, let iteration, let busy, let threshold):
            reported.hang(loopID: loopID, iteration: iteration, busy: busy, threshold: threshold, at: ts)
        case .kernelBegin, .kernelTask, .kernelTimer, .kernelRunQueue, .kernelOffCPU, .kernelLost:
            kernel.consume(event)
        }
    }

    /// The summary of everything consumed, with the reader's completeness.
    public func finish(health readerHealth: TraceHealth) -> TraceSummary {
        let health = withLeftOut(readerHealth)
        var timerTotals = [TimerTotals](repeating: TimerTotals(), count: loops.count)
        for timer in timers {
            if let index = loopIndexes[timer.loopID] { timerTotals[index].merge(timer.totals) }
        }
        var loopSummaries: [TraceSummary.LoopSummary] = []
        var overall = LoopTracker(loopID: 0, threadID: 0, options: options, modes: modes, labels: labels, kernel: kernel)
        var overallTimers = TimerTotals()
        for (index, var tracker) in loops.enumerated() {
            tracker.finishTrace(traceEnd: lastTimestamp)
            var summary = tracker.summary(timers: timerTotals[index])
            summary.processID = loopProcesses[tracker.loopID]
            if let (tid, name) = loopNames[tracker.loopID] {
                summary.threadID = tid
                summary.name = name
            }
            let loss = Self.losses(in: health, threadID: summary.threadID ?? tracker.threadID,
                                   from: tracker.firstTimestamp, to: tracker.lastTimestamp)
            summary.lostEventsAffecting = loss.events
            summary.lossWindowsAffecting = loss.windows
            loopSummaries.append(summary)
            overall.absorb(tracker)
            overallTimers.merge(timerTotals[index])
        }
        var overallSummary = overall.summary(timers: overallTimers)
        overallSummary.loopID = nil
        overallSummary.threadID = nil
        overallSummary.lostEventsAffecting = health.eventsLost
        overallSummary.lossWindowsAffecting = UInt64(health.lossWindows.count)
        overallSummary.slowestCallouts = Array(loopSummaries.flatMap(\.slowestCallouts)
            .sorted { $0.rankNanoseconds > $1.rankNanoseconds }.prefix(options.keep))
        overallSummary.worstStalls = Array(loopSummaries.flatMap(\.worstStalls)
            .sorted { $0.busyNanoseconds > $1.busyNanoseconds }.prefix(options.keep))

        // Per timer only with every figure: `rlctl top`'s summaries, every second, show loops.
        let timerSummaries = options.figures != .all ? [] : timers.map { timer -> TraceSummary.TimerSummary in
            var summary = timer.summary(label: labels[timer.timerID] ?? "timer-\(timer.timerID)")
            let threadID = loopIndexes[timer.loopID].map { loops[$0].threadID } ?? 0
            let loss = Self.losses(in: health, threadID: threadID, from: timer.first, to: timer.last)
            summary.lostEventsAffecting = loss.events
            summary.lossWindowsAffecting = loss.windows
            return summary
        }.sorted { ($0.lateness.p99, $0.timerID) > ($1.lateness.p99, $1.timerID) }

        var traceHealth = TraceSummary.Health(health)
        var nio: TraceSummary.NIOSummary?
        var foundation: TraceSummary.FoundationSummary?
        var nioFirst: UInt64?
        if !nioLoops.isEmpty {
            let nioSummaries = nioLoops.map { tracker -> TraceSummary.NIOLoopSummary in
                var summary = tracker.summary(name: loopNames[tracker.loopID]?.name)
                summary.processID = loopProcesses[tracker.loopID]
                if let tid = loopNames[tracker.loopID]?.tid { summary.threadID = tid }
                let loss = Self.losses(in: health, threadID: summary.threadID, from: tracker.firstTimestamp, to: tracker.lastTimestamp)
                summary.lostEventsAffecting = loss.events
                summary.lossWindowsAffecting = loss.windows
                return summary
            }
            var groupIDs: [UInt64] = []
            for tracker in nioLoops where !groupIDs.contains(tracker.groupID) { groupIDs.append(tracker.groupID) }
            let groups = groupIDs.map { group in
                let members = nioLoops.indices.filter { nioLoops[$0].groupID == group }
                return NIOLoopTracker.totals(members.map { nioLoops[$0] }, members.map { nioSummaries[$0] }, groupID: group, keep: options.keep)
            }
            nio = TraceSummary.NIOSummary(loops: nioSummaries, groups: groups,
                                          overall: NIOLoopTracker.totals(nioLoops, nioSummaries, groupID: nil, keep: options.keep),
                                          notAvailable: TraceSummary.NotAvailable.nio)
            nioFirst = nioLoops.map(\.firstTimestamp).min()
        }
        let foundationIndexes = loops.indices.filter { loops[$0].activitiesOnly }
        if !foundationIndexes.isEmpty {
            var totals = LoopTracker(loopID: 0, threadID: 0, options: options, modes: modes, labels: labels, kernel: kernel)
            for index in foundationIndexes {
                var tracker = loops[index]
                tracker.timeline = nil   // its runs went to the timeline when its own summary finished them
                tracker.finishTrace(traceEnd: lastTimestamp)
                totals.absorb(tracker)
            }
            var summary = totals.summary(timers: TimerTotals())
            summary.adapter = LoopAdapter.foundation.description
            summary.notAvailable = TraceSummary.NotAvailable.foundation
            summary.forgetWhatActivitiesDoNotShow()
            summary.loopID = nil
            summary.threadID = nil
            summary.worstStalls = Array(foundationIndexes.flatMap { loopSummaries[$0].worstStalls }
                .sorted { $0.busyNanoseconds > $1.busyNanoseconds }.prefix(options.keep))
            let busiest = foundationIndexes.max { loopSummaries[$0].utilization < loopSummaries[$1].utilization }!
            foundation = TraceSummary.FoundationSummary(loopIDs: foundationIndexes.map { loops[$0].loopID }, overall: summary,
                                                        utilizationMax: loopSummaries[busiest].utilization,
                                                        busiestLoopID: loops[busiest].loopID,
                                                        notAvailable: TraceSummary.NotAvailable.foundation)
        }
        traceHealth.runsCutOff = loopSummaries.reduce(0) { $0 + ($1.results["did_not_end"] ?? 0) }
        traceHealth.runsEndLost = loopSummaries.reduce(0) { $0 + ($1.results["end_lost"] ?? 0) }
        traceHealth.runsBegunBeforeTrace = loopSummaries.reduce(0) { $0 + ($1.runsBegunBeforeTrace ?? 0) }
        traceHealth.cutOffAtNanoseconds = loopSummaries.compactMap(\.cutOffAtNanoseconds).max()
        let waitSummary = waits.isEmpty ? nil
            : waits.summary(health: health, traceSpan: lastTimestamp >= firstTimestamp ? lastTimestamp - firstTimestamp : 0,
                                  traceEnd: lastTimestamp)
        traceHealth.firstEventNanoseconds = (loops.map(\.firstTimestamp) + [nioFirst, waits.firstTimestamp].compactMap { $0 }).min()
        var summary = TraceSummary(health: traceHealth,
                                   overall: overallSummary, loops: loopSummaries, timers: timerSummaries,
                                   stallThresholdNanoseconds: options.stallThreshold, lateThresholdNanoseconds: options.lateThreshold,
                                   nio: nio, foundation: foundation, waits: waitSummary)
        summary.reported = reported.finish(names: loopNames)
        summary.kernel = kernelView(overall: overallSummary)
        summary.allLoops = summary.loopsOfEveryKind
        summary.allLoopsNotAvailable = summary.loopFieldsNotAvailable
        summary.verdict = SummaryVerdict(summary).findings
        summary.timeline = timeline?.timeline(lastTimestamp: lastTimestamp, name: { summary.timelineName($0) }, span: { key in
            switch key {
            case .loop(let id): return loopIndexes[id].map { (loops[$0].firstTimestamp, loops[$0].lastTimestamp) }
            case .nio(let id): return nioIndexes[id].map { (nioLoops[$0].firstTimestamp, nioLoops[$0].lastTimestamp) }
            case .wait: return waits.span(of: key)
            }
        }, timerLabel: { id in labels[id] ?? "timer-\(id)" })
        return summary
    }

    /// The trace's kernel view with every loop's kernel figures together (each thread's once: a wait loop on the
    /// thread of a loop traced by its own events is that loop); nil without a kernel view.
    private func kernelView(overall: TraceSummary.LoopSummary) -> TraceSummary.KernelView? {
        guard kernel.isOn else { return nil }
        var all = KernelFacetRecorder(threadID: 0, views: kernel)
        for tracker in loops { all.absorb(tracker.kernel) }
        for tracker in nioLoops { all.absorb(tracker.kernel) }
        let traced = Set(loops.map(\.threadID) + nioLoops.map(\.threadID))
        for tracker in waits.loops where !traced.contains(tracker.threadID) { all.absorb(tracker.kernel) }
        let first = min(firstTimestamp, lastTimestamp)
        return kernel.status(overall: all.facet(utilization: overall.utilization, first: first, last: lastTimestamp, notAvailable: nil,
                                                distributions: options.figures == .all))
    }

    /// The reader's health, with the events left out past ``Limits`` counted as lost over the whole trace. The kernel
    /// records the kernel recorder lost are not the loops' events: they make the kernel figures over their windows
    /// incomplete (``TraceSummary/KernelFacet/lostRecordsAffecting``, `kernel.lost`), not the loops' own figures.
    private func withLeftOut(_ readerHealth: TraceHealth) -> TraceHealth {
        var health = readerHealth
        let count = leftOut.addingLoss(waits.leftOut)
        guard count > 0 else { return health }
        health.eventsLost = health.eventsLost.addingLoss(count)
        health.damage.append("\(count) events left out: they belong to loops, timers or wait threads past the \(Limits.loops) loops, \(Limits.timers) timers and \(Limits.waitThreads) wait threads one summary keeps apart")
        health.noteLossWindow(.init(stream: TraceHealth.mergedLossStream, from: 0, to: .max, events: count))
        return health
    }

    /// Losses in windows that may hide events of this thread in [from, to]: windows of its own stream (embedded
    /// traces name the thread), or any window overlapping in time when streams are per CPU (LTTng). Events are
    /// the tracer's own counts, so they never exceed the trace's total; windows also count whole-packet losses,
    /// whose events no tracer counts.
    static func losses(in health: TraceHealth, threadID: Int32, from: UInt64, to: UInt64) -> (events: UInt64, windows: UInt64) {
        var events: UInt64 = 0, windows: UInt64 = 0
        for window in health.lossWindows {
            let overlaps = window.from <= to && window.to >= from
            let stream = window.stream
            let mine = stream.hasPrefix("tid ") ? stream == "tid \(threadID)" : true
            if mine && overlaps {
                events = events.addingLoss(window.events)
                windows += 1
            }
        }
        return (events, windows)
    }
}

import TraceModel
import TraceReading

/// Computes a ``TraceSummary`` from a stream of events, in constant memory whatever the trace's length
/// (memory grows only with the number of loops, timers and labels, not with events).
public struct TraceSummarizer {
    public struct Options: Sendable {
        /// Iterations busier than this are stalls (default 16 ms: one 60 Hz frame).
        public var stallThreshold: UInt64 = 16_000_000
        /// A timer firing later than its tolerance by more than this is late and gets a cause (default 1 ms).
        public var lateThreshold: UInt64 = 1_000_000
        /// How many slowest callouts and worst stalls to keep.
        public var keep = 10
        public init() {}
    }

    public let options: Options
    private var loops: [UInt64: LoopTracker] = [:]
    private var loopOrder: [UInt64] = []
    private var timers: [UInt64: TimerTracker] = [:]
    private var labels: [UInt64: String] = [:]
    private var loopNames: [UInt64: (tid: Int32, name: String)] = [:]
    private let modes = ModeTable()

    public init(options: Options = Options()) {
        self.options = options
    }

    /// Reads `reader` to the end and summarizes it.
    public static func summarize(_ reader: inout some TraceEventReader, options: Options = Options()) throws(TraceReadError) -> TraceSummary {
        var summarizer = TraceSummarizer(options: options)
        while let event = try reader.next() { summarizer.consume(event) }
        return summarizer.finish(health: reader.health)
    }

    private mutating func tracker(_ loopID: UInt64, _ event: TraceEvent) -> LoopTracker {
        if let tracker = loops[loopID] { return tracker }
        let tracker = LoopTracker(loopID: loopID, threadID: event.threadID, options: options, modes: modes)
        loops[loopID] = tracker
        loopOrder.append(loopID)
        return tracker
    }

    /// Feeds one event (events must come in timestamp order, as readers deliver them).
    public mutating func consume(_ event: TraceEvent) {
        let ts = event.timestamp
        switch event.payload {
        case .activity(let activity, let place):
            tracker(place.loopID, event).activity(activity, place, at: ts)
        case .runBegin(let loopID, let mode, _, _):
            tracker(loopID, event).runBegin(mode: modes.id(mode), at: ts)
        case .runEnd(let loopID, _, let result):
            tracker(loopID, event).runEnd(result, at: ts)
        case .wakeUp(let loopID, let reason, let slept):
            tracker(loopID, event).wakeUp(reason, slept: slept, at: ts)
        case .timerFireBegin(let loopID, let timerID, let scheduled, let tolerance, let interval, let missed):
            let loop = tracker(loopID, event)
            let lateness = ts >= scheduled ? ts - scheduled : 0
            let timer = timers[timerID] ?? TimerTracker(timerID: timerID, loopID: loopID)
            timers[timerID] = timer
            timer.firing(inMode: loop.currentMode)
            let cause = lateness > tolerance && lateness - tolerance > options.lateThreshold
                ? loop.cause(at: scheduled, timerModes: timer.modes) : nil
            loop.timerFired(lateness: lateness, tolerance: tolerance, missed: missed, scheduled: scheduled, cause: cause, at: ts)
            timer.fired(lateness: lateness, tolerance: tolerance, interval: interval, missed: missed, cause: cause, at: ts)
            loop.beginCallout(.timer, id: timerID, label: labels[timerID], at: ts)
        case .timerFireEnd(let loopID, let timerID):
            tracker(loopID, event).endCallout(id: timerID, at: ts)
        case .sourcePerformBegin(let loopID, let sourceID, let kind, _, let signaled):
            let loop = tracker(loopID, event)
            loop.sourcePerformed(kind: kind, signaled: signaled, at: ts)
            let calloutKind: LoopTracker.CalloutKind = kind == .port ? .port : (kind == .descriptor ? .descriptor : .source)
            loop.beginCallout(calloutKind, id: sourceID, label: labels[sourceID], at: ts)
        case .sourcePerformEnd(let loopID, let sourceID):
            tracker(loopID, event).endCallout(id: sourceID, at: ts)
        case .blockBegin(let loopID, let blockID, let enqueued):
            let loop = tracker(loopID, event)
            loop.blockRan(enqueued: enqueued, at: ts)
            loop.beginCallout(.block, id: blockID, label: nil, at: ts)
        case .blockEnd(let loopID, let blockID):
            tracker(loopID, event).endCallout(id: blockID, at: ts)
        case .observerBegin(let loopID, let observerID, _):
            tracker(loopID, event).beginCallout(.observer, id: observerID, label: labels[observerID], at: ts)
        case .observerEnd(let loopID, let observerID):
            tracker(loopID, event).endCallout(id: observerID, at: ts)
        case .loopCreate(let loopID, let tid, let name):
            loopNames[loopID] = (tid, name)
        case .itemLabel(let itemID, _, let label):
            labels[itemID] = label
        case .sourceSignal:
            break
        }
    }

    /// The summary of everything consumed, with the reader's completeness.
    public func finish(health: TraceHealth) -> TraceSummary {
        let windows = health.lossWindows.map {
            TraceSummary.Health.LossWindow(stream: $0.stream, fromNanoseconds: $0.from, toNanoseconds: $0.to, events: $0.events)
        }
        var loopSummaries: [TraceSummary.LoopSummary] = []
        let overall = LoopTracker(loopID: 0, threadID: 0, options: options, modes: modes)
        for loopID in loopOrder {
            guard let tracker = loops[loopID] else { continue }
            tracker.finishTrace()
            var summary = tracker.summary(options: options)
            if let (tid, name) = loopNames[loopID] {
                summary.threadID = tid
                summary.name = name
            }
            let loss = Self.losses(in: health, threadID: summary.threadID ?? tracker.threadID,
                                   from: tracker.firstTimestamp, to: tracker.lastTimestamp)
            summary.lostEventsAffecting = loss.events
            summary.lossWindowsAffecting = loss.windows
            loopSummaries.append(summary)
            overall.absorb(tracker)
        }
        var overallSummary = overall.summary(options: options)
        overallSummary.loopID = nil
        overallSummary.threadID = nil
        overallSummary.lostEventsAffecting = health.eventsLost
        overallSummary.lossWindowsAffecting = UInt64(health.lossWindows.count)
        overallSummary.slowestCallouts = Array(loopSummaries.flatMap(\.slowestCallouts)
            .sorted { $0.durationNanoseconds > $1.durationNanoseconds }.prefix(options.keep))
        overallSummary.worstStalls = Array(loopSummaries.flatMap(\.worstStalls)
            .sorted { $0.busyNanoseconds > $1.busyNanoseconds }.prefix(options.keep))

        let timerSummaries = timers.values.map { timer -> TraceSummary.TimerSummary in
            var summary = timer.summary(label: labels[timer.timerID] ?? "timer-\(timer.timerID)")
            let loop = loops[timer.loopID]
            let loss = Self.losses(in: health, threadID: loop?.threadID ?? 0, from: timer.first, to: timer.last)
            summary.lostEventsAffecting = loss.events
            summary.lossWindowsAffecting = loss.windows
            return summary
        }.sorted { ($0.lateness.p99, $0.timerID) > ($1.lateness.p99, $1.timerID) }

        var traceHealth = TraceSummary.Health(eventsRead: health.eventsRead, eventsLost: health.eventsLost,
                                              packetsLost: health.packetsLost, lossWindows: windows)
        traceHealth.runsCutOff = loopSummaries.reduce(0) { $0 + ($1.results["did_not_end"] ?? 0) }
        traceHealth.runsEndLost = loopSummaries.reduce(0) { $0 + ($1.results["end_lost"] ?? 0) }
        traceHealth.runsBegunBeforeTrace = loopSummaries.reduce(0) { $0 + ($1.runsBegunBeforeTrace ?? 0) }
        traceHealth.cutOffAtNanoseconds = loopSummaries.compactMap(\.cutOffAtNanoseconds).max()
        traceHealth.firstEventNanoseconds = loops.values.map(\.firstTimestamp).min()
        return TraceSummary(health: traceHealth,
                            overall: overallSummary, loops: loopSummaries, timers: timerSummaries,
                            stallThresholdNanoseconds: options.stallThreshold, lateThresholdNanoseconds: options.lateThreshold)
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
                events += window.events
                windows += 1
            }
        }
        return (events, windows)
    }
}

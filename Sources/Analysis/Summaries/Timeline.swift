import TraceModel

/// Each loop's busy share and each timer's lateness over the trace's time, for pages that draw them
/// (`rlctl report`). The trackers feed it from the same sleeps and firings their figures count, so the line and
/// the summary's numbers are one model. Buckets start at 1 ms and double in width whenever the trace outgrows
/// `limit` of them: memory and the page's size stay bounded whatever the trace's length, and every bucket keeps
/// its extremes (a firing's worst lateness, its missed slots).
final class TimelineRecorder {
    enum Key: Hashable {
        case loop(UInt64)
        case nio(UInt64)
        case wait(threadID: Int32, target: Int32, epoll: Bool)
    }

    struct LoopSeries {
        /// ns asleep in each bucket.
        var slept: [UInt64] = []
        /// ns inside outermost runs in each bucket (RunLoopCore and Foundation loops: their utilization is busy ÷
        /// time in runs); empty for loops without runs.
        var ran: [UInt64] = []
        /// Per bucket with stalls: how many, and the worst.
        var stalls: [TraceSummary.Timeline.StallBucket?] = []
    }

    struct TimerSeries {
        var loopID: UInt64
        var tolerance: UInt64 = 0
        var interval: UInt64 = 0
        var buckets: [TraceSummary.Timeline.TimerBucket?] = []
    }

    let limit: Int
    private(set) var origin: UInt64?
    private(set) var width: UInt64 = 1_000_000
    private var loops: [Key: LoopSeries] = [:]
    private var loopOrder: [Key] = []
    private var timers: [UInt64: TimerSeries] = [:]
    private var timerOrder: [UInt64] = []

    init(limit: Int = 600) {
        self.limit = max(2, limit)
    }

    /// The trace's first event: bucket 0 starts here.
    func start(at ts: UInt64) {
        if origin == nil { origin = ts }
    }

    /// The bucket of `ts`, widening the buckets until it fits; nil before the origin.
    private func bucket(_ ts: UInt64) -> Int? {
        guard let origin, ts >= origin else { return nil }
        while (ts - origin) / width >= UInt64(limit) { widen() }
        return Int((ts - origin) / width)
    }

    private func widen() {
        width *= 2
        for key in loopOrder {
            loops[key]!.slept = Self.halve(loops[key]!.slept, merge: +)
            loops[key]!.ran = Self.halve(loops[key]!.ran, merge: +)
            loops[key]!.stalls = Self.halve(loops[key]!.stalls)
        }
        for id in timerOrder {
            timers[id]!.buckets = Self.halve(timers[id]!.buckets)
        }
    }

    /// Buckets that keep their index: merged in pairs, then renumbered.
    private static func halve<T: TimelineBucket>(_ values: [T?]) -> [T?] {
        var halved = halve(values) { a, b in
            guard let a else { return b }
            guard let b else { return a }
            return a.merged(with: b)
        }
        for index in halved.indices { halved[index]?.index = index }
        return halved
    }

    private static func halve<T>(_ values: [T], merge: (T, T) -> T) -> [T] {
        stride(from: 0, to: values.count, by: 2).map { index in
            index + 1 < values.count ? merge(values[index], values[index + 1]) : values[index]
        }
    }

    /// A loop's series, made on its first sleep or stall (per iteration, not per event: its tracker keeps its
    /// first and last events, asked for at the end).
    private func series(_ key: Key) {
        if loops[key] == nil {
            loops[key] = LoopSeries()
            loopOrder.append(key)
        }
    }

    /// The loop slept from `from` to `to`: spread over the buckets it covers.
    func slept(_ key: Key, from: UInt64, to: UInt64) {
        spread(key, \.slept, from: from, to: to)
    }

    /// An outermost run of the loop lasted from `from` to `to`.
    func ran(_ key: Key, from: UInt64, to: UInt64) {
        spread(key, \.ran, from: from, to: to)
    }

    private func spread(_ key: Key, _ field: WritableKeyPath<LoopSeries, [UInt64]>, from: UInt64, to: UInt64) {
        guard let origin, to > from else { return }
        series(key)
        var start = max(from, origin)
        guard let last = bucket(to) else { return }
        if loops[key]![keyPath: field].count <= last {
            loops[key]![keyPath: field] += repeatElement(0, count: last + 1 - loops[key]![keyPath: field].count)
        }
        while start < to {
            let index = Int((start - origin) / width)
            let end = min(to, origin + UInt64(index + 1) * width)
            loops[key]![keyPath: field][index] += end - start
            start = end
        }
    }

    /// A stall (an iteration busier than the threshold) that began at `at`: every one is counted in its bucket,
    /// which keeps the worst.
    func stall(_ key: Key, at ts: UInt64, busy: UInt64, cause: String?) {
        guard let index = bucket(max(ts, origin ?? ts)) else { return }
        series(key)
        if loops[key]!.stalls.count <= index { loops[key]!.stalls += repeatElement(nil, count: index + 1 - loops[key]!.stalls.count) }
        let stall = TraceSummary.Timeline.StallBucket(index: index, count: 1, worstAtNanoseconds: ts, worstBusyNanoseconds: busy, worstCause: cause)
        loops[key]!.stalls[index] = loops[key]!.stalls[index].map { $0.merged(with: stall) } ?? stall
    }

    func firing(timerID: UInt64, loopID: UInt64, at ts: UInt64, lateness: UInt64, tolerance: UInt64, interval: UInt64, missed: UInt64) {
        guard let index = bucket(ts) else { return }
        if timers[timerID] == nil {
            timers[timerID] = TimerSeries(loopID: loopID)
            timerOrder.append(timerID)
        }
        timers[timerID]!.tolerance = tolerance
        timers[timerID]!.interval = interval
        if timers[timerID]!.buckets.count <= index {
            timers[timerID]!.buckets += repeatElement(nil, count: index + 1 - timers[timerID]!.buckets.count)
        }
        let point = TraceSummary.Timeline.TimerBucket(index: index, firings: 1, lowest: lateness, highest: lateness, missed: missed)
        timers[timerID]!.buckets[index] = timers[timerID]!.buckets[index].map { $0.merged(with: point) } ?? point
    }

    /// The recorded lines, named by `name` (nil: a loop the summary left out, such as a rare waiter); `span` is
    /// each loop's first and last event, the part of the time where its line is drawn.
    func timeline(lastTimestamp: UInt64, name: (Key) -> (name: String, kind: String)?, span: (Key) -> (first: UInt64, last: UInt64)?,
                  timerLabel: (UInt64) -> String) -> TraceSummary.Timeline? {
        guard let origin else { return nil }
        _ = bucket(lastTimestamp)   // the last event may lie past the buckets any sleep or firing needed
        let buckets = lastTimestamp >= origin ? Int((lastTimestamp - origin) / width) + 1 : 1
        var lines: [TraceSummary.Timeline.LoopLine] = []
        for key in loopOrder {
            guard let series = loops[key], let named = name(key), let span = span(key) else { continue }
            var utilization: [Double?] = []
            utilization.reserveCapacity(buckets)
            for index in 0..<buckets {
                // The time the loop was there to be busy: inside its runs when it has runs, else its first event to
                // its last (NIO and wait loops, whose utilization is busy ÷ (busy + sleep) over that span).
                let active: UInt64
                if !series.ran.isEmpty {
                    active = index < series.ran.count ? series.ran[index] : 0
                } else {
                    let from = max(origin + UInt64(index) * width, span.first)
                    let to = min(origin + UInt64(index + 1) * width, span.last)
                    active = to > from ? to - from : 0
                }
                guard active > 0 else {
                    utilization.append(nil)
                    continue
                }
                let slept = min(index < series.slept.count ? series.slept[index] : 0, active)
                utilization.append(Double(active - slept) / Double(active))
            }
            lines.append(.init(key: TraceSummary.Timeline.key(for: key), name: named.name, kind: named.kind, utilization: utilization,
                               stalls: series.stalls.compactMap { $0 }))
        }
        let timerLines = timerOrder.map { id in
            let series = timers[id]!
            return TraceSummary.Timeline.TimerLine(timerID: id, label: timerLabel(id), loopID: series.loopID,
                                                   toleranceNanoseconds: series.tolerance, intervalNanoseconds: series.interval,
                                                   buckets: series.buckets.compactMap { $0 })
        }
        return TraceSummary.Timeline(originNanoseconds: origin, bucketNanoseconds: width, buckets: buckets, loops: lines, timers: timerLines)
    }
}

/// A bucket of a timeline's sparse series (stalls, timer firings): it knows its index and merges with its neighbour.
protocol TimelineBucket {
    var index: Int { get set }
    func merged(with other: Self) -> Self
}

extension TraceSummary.Timeline.StallBucket: TimelineBucket {}
extension TraceSummary.Timeline.TimerBucket: TimelineBucket {}

extension TraceSummary {
    /// The trace's time in `buckets` equal buckets from `originNanoseconds` (the first event): per loop its busy
    /// share in each, per timer its firings' lateness in each. Only `summarize` with a timeline (the report) makes
    /// one.
    public struct Timeline: Codable, Sendable, Equatable {
        public var originNanoseconds: UInt64
        public var bucketNanoseconds: UInt64
        public var buckets: Int
        public var loops: [LoopLine]
        public var timers: [TimerLine]

        public struct LoopLine: Codable, Sendable, Equatable {
            /// Which loop: `loop:ID`, `nio:ID`, `wait:THREAD:TARGET:FAMILY` (names can repeat: threads of one name
            /// waiting on one shared epoll descriptor).
            public var key: String
            /// As the summary's section heads it.
            public var name: String
            /// runloop, foundation, nio or wait.
            public var kind: String
            /// Busy share of the part of each bucket where the loop had events; nil where it had none.
            public var utilization: [Double?]
            /// The buckets where stalls began, in order: every stall is counted, each bucket keeps its worst.
            public var stalls: [StallBucket]
        }

        public struct StallBucket: Codable, Sendable, Equatable {
            public var index: Int
            public var count: UInt64
            public var worstAtNanoseconds: UInt64
            public var worstBusyNanoseconds: UInt64
            /// The worst stall's culprit; nil where the loop's callouts are not traced (any program's waits).
            public var worstCause: String?

            func merged(with other: StallBucket) -> StallBucket {
                let worst = other.worstBusyNanoseconds > worstBusyNanoseconds ? other : self
                return StallBucket(index: index, count: count + other.count, worstAtNanoseconds: worst.worstAtNanoseconds,
                                   worstBusyNanoseconds: worst.worstBusyNanoseconds, worstCause: worst.worstCause)
            }
        }

        public struct TimerLine: Codable, Sendable, Equatable {
            public var timerID: UInt64
            public var label: String
            public var loopID: UInt64
            public var toleranceNanoseconds: UInt64
            public var intervalNanoseconds: UInt64
            /// The buckets with firings, in order.
            public var buckets: [TimerBucket]
        }

        public struct TimerBucket: Codable, Sendable, Equatable {
            public var index: Int
            public var firings: UInt64
            /// The least and the most late firing of the bucket (ns).
            public var lowest: UInt64
            public var highest: UInt64
            /// Grid slots skipped by its firings.
            public var missed: UInt64

            func merged(with other: TimerBucket) -> TimerBucket {
                TimerBucket(index: index, firings: firings + other.firings,
                            lowest: min(lowest, other.lowest), highest: max(highest, other.highest), missed: missed + other.missed)
            }
        }
    }
}

extension TraceSummary.Timeline {
    /// A loop's line key (``LoopLine/key``).
    static func key(for key: TimelineRecorder.Key) -> String {
        switch key {
        case .loop(let id): return "loop:\(id)"
        case .nio(let id): return "nio:\(id)"
        case .wait(let threadID, let target, let epoll): return "wait:\(threadID):\(target):\(epoll ? "epoll" : "poll")"
        }
    }
}

extension TraceSummary {
    /// A timeline line's name and kind, as the loop's section heads it; nil for a loop with no section.
    func timelineName(_ key: TimelineRecorder.Key) -> (name: String, kind: String)? {
        switch key {
        case .loop(let id):
            guard let loop = loops.first(where: { $0.loopID == id }) else { return nil }
            let foundation = self.foundation?.loopIDs.contains(id) ?? false
            return ("loop \(id)" + (loop.name.map { " \($0)" } ?? ""), foundation ? "foundation" : "runloop")
        case .nio(let id):
            guard let loop = nio?.loops.first(where: { $0.loopID == id }) else { return nil }
            return ("NIO loop \(id)" + (loop.name.map { " \($0)" } ?? ""), "nio")
        case .wait(let threadID, let target, let epoll):
            let family = epoll ? WaitLoopSummary.epollFamily : WaitLoopSummary.pollFamily
            guard let loop = waits?.loops.first(where: { $0.threadID == threadID && $0.target == target && $0.family == family }) else {
                return nil
            }
            return (loop.name, "wait")
        }
    }
}

import TraceModel

extension TraceSummary {
    /// What the loops reported about themselves: `loop_stall` events (iterations busy past the threshold set in the
    /// traced process) and the watchdog's `loop_hang` events (loops still stuck when it looked). The summarizer's
    /// own stalls (``LoopSummary/stalls``, at `--stall`) are computed from the activities; these are what the
    /// program saw at its own threshold, and what snapshot-on-stall triggers on.
    public struct ReportedStalls: Codable, Sendable, Equatable {
        public var stalls: UInt64 = 0
        public var hangs: UInt64 = 0
        /// The thresholds the stalls were reported at (one, unless the program changed it), smallest first.
        public var thresholdsNanoseconds: [UInt64] = []
        /// The longest reported stalls, longest first.
        public var worst: [Stall] = []
        /// The watchdog's reports, first first.
        public var hangReports: [Hang] = []

        public struct Stall: Codable, Sendable, Equatable {
            public var loopID: UInt64
            public var loopName: String?
            public var mode: String
            public var iteration: UInt64
            /// When the stalled iteration began, and when the loop reported it (its end).
            public var startNanoseconds: UInt64
            public var reportedAtNanoseconds: UInt64
            public var busyNanoseconds: UInt64
            public var thresholdNanoseconds: UInt64
            /// The callout that ran longest: kind ("none" when no callout ran or the loop's tracer cannot see its
            /// callouts), id, label ("" when none) and duration.
            public var culpritKind: String
            public var culpritID: UInt64
            public var culpritLabel: String
            public var culpritNanoseconds: UInt64

            /// "timer 'render' (52.0ms)", "no callout (the loop's own work)".
            public var culpritDescription: String {
                guard culpritKind != LoopCalloutKind.none.description else { return "no callout (the loop's own work, or not visible to its tracer)" }
                let name = culpritLabel.isEmpty ? "\(culpritKind) \(culpritID)" : "\(culpritKind) '\(culpritLabel)'"
                return "\(name) (\(formatNanoseconds(culpritNanoseconds)))"
            }
        }

        public struct Hang: Codable, Sendable, Equatable {
            public var loopID: UInt64
            public var loopName: String?
            public var iteration: UInt64
            public var reportedAtNanoseconds: UInt64
            /// Busy for at least this long when the watchdog reported it.
            public var busyAtLeastNanoseconds: UInt64
            public var thresholdNanoseconds: UInt64
        }
    }
}

extension TraceSummary.ReportedStalls.Stall {
    /// A `loop_stall` event, reported at `reportedAt` (kept out of the type's body so its memberwise init stays).
    init(_ stall: TraceEvent.LoopStall, reportedAt: UInt64, loopName: String?) {
        self.init(loopID: stall.loopID, loopName: loopName, mode: stall.mode, iteration: stall.iteration,
                  startNanoseconds: stall.start, reportedAtNanoseconds: reportedAt, busyNanoseconds: stall.busy,
                  thresholdNanoseconds: stall.threshold, culpritKind: stall.culpritKind.description,
                  culpritID: stall.culpritID, culpritLabel: stall.culpritLabel, culpritNanoseconds: stall.culpritDuration)
    }
}

/// Collects `loop_stall` and `loop_hang` events for ``TraceSummary/ReportedStalls``: every one counted, the
/// longest `keep` stalls and the first `keep` hangs kept.
struct ReportedStallTracker {
    let keep: Int
    private(set) var summary = TraceSummary.ReportedStalls()
    var isEmpty: Bool { summary.stalls == 0 && summary.hangs == 0 }

    init(keep: Int) { self.keep = max(keep, 1) }

    mutating func stall(_ stall: TraceEvent.LoopStall, at ts: UInt64) {
        summary.stalls += 1
        if !summary.thresholdsNanoseconds.contains(stall.threshold) {
            summary.thresholdsNanoseconds.append(stall.threshold)
            summary.thresholdsNanoseconds.sort()
        }
        summary.worst.keepLargest(TraceSummary.ReportedStalls.Stall(stall, reportedAt: ts, loopName: nil), limit: keep,
                                  by: \.busyNanoseconds)
    }

    mutating func hang(loopID: UInt64, iteration: UInt64, busy: UInt64, threshold: UInt64, at ts: UInt64) {
        summary.hangs += 1
        guard summary.hangReports.count < keep else { return }
        summary.hangReports.append(.init(loopID: loopID, loopName: nil, iteration: iteration, reportedAtNanoseconds: ts,
                                         busyAtLeastNanoseconds: busy, thresholdNanoseconds: threshold))
    }

    /// The summary, longest stall first, loops named.
    func finish(names: [UInt64: (tid: Int32, name: String)]) -> TraceSummary.ReportedStalls? {
        guard !isEmpty else { return nil }
        var result = summary
        result.worst.sort { ($0.busyNanoseconds, $1.reportedAtNanoseconds) > ($1.busyNanoseconds, $0.reportedAtNanoseconds) }
        for index in result.worst.indices { result.worst[index].loopName = names[result.worst[index].loopID]?.name }
        for index in result.hangReports.indices { result.hangReports[index].loopName = names[result.hangReports[index].loopID]?.name }
        return result
    }
}

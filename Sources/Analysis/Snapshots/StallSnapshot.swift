import TraceModel

/// What one stall snapshot holds: each stall the loops reported in it, and the iterations of that loop that led
/// up to it, newest last: `rlctl record --snapshot-on-stall` prints it for every snapshot it took.
public struct StallSnapshot: Codable, Sendable, Equatable {
    public var path: String
    public var events: UInt64
    public var eventsLost: UInt64
    /// The span of the snapshot's events.
    public var firstEventNanoseconds: UInt64?
    public var lastEventNanoseconds: UInt64?
    public var stalls: [Stall] = []

    public struct Stall: Codable, Sendable, Equatable {
        public var report: TraceSummary.ReportedStalls.Stall
        /// The loop's iterations before the stalled one, oldest first (as many as the snapshot holds, at most
        /// ``StallSnapshotReader/iterationsBefore``).
        public var before: [Iteration]
    }

    /// One iteration as the snapshot shows it: its busy time (its time minus its sleeps) and its longest callout.
    public struct Iteration: Codable, Sendable, Equatable {
        public var number: UInt64
        public var startNanoseconds: UInt64
        public var busyNanoseconds: UInt64
        public var sleptNanoseconds: UInt64
        /// "timer 'frame'", nil when no callout ran.
        public var longestCallout: String?
        public var longestCalloutNanoseconds: UInt64
    }
}

/// Reads a snapshot (any trace) and keeps, per loop, its last iterations, so that each `loop_stall` found can
/// be shown with the iterations before it.
public struct StallSnapshotReader {
    /// How many iterations before each stall are kept.
    public static let iterationsBefore = 5

    private struct OpenIteration {
        var iteration: StallSnapshot.Iteration
        var depth: UInt32
        /// Its longest callout so far, to be named once the whole snapshot is read.
        var longest: (kind: CalloutKind, id: UInt64)?
    }

    private struct LoopHistory {
        var done: [OpenIteration] = []
        var open: [OpenIteration] = []
        /// Callouts in progress: kind, id and start.
        var callouts: [(kind: CalloutKind, id: UInt64, start: UInt64)] = []
    }

    private var loops: [UInt64: LoopHistory] = [:]
    private var labels: [UInt64: String] = [:]
    private var names: [UInt64: String] = [:]
    /// The longest callouts of each stall's `before` iterations, in the same order: they are named once the
    /// whole snapshot is read, because a flight recorder's dump of names comes after the events it names.
    private var beforeCallouts: [[(kind: CalloutKind, id: UInt64)?]] = []

    /// Reads `reader` to its end.
    public static func read(_ reader: inout some TraceEventReader, path: String) throws(TraceReadError) -> StallSnapshot {
        var state = StallSnapshotReader()
        var snapshot = StallSnapshot(path: path, events: 0, eventsLost: 0)
        while let event = try reader.next() {
            snapshot.events += 1
            if snapshot.firstEventNanoseconds == nil { snapshot.firstEventNanoseconds = event.timestamp }
            snapshot.lastEventNanoseconds = event.timestamp
            if let stall = state.consume(event) { snapshot.stalls.append(stall) }
        }
        for index in snapshot.stalls.indices {
            let loopID = snapshot.stalls[index].report.loopID
            if snapshot.stalls[index].report.loopName == nil { snapshot.stalls[index].report.loopName = state.names[loopID] }
            for (position, callout) in state.beforeCallouts[index].enumerated() {
                if let callout { snapshot.stalls[index].before[position].longestCallout = state.calloutName(callout.kind, callout.id) }
            }
        }
        snapshot.eventsLost = reader.health.eventsLost
        return snapshot
    }

    private mutating func consume(_ event: TraceEvent) -> StallSnapshot.Stall? {
        let ts = event.timestamp
        switch event.payload {
        case .loopCreate(let loopID, _, let name):
            names[loopID] = name
        case .itemLabel(let id, _, let label):
            labels[id] = label
        case .activity(let activity, let place):
            var history = loops[place.loopID] ?? LoopHistory()
            if activity == .beforeTimers || activity == .exit {
                while let last = history.open.last, last.depth >= place.depth {
                    history.open.removeLast()
                    var done = last
                    let elapsed = ts > done.iteration.startNanoseconds ? ts - done.iteration.startNanoseconds : 0
                    done.iteration.busyNanoseconds = elapsed > done.iteration.sleptNanoseconds ? elapsed - done.iteration.sleptNanoseconds : 0
                    history.done.append(done)
                    if history.done.count > Self.iterationsBefore { history.done.removeFirst() }
                }
            }
            if activity == .beforeTimers {
                history.open.append(OpenIteration(iteration: .init(number: place.iteration, startNanoseconds: ts, busyNanoseconds: 0,
                                                                   sleptNanoseconds: 0, longestCallout: nil, longestCalloutNanoseconds: 0),
                                                  depth: place.depth))
            }
            loops[place.loopID] = history
        case .wakeUp(let loopID, _, let slept):
            guard var history = loops[loopID] else { break }
            for index in history.open.indices { history.open[index].iteration.sleptNanoseconds += slept }
            loops[loopID] = history
        case .timerFireBegin(let loopID, let id, _, _, _, _):
            began(loopID, .timer, id, at: ts)
        case .sourcePerformBegin(let loopID, let id, let kind, _, _):
            began(loopID, CalloutKind(kind), id, at: ts)
        case .blockBegin(let loopID, let id, _):
            began(loopID, .block, id, at: ts)
        case .observerBegin(let loopID, let id, _):
            began(loopID, .observer, id, at: ts)
        case .jobBegin(let loopID, let id, _, _):
            began(loopID, .job, id, at: ts)
        case .mainQueueBegin(let loopID):
            began(loopID, .mainQueue, CalloutKind.mainQueueCalloutID, at: ts)
        case .timerFireEnd(let loopID, let id), .sourcePerformEnd(let loopID, let id), .blockEnd(let loopID, let id),
             .observerEnd(let loopID, let id), .jobEnd(let loopID, let id):
            ended(loopID, id, at: ts)
        case .mainQueueEnd(let loopID):
            ended(loopID, CalloutKind.mainQueueCalloutID, at: ts)
        case .loopStall(let stall):
            let report = TraceSummary.ReportedStalls.Stall(stall, reportedAt: ts, loopName: names[stall.loopID])
            let before = (loops[stall.loopID]?.done ?? []).filter { $0.iteration.number != stall.iteration && $0.iteration.startNanoseconds < stall.start }
                .suffix(Self.iterationsBefore)
            beforeCallouts.append(before.map(\.longest))
            return StallSnapshot.Stall(report: report, before: before.map(\.iteration))
        default:
            break
        }
        return nil
    }

    private mutating func began(_ loopID: UInt64, _ kind: CalloutKind, _ id: UInt64, at ts: UInt64) {
        loops[loopID, default: LoopHistory()].callouts.append((kind, id, ts))
    }

    /// A callout ended: it becomes its innermost open iteration's longest if it ran longest.
    private mutating func ended(_ loopID: UInt64, _ id: UInt64, at ts: UInt64) {
        guard var history = loops[loopID], let index = history.callouts.lastIndex(where: { $0.id == id }) else { return }
        let callout = history.callouts.remove(at: index)
        let duration = ts > callout.start ? ts - callout.start : 0
        if let last = history.open.indices.last, duration >= history.open[last].iteration.longestCalloutNanoseconds {
            history.open[last].iteration.longestCallout = calloutName(callout.kind, id)
            history.open[last].iteration.longestCalloutNanoseconds = duration
            history.open[last].longest = (callout.kind, id)
        }
        loops[loopID] = history
    }

    private func calloutName(_ kind: CalloutKind, _ id: UInt64) -> String {
        let label = kind.isItem ? labels[id] : nil
        return label.map { "\(kind) '\($0)'" } ?? (kind == .mainQueue ? "main queue" : "\(kind) \(id)")
    }
}

extension StallSnapshot {
    /// The snapshot as text: where it is, then `focus` (the stall that took it; every stall when nil) and the
    /// iterations before it, and how many other stalls it holds.
    public func text(number: Int, of count: Int, focus: Stall? = nil) -> [String] {
        let span = (firstEventNanoseconds.flatMap { first in lastEventNanoseconds.map { $0 > first ? $0 - first : 0 } }).map { formatNanoseconds($0) } ?? "no events"
        var out = ["snapshot \(number) of \(count): \(path) (\(events) events over \(span), \(eventsLost == 0 ? "none lost" : "\(eventsLost) LOST"))"]
        guard !stalls.isEmpty else {
            out.append("  no stall in it: the snapshot was taken, but its stall event did not make it into the ring (raise --subbuf-size)")
            return out
        }
        let shown = focus.map { [$0] } ?? stalls
        for stall in shown {
            let r = stall.report
            let origin = firstEventNanoseconds ?? r.startNanoseconds
            out.append("  stall: \(formatNanoseconds(r.busyNanoseconds)) busy in \(SummaryReport.loopName(r.loopID, r.loopName)), iteration \(r.iteration), mode \(r.mode), at +\(formatNanoseconds(r.startNanoseconds > origin ? r.startNanoseconds - origin : 0)) in the snapshot")
            out.append("    culprit: \(r.culpritDescription)")
            if stall.before.isEmpty {
                out.append("    before it: no earlier iteration of this loop in the snapshot")
            } else {
                out.append("    before it (oldest first):")
                for iteration in stall.before {
                    let longest = iteration.longestCallout.map { "\($0) \(formatNanoseconds(iteration.longestCalloutNanoseconds))" } ?? "no callout"
                    out.append("      iteration \(iteration.number): busy \(formatNanoseconds(iteration.busyNanoseconds)), slept \(formatNanoseconds(iteration.sleptNanoseconds)), longest: \(longest)")
                }
            }
        }
        let others = stalls.filter { stall in !shown.contains(stall) }
        if !others.isEmpty {
            out.append("  also in it: \(others.count) other stall\(others.count == 1 ? "" : "s") (iteration\(others.count == 1 ? "" : "s") \(others.map { "\($0.report.iteration)" }.joined(separator: ", ")); rlctl summarize lists them)")
        }
        return out
    }
}

import TraceModel

extension TraceSummary {
    /// One loop of any kind, with the figures every kind has under one name: what the summary's `allLoops` lists,
    /// so that a script reads every loop the same way. A figure a kind cannot show is nil, and
    /// ``allLoopsNotAvailable`` says why once per kind; the kind's own figures stay where they were (`detailsAt`).
    public struct LoopOfAnyKind: Codable, Sendable, Equatable {
        public var kind: LoopKind
        /// Where the kind's own figures are in the summary: `loops[2]`, `nio.loops[0]`, `waits.loops[1]`.
        public var detailsAt: String
        public var processID: Int32?
        public var process: String?
        public var threadID: Int32?
        /// The loop's id in the trace (nil for a wait loop, which is a thread and a wait target).
        public var loopID: UInt64?
        public var name: String?
        /// The time the loop's figures cover.
        public var durationNanoseconds: UInt64
        public var iterations: UInt64
        /// busy ÷ (busy + asleep).
        public var utilization: Double
        public var busyNanoseconds: UInt64
        public var stalls: UInt64
        public var worstStallNanoseconds: UInt64?
        /// The worst p99 of the loop's wake-up latencies (RunLoopCore: timer, source, block, port, job; a wait
        /// loop: its waits' lateness past their timeouts); nil when none was measured or the kind has none.
        public var wakeLatencyP99Nanoseconds: UInt64?
        /// Events lost in windows overlapping the loop's activity: its figures may undercount.
        public var lostEventsAffecting: UInt64
        /// The kernel's side (nil, and left out of the JSON, without a kernel view: the summary's `kernel.status`
        /// says why when rlctl tried).
        public var kernel: KernelFacet?

        // Every figure is written, one the loop does not have as null: a script finds the same keys on every loop,
        // and `allLoopsNotAvailable` says why.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(kind, forKey: .kind)
            try c.encode(detailsAt, forKey: .detailsAt)
            try c.encode(processID, forKey: .processID)
            try c.encode(process, forKey: .process)
            try c.encode(threadID, forKey: .threadID)
            try c.encode(loopID, forKey: .loopID)
            try c.encode(name, forKey: .name)
            try c.encode(durationNanoseconds, forKey: .durationNanoseconds)
            try c.encode(iterations, forKey: .iterations)
            try c.encode(utilization, forKey: .utilization)
            try c.encode(busyNanoseconds, forKey: .busyNanoseconds)
            try c.encode(stalls, forKey: .stalls)
            try c.encode(worstStallNanoseconds, forKey: .worstStallNanoseconds)
            try c.encode(wakeLatencyP99Nanoseconds, forKey: .wakeLatencyP99Nanoseconds)
            try c.encode(lostEventsAffecting, forKey: .lostEventsAffecting)
            // Absent without a kernel view, as everywhere in the summary (docs/kernel-causes.md, "JSON").
            try c.encodeIfPresent(kernel, forKey: .kernel)
        }
    }

    /// Why a kind of loop has no figure for a field of ``LoopOfAnyKind``, written once here rather than on each loop.
    static let fieldsNotAvailable: [LoopKind: [String: String]] = [
        .runLoopCore: ["process": "loop events do not carry the process's name (wait loops have it from wait_thread)"],
        .foundation: ["process": "loop events do not carry the process's name (wait loops have it from wait_thread)",
                      "wakeLatencyP99Nanoseconds": "a CFRunLoop observer sees the six activities only: no timers or wake-up latencies"],
        .nio: ["process": "loop events do not carry the process's name (wait loops have it from wait_thread)",
               "wakeLatencyP99Nanoseconds": "NIO does not report per-task lateness (see the lateness probe, nio.loops[].probe)"],
        .wait: ["loopID": "a wait loop is a thread and a wait target (waits.loops[].target), with no loop id"],
    ]
    /// Why a loop has no process id although its kind has one, said for the kinds that have such loops.
    static let processIDNotInTrace = "the trace carries no process id for some loops of this kind (an embedded recorder's trace, which is one process's and does not name it per event; an LTTng session without the vpid context; a wait loop whose wait_thread was lost)"

    /// Every loop of the summary in one list: RunLoopCore and Foundation loops (`loops`), NIO loops (`nio.loops`),
    /// wait loops (`waits.loops`), in that order.
    public var loopsOfEveryKind: [LoopOfAnyKind] {
        var all: [LoopOfAnyKind] = []
        for (index, loop) in loops.enumerated() {
            let foundation = loop.adapter == LoopAdapter.foundation.description
            let wake = loop.wakeLatency
            let latencies = [wake.timer, wake.source, wake.block, wake.port, wake.jobOrEmpty].filter { $0.count > 0 }
            all.append(LoopOfAnyKind(kind: foundation ? .foundation : .runLoopCore, detailsAt: "loops[\(index)]",
                                     processID: loop.processID, threadID: loop.threadID,
                                     loopID: loop.loopID, name: loop.name, durationNanoseconds: loop.wallNanoseconds,
                                     iterations: loop.iterations, utilization: loop.utilization, busyNanoseconds: loop.busyNanoseconds,
                                     stalls: loop.stalls, worstStallNanoseconds: loop.worstStalls.map(\.busyNanoseconds).max(),
                                     wakeLatencyP99Nanoseconds: foundation ? nil : latencies.map(\.p99).max(),
                                     lostEventsAffecting: loop.lostEventsAffecting, kernel: loop.kernel))
        }
        for (index, loop) in (nio?.loops ?? []).enumerated() {
            all.append(LoopOfAnyKind(kind: .nio, detailsAt: "nio.loops[\(index)]", processID: loop.processID, threadID: loop.threadID,
                                     loopID: loop.loopID,
                                     name: loop.name, durationNanoseconds: loop.busyNanoseconds &+ loop.sleepNanoseconds,
                                     iterations: loop.ticks, utilization: loop.utilization, busyNanoseconds: loop.busyNanoseconds,
                                     stalls: loop.stalls, worstStallNanoseconds: loop.worstStalls.map(\.busyNanoseconds).max(),
                                     lostEventsAffecting: loop.lostEventsAffecting, kernel: loop.kernel))
        }
        for (index, loop) in (waits?.loops ?? []).enumerated() {
            all.append(LoopOfAnyKind(kind: .wait, detailsAt: "waits.loops[\(index)]", processID: loop.pid, process: loop.process,
                                     threadID: loop.threadID, name: loop.name, durationNanoseconds: loop.spanNanoseconds,
                                     iterations: loop.iterations, utilization: loop.utilization, busyNanoseconds: loop.busyNanoseconds,
                                     stalls: loop.stalls, worstStallNanoseconds: loop.worstStalls.map(\.busyNanoseconds).max(),
                                     wakeLatencyP99Nanoseconds: loop.lateness.count > 0 ? loop.lateness.p99 : nil,
                                     lostEventsAffecting: loop.lostEventsAffecting, kernel: loop.kernel))
        }
        return all
    }

    /// For the kinds in ``loopsOfEveryKind``: field → kind → why that kind has no figure for it.
    public var loopFieldsNotAvailable: [String: [String: String]] {
        var reasons: [String: [String: String]] = [:]
        let all = loopsOfEveryKind
        for kind in Set(all.map(\.kind)) {
            for (field, reason) in Self.fieldsNotAvailable[kind] ?? [:] { reasons[field, default: [:]][kind.rawValue] = reason }
        }
        for kind in Set(all.filter { $0.processID == nil }.map(\.kind)) {
            reasons["processID", default: [:]][kind.rawValue] = Self.processIDNotInTrace
        }
        return reasons
    }
}

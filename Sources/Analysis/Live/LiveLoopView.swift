import Foundation
import TraceModel

/// One loop's figures over the last interval of a live view (`rlctl top`): one row of the table.
public struct LiveLoopRow: Codable, Sendable, Equatable {
    public var host: String
    public var session: String
    /// The process (0 when the session does not carry `vpid`).
    public var processID: Int32
    public var threadID: Int32
    /// The program's command name (`/proc/PID/comm`), when the process is on this machine; nil for another
    /// host's, whose name the live session does not carry.
    public var program: String? = nil
    public var loopID: UInt64
    /// The loop's name (`loop_create`), when its creation was seen.
    public var name: String?
    /// RunLoopCore, Foundation, NIO or wait (any program's loop, through the wait interposer).
    public var kind: String
    /// Busy ÷ (busy + asleep) over the interval.
    public var utilization: Double
    public var iterationsPerSecond: Double
    /// The worst p99 of the loop's wake-up latencies in the interval, as the summary's `allLoops` has it
    /// (RunLoopCore: timer, source, block, port, job; a wait loop: its waits' lateness past their timeouts); nil
    /// when none was measured, or the kind has none (NIO, Foundation).
    public var wakeLatencyP99Nanoseconds: UInt64?
    /// The busiest iteration over the stall threshold in the interval, nil when none passed it.
    public var worstStallNanoseconds: UInt64?
    /// Events the tracer lost in the interval, in this loop's session (losses are per stream, not per loop).
    public var lostEvents: UInt64
    /// What the interval counted, for running totals (`rlctl top --serve`): iterations (NIO: ticks), busy time,
    /// the time its iterations covered (busy + asleep), and stalls.
    public var iterations: UInt64 = 0
    public var busyNanoseconds: UInt64 = 0
    public var coveredNanoseconds: UInt64 = 0
    public var stalls: UInt64 = 0
    /// The share of the interval the loop's thread was runnable but not running (waiting for a CPU, throttled
    /// included), from the kernel view; nil without one (the interval says why once).
    public var runQueueShare: Double? = nil
    /// Of that, the share its cgroup was out of CPU quota (throttled).
    public var throttledShare: Double? = nil
    /// The same as times: runnable but not running, and of that throttled, over the part of the interval the
    /// kernel view followed the loop's process.
    public var runQueueNanoseconds: UInt64? = nil
    public var throttledNanoseconds: UInt64? = nil
    /// Records the kernel recorder lost in the interval, nil without a kernel view: a share computed over a window
    /// with losses is a lower bound.
    public var kernelLostRecords: UInt64? = nil
    /// Where the time of the late wake-ups the interval explained went, by cause; nil without a kernel view of the
    /// loop (NIO loops, which have no wake-up to be late, have none either).
    public var lateTime: TraceSummary.LateTimeByCause? = nil
}

extension LiveLoopRow {
    /// A row with no figure but its utilization and losses; the others are set one by one (the exporter's tests).
    public init(host: String, session: String, processID: Int32, threadID: Int32, loopID: UInt64, name: String?, kind: String,
                utilization: Double, lostEvents: UInt64) {
        self.init(host: host, session: session, processID: processID, threadID: threadID, loopID: loopID, name: name, kind: kind,
                  utilization: utilization, iterationsPerSecond: 0, wakeLatencyP99Nanoseconds: nil, worstStallNanoseconds: nil,
                  lostEvents: lostEvents)
    }

    mutating func count(_ counted: LiveLoopSource.Counted) {
        iterations = counted.iterations
        busyNanoseconds = counted.busy
        coveredNanoseconds = counted.covered
        stalls = counted.stalls
    }
}

/// What `rlctl top` sorts by.
public enum LiveLoopOrder: String, CaseIterable, Sendable {
    case utilization, iterations, latency, stall, lost, runqueue

    public func sorted(_ rows: [LiveLoopRow]) -> [LiveLoopRow] {
        rows.sorted { a, b in
            let (x, y) = (key(a), key(b))
            return x != y ? x > y : (a.host, a.processID, a.loopID) < (b.host, b.processID, b.loopID)
        }
    }

    private func key(_ row: LiveLoopRow) -> Double {
        switch self {
        case .utilization: return row.utilization
        case .iterations: return row.iterationsPerSecond
        case .latency: return Double(row.wakeLatencyP99Nanoseconds ?? 0)
        case .stall: return Double(row.worstStallNanoseconds ?? 0)
        case .lost: return Double(row.lostEvents) + Double(row.kernelLostRecords ?? 0)
        case .runqueue: return row.runQueueShare ?? -1
        }
    }
}

/// The events of one live source (an LTTng live session), shown interval by interval. Two summaries per process:
/// one of everything since the view attached, whose busy time, wall time, iterations and stalls the rows take
/// the difference of from one interval to the next (an iteration under way at an interval's end belongs to the
/// interval it ends in, so a long stall is never cut in two and lost; any program's wait loops alike), and one of
/// the interval alone, for the wake-up latencies (each measured by one callout event) and the NIO loops (each tick
/// one event).
/// Names and kinds, which come once at a loop's start, are kept. Fed by one reader thread while the view's
/// thread takes intervals: every method takes the lock.
public final class LiveLoopSource: @unchecked Sendable {
    public let host: String
    public let session: String
    private let intervalOptions: TraceSummarizer.Options
    /// The running totals' summarizers keep no distribution; the interval's keep the wake-up latencies only.
    private let totalsOptions: TraceSummarizer.Options
    private let lock = NSLock()
    private var cumulative: [Int32: TraceSummarizer] = [:]
    private var interval: [Int32: TraceSummarizer] = [:]
    private var previous: [LoopKey: Totals] = [:]
    private var lostInInterval: UInt64 = 0
    private var names: [LoopKey: String] = [:]
    private var kinds: [LoopKey: String] = [:]
    /// When the source's reading ended (the session was destroyed), or why it failed.
    public private(set) var ended: String?
    /// Whether its reader has attached: the view's intervals hold its events from then.
    public private(set) var attached = false

    struct LoopKey: Hashable {
        var processID: Int32
        var loopID: UInt64
    }

    /// A loop's running totals at the end of the last interval.
    struct Totals {
        var busy: UInt64 = 0
        var wall: UInt64 = 0
        var iterations: UInt64 = 0
        var stalls: UInt64 = 0
        /// The latest stall already shown (stalls are kept in the order they happen): later ones are new.
        var shownStallAt: UInt64?
        /// Where its late wake-ups' time went, nil without a kernel view of it.
        var late: TraceSummary.LateTimeByCause?
    }

    /// What one interval counted of a loop.
    struct Counted {
        var iterations: UInt64
        var busy: UInt64
        var covered: UInt64
        var stalls: UInt64

        init(iterations: UInt64, busy: UInt64, covered: UInt64, stalls: UInt64) {
            (self.iterations, self.busy, self.covered, self.stalls) = (iterations, busy, covered, stalls)
        }

        init(since before: Totals, now: Totals) {
            self.init(iterations: now.iterations &- before.iterations, busy: now.busy &- before.busy,
                      covered: now.wall &- before.wall, stalls: now.stalls &- before.stalls)
        }
    }

    public init(host: String, session: String, stallThresholdNanoseconds: UInt64) {
        self.host = host
        self.session = session
        var options = TraceSummarizer.Options()
        options.stallThreshold = stallThresholdNanoseconds
        options.keep = 1
        // The interval's worst stall is looked for among the stalls kept since the view attached.
        options.stallsPerLoop = 4096
        intervalOptions = { var o = options; o.figures = .wakeLatencies; return o }()
        totalsOptions = { var o = options; o.figures = .totals; o.lateTimeByCause = true; return o }()
    }

    // ===== the kernel view's events, merged =====
    //
    // A late wake-up's causes come from the loop's events and the kernel's together, in time order, as in a
    // recorded trace. The two reach `rlctl top` apart and late by different amounts (a recording's packets every few
    // hundred ms, the kernel recorder's records within ``LiveKernelColumn/lag``), so a process the kernel view
    // follows has both held here and handed to its running totals only up to the moment both have passed.

    /// A process the kernel view follows: its events not yet handed to its running totals.
    private struct Merging {
        /// Runs of its loop events as they came (slices of the reader's batches: held without a copy of each).
        var loop: [ArraySlice<TraceEvent>] = []
        var kernel: [TraceEvent] = []
        /// The latest of its loop events seen (they come in time order).
        var loopThrough: UInt64 = 0
    }

    private var merging: [Int32: Merging] = [:]
    /// The kernel recorder's events are all here up to this moment.
    private var kernelThrough: UInt64 = 0
    /// Kernel events held for one process at most: past it the oldest are dropped, and said lost (a process whose
    /// loop events stopped coming while its threads kept being switched).
    static let kernelEventsHeld = 200_000

    /// The kernel recorder's events (every followed process's, in time order), complete up to `completeThrough`:
    /// a process's `kernel_begin` starts the merging of its events; the events of a process with none are not
    /// this source's. A loss of the kernel recorder concerns every process.
    public func consumeKernel(_ events: [TraceEvent], completeThrough: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        for event in events {
            switch event.payload {
            case .kernelBegin(let pid, _):
                guard cumulative[pid] != nil, merging[pid] == nil else { continue }
                merging[pid] = Merging()
                merging[pid]!.kernel.append(event)
            case .kernelLost:
                for pid in Array(merging.keys) { merging[pid]!.kernel.append(event) }
            case .kernelTask:
                // Names of the tasks that held a CPU: the counters do not name them.
                continue
            default:
                guard merging[event.processID] != nil else { continue }
                merging[event.processID]!.kernel.append(event)
            }
        }
        kernelThrough = max(kernelThrough, completeThrough)
        for pid in Array(merging.keys) { release(pid) }
    }

    /// Hands process `pid`'s held events to its running totals in time order, up to where both streams are
    /// complete.
    private func release(_ pid: Int32, final: Bool = false) {
        // (Taken out while it changes: the arrays are not copied.)
        guard let index = cumulative.index(forKey: pid), var m = merging.removeValue(forKey: pid) else { return }
        if m.kernel.count > Self.kernelEventsHeld {
            let dropped = m.kernel.count - Self.kernelEventsHeld / 2
            let from = m.kernel[0].timestamp
            m.kernel.removeFirst(dropped)
            let at = m.kernel[0].timestamp
            m.kernel.insert(TraceEvent(timestamp: at, threadID: 0, processID: pid, payload: .kernelLost(records: UInt64(dropped), from: from)), at: 0)
        }
        // At the end of the recording, everything held: no more of either side is coming.
        let limit = final ? .max : min(kernelThrough, m.loopThrough)
        var run = 0, k = 0
        while true {
            while run < m.loop.count && m.loop[run].isEmpty { run += 1 }
            let loopNext = run < m.loop.count && m.loop[run][m.loop[run].startIndex].timestamp <= limit
                ? m.loop[run][m.loop[run].startIndex].timestamp : nil
            let kernelNext = k < m.kernel.count && m.kernel[k].timestamp <= limit ? m.kernel[k].timestamp : nil
            // At one time the kernel's first: a thread is back on its CPU before its wait returns.
            if let kt = kernelNext, loopNext.map({ kt <= $0 }) ?? true {
                cumulative.values[index].consume(m.kernel[k])
                k += 1
            } else if loopNext != nil {
                cumulative.values[index].consume(m.loop[run][m.loop[run].startIndex])
                m.loop[run].removeFirst()
            } else {
                break
            }
        }
        m.loop.removeFirst(run)
        m.kernel.removeFirst(k)
        merging[pid] = m
    }

    /// Events in order, under one lock; a run of one process's events finds its summarizers once (and, for a
    /// process whose events wait for the kernel's, is held in one append).
    public func consume(_ events: [TraceEvent]) {
        lock.lock()
        defer { lock.unlock() }
        var start = events.startIndex
        var heldAny = false
        while start < events.endIndex {
            let process = events[start].processID
            var end = start + 1
            while end < events.endIndex && events[end].processID == process { end += 1 }
            heldAny = consume(events[start..<end], of: process) || heldAny
            start = end
        }
        if heldAny { for pid in Array(merging.keys) { release(pid) } }
    }

    /// One run of process `pid`'s events; whether some were held for the kernel's.
    private func consume(_ run: ArraySlice<TraceEvent>, of pid: Int32) -> Bool {
        let recent = interval.index(forKey: pid) ?? {
            interval[pid] = TraceSummarizer(options: intervalOptions)
            return interval.index(forKey: pid)!
        }()
        if cumulative[pid] == nil { cumulative[pid] = TraceSummarizer(options: totalsOptions) }
        let totals = cumulative.index(forKey: pid)!
        guard !merging.isEmpty, var m = merging.removeValue(forKey: pid) else {
            for event in run {
                remember(event)
                cumulative.values[totals].consume(event)
                interval.values[recent].consume(event)
            }
            return false
        }
        for event in run {
            remember(event)
            interval.values[recent].consume(event)
        }
        m.loopThrough = max(m.loopThrough, run[run.endIndex - 1].timestamp)
        var rest = run
        if m.loop.isEmpty {
            // Usually the kernel's side of these moments is in already (its records come within ``LiveKernelColumn/lag``,
            // a recording's packets later): the run goes on to the totals at once, the kernel's events merged in.
            var k = 0, i = run.startIndex
            while i < run.endIndex && run[i].timestamp <= kernelThrough {
                let time = run[i].timestamp
                while k < m.kernel.count && m.kernel[k].timestamp <= time {
                    cumulative.values[totals].consume(m.kernel[k])
                    k += 1
                }
                cumulative.values[totals].consume(run[i])
                i += 1
            }
            m.kernel.removeFirst(k)
            rest = run[i...]
        }
        if !rest.isEmpty { m.loop.append(rest) }
        merging[pid] = m
        return !rest.isEmpty
    }

    /// An event from before the view attached that names a loop (`loop_create`, `loop_adapted`, `wait_thread`):
    /// kept for the rows, not counted in any figure.
    public func learnName(_ event: TraceEvent) {
        // A wait thread's naming (its process and names: `record --any`) goes to the summaries, which keep it for
        // the wait loops' rows and count nothing from it.
        if case .waitThread = event.payload { return consume([event]) }
        lock.lock()
        remember(event)
        lock.unlock()
    }

    private func remember(_ event: TraceEvent) {
        switch event.payload {
        case .loopCreate(let loopID, _, let name):
            names[LoopKey(processID: event.processID, loopID: loopID)] = name
        case .loopAdapted(let loopID, let adapter, _):
            kinds[LoopKey(processID: event.processID, loopID: loopID)] = (adapter == .nio ? LoopKind.nio : .foundation).rawValue
        default:
            break
        }
    }

    public func noteLoss(events: UInt64) {
        lock.lock()
        lostInInterval = lostInInterval.addingReportingOverflow(events).overflow ? .max : lostInInterval + events
        lock.unlock()
    }

    /// The recording ended: what was held for the kernel's records goes into the totals now (a late wake-up whose
    /// kernel records are not in reads as unexplained, and is not counted), for the interval that ends next.
    public func end(_ why: String) {
        lock.lock()
        ended = why
        for pid in Array(merging.keys) { release(pid, final: true) }
        lock.unlock()
    }

    public func markAttached() {
        lock.lock()
        attached = true
        lock.unlock()
    }

    var isSettled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return attached || ended != nil
    }

    /// The rows of the interval that ends now, and a fresh interval. Rates are over the time each loop's own
    /// events span, not over the wall interval: a live session arrives in flushes (every 500 ms with record
    /// --relayd), so an interval may hold one flush more or less.
    public func takeInterval() -> [LiveLoopRow] {
        lock.lock()
        defer { lock.unlock() }
        let lost = lostInInterval
        lostInInterval = 0
        let taken = interval
        interval = [:]
        var rows: [LiveLoopRow] = []
        for (processID, summarizer) in cumulative {
            let whole = summarizer.finish(health: TraceHealth())
            let recent = taken[processID]?.finish(health: TraceHealth())
            func row(_ loopID: UInt64, thread: Int32, kind: String, utilization: Double, perSecond: Double,
                     latency: UInt64?, stall: UInt64?, counted: Counted, late: TraceSummary.LateTimeByCause? = nil) -> LiveLoopRow {
                let key = LoopKey(processID: processID, loopID: loopID)
                var row = LiveLoopRow(host: host, session: session, processID: processID, threadID: thread, loopID: loopID,
                                      name: names[key], kind: kinds[key] ?? kind, utilization: utilization,
                                      iterationsPerSecond: perSecond, wakeLatencyP99Nanoseconds: latency,
                                      worstStallNanoseconds: stall, lostEvents: lost)
                row.count(counted)
                row.lateTime = late
                return row
            }
            for loop in whole.loops {
                let key = LoopKey(processID: processID, loopID: loop.loopID ?? 0)
                let before = previous[key] ?? Totals()
                let stalls = loop.worstStalls.filter { stall in before.shownStallAt.map { stall.atNanoseconds > $0 } ?? true }
                let now = Totals(busy: loop.busyNanoseconds, wall: loop.wallNanoseconds, iterations: loop.iterations, stalls: loop.stalls,
                                 shownStallAt: loop.worstStalls.map(\.atNanoseconds).max() ?? before.shownStallAt,
                                 late: loop.kernel.map { TraceSummary.LateTimeByCause($0.lateWakeUps) })
                previous[key] = now
                let inInterval = recent?.loops.first { $0.loopID == loop.loopID }
                let wall = now.wall &- before.wall
                guard wall > 0 && wall <= now.wall || inInterval != nil else { continue }
                let busy = now.busy &- before.busy
                let wake = inInterval?.wakeLatency
                let latencies = [wake?.timer, wake?.source, wake?.block, wake?.port, wake?.job].compactMap { $0 }.filter { $0.count > 0 }
                rows.append(row(loop.loopID ?? 0, thread: loop.threadID ?? 0, kind: LoopKind.runLoopCore.rawValue,
                                utilization: wall > 0 ? min(1, Double(busy) / Double(wall)) : 0,
                                perSecond: wall > 0 ? Double(now.iterations &- before.iterations) * 1e9 / Double(wall) : 0,
                                latency: latencies.map(\.p99).max(), stall: stalls.map(\.busyNanoseconds).max(),
                                counted: Counted(since: before, now: now), late: now.late.map { $0.since(before.late ?? .init()) }))
            }
            for loop in recent?.nio?.loops ?? [] {
                rows.append(row(loop.loopID, thread: loop.threadID, kind: LoopKind.nio.rawValue, utilization: loop.utilization,
                                perSecond: loop.ticksPerSecond, latency: nil, stall: loop.worstStalls.map(\.busyNanoseconds).max(),
                                counted: Counted(iterations: loop.ticks, busy: loop.busyNanoseconds,
                                                 covered: loop.busyNanoseconds &+ loop.sleepNanoseconds, stalls: loop.stalls)))
            }
            // Any program's wait loops, differenced like RunLoopCore's: busy + sleep is the time their iterations
            // cover (a wait loop's utilization is busy ÷ (busy + sleep)).
            for loop in whole.waits?.loops ?? [] {
                let key = LoopKey(processID: loop.pid ?? processID,
                                  loopID: UInt64(UInt32(bitPattern: loop.threadID)) << 32 | UInt64(UInt32(bitPattern: loop.target)))
                let before = previous[key] ?? Totals()
                let stalls = loop.worstStalls.filter { stall in before.shownStallAt.map { stall.atNanoseconds > $0 } ?? true }
                let now = Totals(busy: loop.busyNanoseconds, wall: loop.busyNanoseconds &+ loop.sleepNanoseconds, iterations: loop.iterations,
                                 stalls: loop.stalls, shownStallAt: loop.worstStalls.map(\.atNanoseconds).max() ?? before.shownStallAt,
                                 late: loop.kernel.map { TraceSummary.LateTimeByCause($0.lateWakeUps) })
                previous[key] = now
                let wall = now.wall &- before.wall
                guard wall > 0 && wall <= now.wall else { continue }
                // The interval's own waits: how late past their timeouts they woke (Node's event-loop lag, seen
                // from its waits).
                let lateness = recent?.waits?.loops.first { $0.threadID == loop.threadID && $0.target == loop.target }?.lateness
                var waitRow = LiveLoopRow(host: host, session: session, processID: key.processID, threadID: loop.threadID,
                                          loopID: UInt64(bitPattern: Int64(loop.target)), name: loop.thread ?? loop.process, kind: LoopKind.wait.rawValue,
                                          utilization: min(1, Double(now.busy &- before.busy) / Double(wall)),
                                          iterationsPerSecond: Double(now.iterations &- before.iterations) * 1e9 / Double(wall),
                                          wakeLatencyP99Nanoseconds: lateness.flatMap { $0.count > 0 ? $0.p99 : nil },
                                          worstStallNanoseconds: stalls.map(\.busyNanoseconds).max(), lostEvents: lost)
                waitRow.count(Counted(since: before, now: now))
                waitRow.lateTime = now.late.map { $0.since(before.late ?? .init()) }
                rows.append(waitRow)
            }
        }
        return rows
    }
}

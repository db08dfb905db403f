import TraceModel

extension Array {
    /// Adds `item` while fewer than `limit` are kept, else in place of the smallest by `key` if it is larger: the
    /// worst few of a stream, in memory that does not grow with it.
    mutating func keepLargest(_ item: Element, limit: Int, by key: (Element) -> UInt64) {
        if count < limit {
            append(item)
        } else if let index = indices.min(by: { key(self[$0]) < key(self[$1]) }), key(self[index]) < key(item) {
            self[index] = item
        }
    }
}

/// EINTR on Linux: a wait that a signal interrupted.
private let interruptedError: Int32 = 4

/// One wait loop's running totals while a trace streams by: a (thread, call family, target) of any program
/// (`rlctl record --any`), fed each wait call once it ended. See ``TraceSummary/WaitLoopSummary`` for what an
/// iteration is.
struct WaitLoopTracker {
    let threadID: Int32
    let epoll: Bool
    let target: Int32
    /// Where its sleeps go over time, when the summary draws a timeline.
    var timeline: TimelineRecorder?
    var timelineKey: TimelineRecorder.Key { .wait(threadID: threadID, target: target, epoll: epoll) }
    private let options: TraceSummarizer.Options

    private(set) var firstTimestamp: UInt64 = .max
    private(set) var lastTimestamp: UInt64 = 0
    /// Calls per WaitCall raw value: a fixed array, no dictionary per call.
    private var calls = [UInt64](repeating: 0, count: WaitCall.allCases.count)
    private(set) var waits: UInt64 = 0
    private(set) var iterations: UInt64 = 0
    private(set) var busy: UInt64 = 0
    private(set) var slept: UInt64 = 0
    fileprivate(set) var busyPerIteration = LatencyHistogram()
    fileprivate(set) var sleeps = LatencyHistogram()
    fileprivate(set) var lateness = LatencyHistogram()
    fileprivate(set) var readyPerWakeUp = LatencyHistogram()
    private(set) var causes = TraceSummary.WakeCauses()
    private(set) var lateWakeUps: UInt64 = 0
    /// Blocking waits of exactly 1 ms that began right after a longer whole-millisecond wait of the loop (or its
    /// wait set) timed out (``WaitTracking/RestMatcher``).
    fileprivate(set) var millisecondRests: UInt64 = 0
    /// Whether every blocking wait was `epoll_pwait` for 128 events: Go's netpoller (its `netpoll` polls with an
    /// array of 128). With a wait set shared by threads, that is the shape that says the rests are Go's rounding.
    fileprivate(set) var netpollerShaped = true
    private(set) var stalls: UInt64 = 0
    private var worstStalls: [TraceSummary.WaitStall] = []
    fileprivate(set) var chainBreaks: UInt64 = 0
    /// Whether the recording began while the thread was inside a wait of this loop.
    fileprivate(set) var waitingAtStart = false
    /// Whether it began while the thread was outside its waits (its first iteration then counts from there).
    fileprivate(set) var busyAtStart = false
    /// Whether the last iteration is one no wait ended (``summary(identity:waitingAtEnd:)``).
    private var trailingIteration = false
    /// The process whose threads share this loop's wait set (an epoll descriptor several of its threads wait on
    /// in turn: Go's netpoller, tokio's workers), set once a second thread waited on it.
    fileprivate(set) var sharedBy: Int32?
    /// Time blocked outside the wait while the set was shared: another thread held the loop (not busy time).
    private(set) var parked: UInt64 = 0
    /// Whether some of that time could not be told apart (no kernel view of the iteration): busy includes it then.
    private(set) var parkedUnseparated = false
    /// The kernel's side of its iterations and wake-ups (nothing without a kernel view).
    private(set) var kernel: KernelFacetRecorder

    /// The end of the loop's last wait, and the thread's chain epoch then: the next iteration's busy time is counted
    /// from there only if nothing broke the thread's chain since (see ``WaitTracking``).
    fileprivate var lastEnd: (at: UInt64, epoch: UInt64)?
    /// An empty zero-timeout check whose iteration waits for the loop's next call: libuv with idle-time metrics
    /// (as Node runs it) checks with a zero timeout before each blocking wait, and the two are one turn of its loop.
    /// `busy` is the iteration's busy time before the check; the check's own time is `check`.
    private var heldCheck: (from: UInt64, busy: UInt64, check: UInt64, end: UInt64)?
    /// The longest gap between a held check and the next wait that still makes them one iteration: libuv's is a
    /// few hundred ns; a loop that does its work between the two is a loop of checks, each its own iteration.
    static let checkAndWaitGap: UInt64 = 100_000

    init(threadID: Int32, epoll: Bool, target: Int32, options: TraceSummarizer.Options, kernel: KernelViews) {
        self.threadID = threadID
        self.kernel = KernelFacetRecorder(threadID: threadID, views: kernel)
        self.epoll = epoll
        self.target = target
        self.options = options
    }

    /// The loop's span starts at `ts` at the latest (its first iteration began there, before its first wait).
    fileprivate mutating func started(at ts: UInt64) {
        if ts < firstTimestamp { firstTimestamp = ts }
    }

    /// Busy time before a wait that begins at `begin` on a thread at chain epoch `epoch`: nil when the chain is
    /// broken (no wait of this loop ended before, or one did but events of the thread may be missing since).
    fileprivate mutating func busyBefore(_ begin: UInt64, epoch: UInt64) -> (from: UInt64, busy: UInt64)? {
        guard let last = lastEnd else { return nil }
        guard last.epoch == epoch else {
            chainBreaks += 1
            lastEnd = nil
            return nil
        }
        return (last.at, begin >= last.at ? begin - last.at : 0)
    }

    /// A wait call that ran from `begin` to `end`, with the busy time of the iteration it ends (nil when the
    /// chain was broken before it).
    fileprivate mutating func wait(_ call: WaitCall, timeout: Int64, begin: UInt64, end: UInt64, ready: Int32, error: Int32,
                                   busyBefore: (from: UInt64, busy: UInt64)?, epoch: UInt64) {
        if begin < firstTimestamp { firstTimestamp = begin }
        if end > lastTimestamp { lastTimestamp = end }
        timeline?.start(at: begin)
        waits += 1
        calls[Int(call.rawValue)] += 1
        let duration = end >= begin ? end - begin : 0
        var busyBefore = busyBefore
        var heldTime: UInt64 = 0
        var joined = false
        if let held = heldCheck {
            heldCheck = nil
            if let gap = busyBefore, gap.busy <= Self.checkAndWaitGap {
                busyBefore = (held.from, held.busy + gap.busy)
                heldTime = held.check
                joined = true
            } else {
                endIteration(from: held.from, windowEnd: held.end, iterationBusy: held.busy + held.check, counted: held.busy)
            }
        }
        var iterationBusy = (busyBefore?.busy ?? 0) + heldTime
        let wake = timeout == 0 ? nil : kernel.wait(from: begin, to: end)
        if timeout == 0 {
            // A poll, not a wait: its time is work. It ends an iteration, unless it found nothing and the next wait
            // follows straight away (heldCheck).
            causes.nonBlockingChecks += 1
            if ready > 0 { causes.nonBlockingChecksReady += 1 }
            iterationBusy += duration
            busy += duration
            // One check per iteration: a loop that checks again and again with nothing ready is many turns.
            if ready == 0 && error == 0 && !joined, let before = busyBefore {
                heldCheck = (before.from, before.busy, duration, end)
                lastEnd = (end, epoch)
                return
            }
        } else {
            slept += duration
            sleeps.record(duration)
            timeline?.slept(timelineKey, from: begin, to: end)
            if ready < 0 || error != 0 {
                if error == interruptedError { causes.interrupted += 1 } else { causes.failed += 1 }
            } else if ready > 0 {
                causes.ready += 1
                readyPerWakeUp.record(UInt64(ready))
            } else if timeout > 0 {
                causes.timedOut += 1
                let late = duration > UInt64(timeout) ? duration - UInt64(timeout) : 0
                lateness.record(late)
                if late > options.lateThreshold {
                    lateWakeUps += 1
                    // Nothing runs between the wait's end and the loop's work: the callout is the wait's return.
                    kernel.lateWakeUp(due: begin + UInt64(timeout), callout: end, woke: (end, wake))
                }
            } else {
                causes.emptyWithoutTimeout += 1
            }
        }
        if let before = busyBefore {
            // A non-blocking check's time is the iteration's work: its window runs to the check's end.
            endIteration(from: before.from, windowEnd: timeout == 0 ? end : begin, iterationBusy: iterationBusy, counted: before.busy)
        }
        lastEnd = (end, epoch)
    }

    /// Ends an iteration that began at `from`, whose work (`iterationBusy`) ran until `windowEnd`; `counted` is the
    /// part of it not yet in the loop's busy total (a check's own time is added as it ends).
    private mutating func endIteration(from: UInt64, windowEnd: UInt64, iterationBusy wholeBusy: UInt64, counted: UInt64,
                                       countsAsIteration: Bool = true) {
        if countsAsIteration { iterations += 1 }
        let shared = sharedBy != nil
        let measured = kernel.iteration(from: from, to: windowEnd, busy: wholeBusy, outermost: true, parksWhenBlocked: shared)
        if shared && measured == nil { parkedUnseparated = true }
        let parkedHere = measured?.parked ?? 0
        let iterationBusy = wholeBusy - parkedHere
        parked += parkedHere
        busy += counted - min(parkedHere, counted)
        if countsAsIteration { busyPerIteration.record(iterationBusy) }
        if iterationBusy > options.stallThreshold {
            let split = measured.map { kernel.split($0) }
            stalls += 1
            timeline?.stall(timelineKey, at: from, busy: iterationBusy, cause: nil)
            worstStalls.keepLargest(TraceSummary.WaitStall(
                threadID: threadID, pid: nil, process: nil, thread: nil, family: family, target: target,
                iteration: iterations, atNanoseconds: from, busyNanoseconds: iterationBusy, kernel: split),
                limit: options.stallsKeptPerLoop, by: \.busyNanoseconds)
        }
    }

    var family: String { epoll ? TraceSummary.WaitLoopSummary.epollFamily : TraceSummary.WaitLoopSummary.pollFamily }

    /// `openWait`: the wait in progress when the trace ended (`waitingAtEnd`), its begin and the busy time before it;
    /// `traceEnd`: the trace's last moment.
    func summary(identity: WaitTracking.ThreadIdentity?, waitingAtEnd: Bool,
                 openWait: (begin: UInt64, busyBefore: (from: UInt64, busy: UInt64)?)? = nil,
                 traceEnd: UInt64 = 0) -> TraceSummary.WaitLoopSummary {
        // A check still held when the trace ends was the last iteration's end.
        if let held = heldCheck {
            var ended = self
            ended.heldCheck = nil
            ended.endIteration(from: held.from, windowEnd: held.end, iterationBusy: held.busy + held.check, counted: held.busy)
            return ended.summary(identity: identity, waitingAtEnd: waitingAtEnd, openWait: openWait, traceEnd: traceEnd)
        }
        // A thread waiting when the trace ended: the work before its wait in progress is all in the trace (a burn just
        // before that wait is a stall like any other), and is busy time; the iteration, which that wait would end, is
        // not counted, nor its sleep, whose end is unknown. Leaving the work out lost it (a tokio worker's last burn,
        // 40 ms of its CPU time).
        if waitingAtEnd, let open = openWait, let before = open.busyBefore {
            var ended = self
            ended.endIteration(from: before.from, windowEnd: open.begin, iterationBusy: before.busy, counted: before.busy,
                               countsAsIteration: false)
            ended.lastEnd = nil
            return ended.summary(identity: identity, waitingAtEnd: waitingAtEnd, openWait: nil, traceEnd: traceEnd)
        }
        // A thread of a shared set whose last iteration no wait ended (parked until the end while another thread held
        // the loop): with the kernel view, it is known up to the thread's last return to a CPU, and ends there.
        if sharedBy != nil, !waitingAtEnd, let last = lastEnd {
            var ended = self
            ended.lastEnd = nil
            if let known = ended.kernel.lastKnown(), known > last.at {
                ended.trailingIteration = true
                ended.endIteration(from: last.at, windowEnd: known, iterationBusy: known - last.at, counted: known - last.at)
                if known > ended.lastTimestamp { ended.lastTimestamp = known }
            }
            return ended.summary(identity: identity, waitingAtEnd: waitingAtEnd)
        }
        let span = busy + slept + parked
        var callCounts: [String: UInt64] = [:]
        for call in WaitCall.allCases where calls[Int(call.rawValue)] > 0 { callCounts[call.description] = calls[Int(call.rawValue)] }
        // Names come with the summary: a thread's wait_thread may come after its loop's first stall (a ring).
        let stalls = worstStalls.sorted { $0.busyNanoseconds > $1.busyNanoseconds }.map { stall -> TraceSummary.WaitStall in
            var named = stall
            (named.pid, named.process, named.thread) = (identity?.pid, identity?.process, identity?.thread)
            return named
        }
        return TraceSummary.WaitLoopSummary(
            threadID: threadID, pid: identity?.pid, ppid: identity?.ppid, process: identity?.process, thread: identity?.thread,
            family: family, target: target, calls: callCounts, waits: waits, iterations: iterations,
            iterationsPerSecond: span > 0 ? Double(iterations) / (Double(span) / 1e9) : 0,
            spanNanoseconds: lastTimestamp >= firstTimestamp ? lastTimestamp - firstTimestamp : 0,
            busyNanoseconds: busy, sleepNanoseconds: slept, utilization: span > 0 ? Double(busy) / Double(span) : 0,
            busyPerIteration: busyPerIteration.summary(for: options), sleep: sleeps.summary(for: options), wakeCauses: causes,
            lateness: lateness.summary(for: options), lateWakeUps: lateWakeUps,
            millisecondRests: millisecondRests > 0 && sharedBy != nil && netpollerShaped ? millisecondRests : nil, readyPerWakeUp: readyPerWakeUp.summary(for: options),
            stalls: self.stalls, worstStalls: stalls, chainBreaks: chainBreaks, waitingAtEnd: waitingAtEnd,
            waitingAtStart: waitingAtStart ? true : nil, busyAtStart: busyAtStart ? true : nil,
            lastIterationUnended: trailingIteration ? true : nil,
            parkedNanoseconds: sharedBy == nil ? nil : parked, parkedSeparated: sharedBy == nil ? nil : !parkedUnseparated,
            lostEventsAffecting: 0, lossWindowsAffecting: 0,
            kernel: kernel.facet(utilization: span > 0 ? Double(busy) / Double(span) : 0, first: firstTimestamp, last: lastTimestamp,
                                 notAvailable: TraceSummary.NotAvailable.kernelWait, distributions: options.figures == .all))
    }
}

/// Every thread's waits while a trace streams by, in memory that grows with threads and loops, not with events.
///
/// Each thread's waits form a chain: a wait_begin, its wait_end, the next wait_begin… Busy time is counted only
/// between two links of an unbroken chain. The chain breaks, by bumping the thread's epoch, when the trace shows or
/// says that some of the thread's events are missing: a wait_end with no wait_begin before it (a flight-recorder
/// ring overwrote the begin, or it was lost), a wait_begin while a wait is still open (its end was lost), or a loss
/// window of the thread's stream (per-CPU streams: any window) between its previous event and this one. A wait
/// whose begin and end straddle a break is left out: its end may be another wait's.
struct WaitTracking {
    /// What a thread's `wait_thread` said.
    struct ThreadIdentity {
        var pid: Int32
        var ppid: Int32
        var thread: String
        var process: String
    }

    private struct ThreadState {
        var identity: ThreadIdentity?
        /// The thread's loops, as indexes into `loops` (a thread has one or two).
        var loopIndexes: [Int] = []
        var epoch: UInt64 = 0
        var open: (loop: Int, call: WaitCall, setSize: UInt32, timeout: Int64, begin: UInt64, busyBefore: (from: UInt64, busy: UInt64)?)?
        var lastEvent: UInt64 = 0
        /// How many of the thread's loss windows (and of the per-CPU ones) were applied to its chain.
        var ownLossesApplied = 0
        var sharedLossesApplied = 0
    }

    private let options: TraceSummarizer.Options
    var timeline: TimelineRecorder?
    private let kernel: KernelViews
    private var threads: [ThreadState] = []
    private var threadIndexes: [Int32: Int] = [:]
    private var lastThread: (id: Int32, index: Int)?
    private(set) var loops: [WaitLoopTracker] = []
    private var unmatchedEnds: UInt64 = 0
    /// Loss windows the reader reported so far, per thread (embedded traces) and for per-CPU streams (LTTng).
    private var threadLosses: [Int32: [(from: UInt64, to: UInt64)]] = [:]
    /// Epoll wait sets by process and descriptor: the loops (indexes into `loops`) of the threads that waited on each.
    private var sets: [SetKey: [Int]] = [:]
    private struct SetKey: Hashable {
        var pid: Int32
        var target: Int32
    }
    private var sharedLosses: [(from: UInt64, to: UInt64)] = []
    /// The recent waits that may be a rest or the wait before one, per wait set (an epoll descriptor of a process)
    /// or, without one, per thread and target (the key's pid is then minus the thread id).
    private var rests: [SetKey: RestMatcher] = [:]
    /// The events Go's netpoller asks `epoll_pwait` for.
    static let netpollerEvents: UInt32 = 128

    init(options: TraceSummarizer.Options, kernel: KernelViews) {
        self.options = options
        self.kernel = kernel
    }

    var isEmpty: Bool { threads.isEmpty }

    /// A wait loop's first wait's begin and last wait's end (the part of the time its timeline line covers).
    func span(of key: TimelineRecorder.Key) -> (first: UInt64, last: UInt64)? {
        loops.first { $0.timelineKey == key }.map { ($0.firstTimestamp, $0.lastTimestamp) }
    }
    var firstTimestamp: UInt64? { loops.map(\.firstTimestamp).filter { $0 != .max }.min() }

    /// A loss window the reader found (it reports each before the thread's first event after it).
    mutating func loss(_ window: TraceHealth.LossWindow) {
        if window.stream.hasPrefix("tid ") {
            guard let tid = Int32(window.stream.dropFirst(4)) else { return }
            threadLosses[tid, default: []].append((window.from, window.to))
        } else {
            sharedLosses.append((window.from, window.to))
        }
    }

    /// Waits of threads past ``TraceSummarizer/Limits/waitThreads`` and of wait loops past
    /// ``TraceSummarizer/Limits/waitLoops``: left out of the figures (and counted as lost by the summary).
    private(set) var leftOut: UInt64 = 0

    @inline(__always)
    private mutating func thread(_ threadID: Int32) -> Int? {
        TraceSummarizer.index(of: threadID, in: &threads, indexes: &threadIndexes, last: &lastThread,
                              limit: TraceSummarizer.Limits.waitThreads, leftOut: &leftOut) { ThreadState() }
    }

    /// Breaks the thread's chain if a loss window lies between its previous event and this one at `ts`: a window
    /// runs from the stream's last good event to its next one, so one that starts before `ts` hides events before it.
    private mutating func applyLosses(_ index: Int, threadID: Int32, at ts: UInt64) {
        var broken = false
        if !threadLosses.isEmpty, let own = threadLosses[threadID] {
            while threads[index].ownLossesApplied < own.count, own[threads[index].ownLossesApplied].from < ts {
                threads[index].ownLossesApplied += 1
                broken = true
            }
        }
        while threads[index].sharedLossesApplied < sharedLosses.count, sharedLosses[threads[index].sharedLossesApplied].from < ts {
            if sharedLosses[threads[index].sharedLossesApplied].to >= threads[index].lastEvent { broken = true }
            threads[index].sharedLossesApplied += 1
        }
        if broken { breakChain(index) }
        threads[index].lastEvent = ts
    }

    private mutating func breakChain(_ index: Int) {
        threads[index].epoch += 1
        if let open = threads[index].open {
            loops[open.loop].chainBreaks += 1
            loops[open.loop].lastEnd = nil
            threads[index].open = nil
        }
    }

    mutating func threadNamed(_ threadID: Int32, pid: Int32, ppid: Int32, thread name: String, process: String, at ts: UInt64) {
        guard let index = thread(threadID) else { return }
        applyLosses(index, threadID: threadID, at: ts)
        threads[index].identity = ThreadIdentity(pid: pid, ppid: ppid, thread: name, process: process)
    }

    mutating func begin(_ threadID: Int32, call: WaitCall, target: Int32, setSize: UInt32, timeout: Int64, at ts: UInt64) {
        guard let index = thread(threadID) else { return }
        applyLosses(index, threadID: threadID, at: ts)
        begin(index, threadID, call: call, target: target, setSize: setSize, timeout: timeout, at: ts)
    }

    /// The waits of one `wait_batch`, sent at `ts` after they ended: losses are applied at the batch's own time
    /// (a loss before it may have taken the thread's previous batch, whatever its waits' times), then each wait
    /// is a begin and an end.
    mutating func batch(_ batch: TraceEvent.WaitBatch, at ts: UInt64) {
        guard let index = thread(batch.threadID) else { return }
        applyLosses(index, threadID: batch.threadID, at: ts)
        for wait in batch.waits {
            if wait.beganBeforeRecording {
                // In progress when the recording began (the kernel recorder's): its start is unknown, so it is no
                // sleep of the loop; its end starts the loop's chain. Or no wait: the thread was outside its waits
                // when the recording began, and its chain starts there.
                if let end = wait.end { joined(index, batch.threadID, wait, at: end) }
                continue
            }
            begin(index, batch.threadID, call: wait.call, target: wait.target, setSize: wait.setSize, timeout: wait.timeout, at: wait.begin)
            if let end = wait.end { self.end(index, ready: wait.ready, error: wait.error, at: end) }
        }
    }

    /// `wait` began before the recording and ended at `ts`; or it is a marker: the recording's start at `ts` with the
    /// thread outside its waits, or the thread's beginning. The loop is marked (but for a thread's beginning), and
    /// its first iteration starts there.
    private mutating func joined(_ index: Int, _ threadID: Int32, _ wait: TraceEvent.WaitBatch.Wait, at ts: UInt64) {
        timeline?.start(at: ts)
        if threads[index].open != nil { breakChain(index) }
        guard let loop = loop(index, threadID, epoll: wait.call.isEpoll, target: wait.target) else { return }
        if !wait.isMarker {
            loops[loop].waitingAtStart = true
        } else if wait.outsideWaitsAtRecordingStart {
            loops[loop].busyAtStart = true
        }
        loops[loop].started(at: ts)
        loops[loop].lastEnd = (ts, threads[index].epoch)
    }

    /// The thread's loop on (family, target), made on its first wait; nil past ``TraceSummarizer/Limits/waitLoops``.
    private mutating func loop(_ index: Int, _ threadID: Int32, epoll: Bool, target: Int32) -> Int? {
        let loopTarget = epoll ? target : -1
        for candidate in threads[index].loopIndexes where loops[candidate].epoll == epoll && loops[candidate].target == loopTarget {
            return candidate
        }
        guard loops.count < TraceSummarizer.Limits.waitLoops else {
            leftOut += 1
            return nil
        }
        var tracker = WaitLoopTracker(threadID: threadID, epoll: epoll, target: loopTarget, options: options, kernel: kernel)
        tracker.timeline = timeline
        loops.append(tracker)
        let made = loops.count - 1
        threads[index].loopIndexes.append(made)
        // An epoll descriptor belongs to its process: another thread of it waiting on the same one shares the set.
        if epoll, let pid = threads[index].identity?.pid {
            let key = SetKey(pid: pid, target: loopTarget)
            sets[key, default: []].append(made)
            if let members = sets[key], members.count >= 2 {
                for member in members { loops[member].sharedBy = pid }
            }
        }
        return made
    }

    private mutating func begin(_ index: Int, _ threadID: Int32, call: WaitCall, target: Int32, setSize: UInt32, timeout: Int64, at ts: UInt64) {
        timeline?.start(at: ts)
        // A wait still open: its end was lost, and what happened since is unknown.
        if threads[index].open != nil { breakChain(index) }
        guard let loop = loop(index, threadID, epoll: call.isEpoll, target: target) else { return }
        let busyBefore = loops[loop].busyBefore(ts, epoch: threads[index].epoch)
        threads[index].open = (loop, call, setSize, timeout, ts, busyBefore)
    }

    mutating func end(_ threadID: Int32, ready: Int32, error: Int32, at ts: UInt64) {
        guard let index = thread(threadID) else { return }
        applyLosses(index, threadID: threadID, at: ts)
        end(index, ready: ready, error: error, at: ts)
    }

    private mutating func end(_ index: Int, ready: Int32, error: Int32, at ts: UInt64) {
        guard let open = threads[index].open else {
            // The begin was overwritten or lost: this end belongs to a wait we cannot place.
            unmatchedEnds += 1
            threads[index].epoch += 1
            return
        }
        threads[index].open = nil
        loops[open.loop].wait(open.call, timeout: open.timeout, begin: open.begin, end: ts, ready: ready, error: error,
                              busyBefore: open.busyBefore, epoch: threads[index].epoch)
        if open.timeout != 0 && (open.call != .epollPwait || open.setSize != Self.netpollerEvents) { loops[open.loop].netpollerShaped = false }
        if let rest = rests[restKey(index, loop: open.loop), default: RestMatcher()]
            .waited(timeout: open.timeout, begin: open.begin, end: ts, timedOut: ready == 0 && error == 0, loop: open.loop) {
            loops[rest].millisecondRests += 1
        }
    }

    /// Pairs millisecond rests with the waits before them, in one wait set. A rest is a whole 1 ms wait begun within
    /// ``gap`` of a longer whole-millisecond wait's timeout. That is how a program that can only ask for whole
    /// milliseconds and rounds down (Go's netpoller: `epoll_pwait` with `delay / 1 ms`) waits out a deadline that
    /// was not a whole number of milliseconds away: the first wait ends before the deadline, and what is left of it,
    /// under a millisecond, becomes a 1 ms wait. Whatever was due then runs up to 1 ms late, though neither wait woke
    /// late. The same two waits are also what a program with two deadlines 1 ms apart makes (libuv, whose
    /// milliseconds are its own clock's): so the summary names the rests only for a wait set of Go's netpoller
    /// shape (``WaitLoopTracker/netpollerShaped``, shared by threads).
    ///
    /// Either of a pair may be read first: the kernel recorder sends each thread's waits in batches, read thread by
    /// thread, and a rest is often another thread's than the wait before it. Each side keeps its newest unpaired
    /// waits (``kept``), and each wait pairs once.
    struct RestMatcher {
        static let millisecond: Int64 = 1_000_000
        /// How soon after a timed-out wait a 1 ms wait must begin to be its rest: Go's runtime checks its timers and
        /// polls again within tens of µs; a loop that does work between the two is waiting for something else.
        static let gap: UInt64 = 100_000
        static let kept = 64
        /// Ends of timed-out longer waits, and begins of rests (with their loop), not paired yet.
        private var timedOut: [UInt64] = []
        private var waiting: [(begin: UInt64, loop: Int)] = []

        static func pairs(rest begin: UInt64, after end: UInt64) -> Bool { begin >= end && begin - end <= gap }

        /// A blocking wait of `loop` (its timeout, begin and end, and whether it timed out): the loop of the rest it
        /// completes a pair with, if it does.
        mutating func waited(timeout: Int64, begin: UInt64, end: UInt64, timedOut: Bool, loop: Int) -> Int? {
            if timeout == Self.millisecond { return rest(begin: begin, loop: loop) ? loop : nil }
            guard timedOut, timeout > Self.millisecond, timeout % Self.millisecond == 0 else { return nil }
            return self.timedOut(end: end)
        }

        /// A 1 ms wait begun at `begin`: whether it pairs with a timed-out wait read before it (else it waits for one).
        private mutating func rest(begin: UInt64, loop: Int) -> Bool {
            if let index = timedOut.lastIndex(where: { Self.pairs(rest: begin, after: $0) }) {
                timedOut.remove(at: index)
                return true
            }
            Self.keep((begin, loop), in: &waiting)
            return false
        }

        /// A longer whole-millisecond wait that timed out at `end`: the loop of a rest read before it that it pairs
        /// with, if any (else it waits for one).
        private mutating func timedOut(end: UInt64) -> Int? {
            if let index = waiting.firstIndex(where: { Self.pairs(rest: $0.begin, after: end) }) {
                return waiting.remove(at: index).loop
            }
            Self.keep(end, in: &timedOut)
            return nil
        }

        private static func keep<T>(_ value: T, in list: inout [T]) {
            if list.count == kept { list.removeFirst() }
            list.append(value)
        }
    }

    /// Whose rests a loop's waits pair with: its wait set's, when the thread's process is known and the loop waits
    /// on an epoll descriptor (Go's runtime threads take turns at its netpoller), its own otherwise.
    private func restKey(_ index: Int, loop: Int) -> SetKey {
        let tracker = loops[loop]
        if tracker.epoll, let pid = threads[index].identity?.pid { return SetKey(pid: pid, target: tracker.target) }
        return SetKey(pid: -tracker.threadID, target: tracker.target)
    }

    /// The summary, loops apart from rare waiters by ``TraceSummary/WaitSummary/rareWaitLimit``: `traceSpan` is the
    /// whole trace's, first event to last.
    func summary(health: TraceHealth, traceSpan: UInt64, traceEnd: UInt64 = 0) -> TraceSummary.WaitSummary {
        var loopSummaries: [TraceSummary.WaitLoopSummary] = []
        var rare: [TraceSummary.RareWaiter] = []
        var members: [WaitLoopTracker] = []
        var setMembers: [Int: TraceSummary.WaitLoopSummary] = [:]
        let traceSeconds = Double(traceSpan) / 1e9
        for state in threads {
            for index in state.loopIndexes {
                let tracker = loops[index]
                let waitingAtEnd = state.open?.loop == index
                let openWait = waitingAtEnd ? state.open.map { (begin: $0.begin, busyBefore: $0.busyBefore) } : nil
                var summary = tracker.summary(identity: state.identity, waitingAtEnd: waitingAtEnd, openWait: openWait, traceEnd: traceEnd)
                if let pid = tracker.sharedBy, let others = sets[SetKey(pid: pid, target: tracker.target)] {
                    summary.sharedWith = others.map { loops[$0].threadID }.filter { $0 != tracker.threadID }.sorted()
                    setMembers[index] = summary
                }
                if tracker.waits < TraceSummary.WaitSummary.rareWaitLimit && Double(tracker.waits) < traceSeconds
                    || tracker.waits == 0 {
                    rare.append(TraceSummary.RareWaiter(threadID: summary.threadID, pid: summary.pid, process: summary.process,
                                                        thread: summary.thread, family: summary.family, target: summary.target,
                                                        waits: summary.waits, sleepNanoseconds: summary.sleepNanoseconds,
                                                        waitingAtEnd: waitingAtEnd))
                    continue
                }
                let loss = TraceSummarizer.losses(in: health, threadID: tracker.threadID, from: tracker.firstTimestamp, to: tracker.lastTimestamp)
                summary.lostEventsAffecting = loss.events
                summary.lossWindowsAffecting = loss.windows
                loopSummaries.append(summary)
                members.append(tracker)
            }
        }
        // Busiest first: the loop a reader came for is usually the one that works.
        let order = loopSummaries.indices.sorted {
            (loopSummaries[$0].utilization, loopSummaries[$0].iterations, -$0) > (loopSummaries[$1].utilization, loopSummaries[$1].iterations, -$1)
        }
        var summary = TraceSummary.WaitSummary(loops: order.map { loopSummaries[$0] }, rareWaiters: rare,
                                               overall: totals(members, loopSummaries), unmatchedEnds: unmatchedEnds,
                                               notAvailable: TraceSummary.NotAvailable.wait)
        summary.sets = waitSets(setMembers)
        return summary
    }

    /// Each shared set as one loop: its threads' figures added up (rare waiters among them included: a thread that
    /// polled the set twice still took a turn at it).
    private func waitSets(_ members: [Int: TraceSummary.WaitLoopSummary]) -> [TraceSummary.WaitSetSummary]? {
        var result: [TraceSummary.WaitSetSummary] = []
        for (key, indexes) in sets where indexes.count >= 2 {
            let loops = indexes.compactMap { members[$0] }.sorted { $0.threadID < $1.threadID }
            guard !loops.isEmpty else { continue }
            let trackers = indexes.map { self.loops[$0] }
            let begin = trackers.map(\.firstTimestamp).min() ?? 0, end = trackers.map(\.lastTimestamp).max() ?? 0
            let span = end > begin ? end - begin : 0
            let busy = loops.reduce(0) { $0 + $1.busyNanoseconds }
            let stalls = loops.flatMap(\.worstStalls).sorted { $0.busyNanoseconds > $1.busyNanoseconds }
            let rests = loops.reduce(0) { $0 + ($1.millisecondRests ?? 0) }
            result.append(TraceSummary.WaitSetSummary(
                pid: key.pid, process: loops.compactMap(\.process).first, target: key.target, threads: loops.map(\.threadID),
                threadNames: loops.map { $0.thread ?? String($0.threadID) }, waits: loops.reduce(0) { $0 + $1.waits },
                iterations: loops.reduce(0) { $0 + $1.iterations }, spanNanoseconds: span, busyNanoseconds: busy,
                sleepNanoseconds: loops.reduce(0) { $0 + $1.sleepNanoseconds },
                parkedNanoseconds: loops.reduce(0) { $0 + ($1.parkedNanoseconds ?? 0) },
                busyThreads: span > 0 ? Double(busy) / Double(span) : 0,
                parkedSeparated: loops.allSatisfy { $0.parkedSeparated != false },
                millisecondRests: rests > 0 ? rests : nil, blockingWaits: rests > 0 ? loops.reduce(0) { $0 + $1.wakeCauses.blockingWaits } : nil,
                stalls: loops.reduce(0) { $0 + $1.stalls }, worstStalls: Array(stalls.prefix(options.stallsKeptPerLoop))))
        }
        return result.isEmpty ? nil : result.sorted { ($0.pid, $0.target) < ($1.pid, $1.target) }
    }

    private func totals(_ trackers: [WaitLoopTracker], _ summaries: [TraceSummary.WaitLoopSummary]) -> TraceSummary.WaitTotals {
        var busy = LatencyHistogram(), sleeps = LatencyHistogram(), lateness = LatencyHistogram(), ready = LatencyHistogram()
        var causes = TraceSummary.WakeCauses()
        for tracker in trackers {
            busy.merge(tracker.busyPerIteration)
            sleeps.merge(tracker.sleeps)
            lateness.merge(tracker.lateness)
            ready.merge(tracker.readyPerWakeUp)
            causes.add(tracker.causes)
        }
        let iterated = summaries.filter { $0.iterations > 0 }
        let busiest = iterated.max { $0.utilization < $1.utilization }
        return TraceSummary.WaitTotals(
            loops: UInt64(summaries.count), iterations: summaries.reduce(0) { $0 + $1.iterations },
            busyPerIteration: busy.summary, sleep: sleeps.summary, lateness: lateness.summary,
            lateWakeUps: summaries.reduce(0) { $0 + $1.lateWakeUps }, readyPerWakeUp: ready.summary, wakeCauses: causes,
            utilizationMean: iterated.isEmpty ? 0 : iterated.reduce(0) { $0 + $1.utilization } / Double(iterated.count),
            utilizationMax: busiest?.utilization ?? 0, busiestLoop: busiest?.name ?? "",
            stalls: summaries.reduce(0) { $0 + $1.stalls },
            worstStalls: Array(summaries.flatMap(\.worstStalls).sorted { $0.busyNanoseconds > $1.busyNanoseconds }.prefix(options.keep)))
    }
}

import TraceModel

/// Chrome trace-event JSON (the format Perfetto UI and chrome://tracing open): one track per loop thread, named
/// after its loops; a slice per callout and per sleep, an instant per activity; flow arrows from each cause the
/// trace holds to its callout (a source's signal to its perform, a late timer's fire date to its firing); counters
/// per loop (utilization, backlog) and per timer (lateness); every stall and every window of lost events on a
/// track of its own.
struct ChromeTraceWriter {
    let out: AtomicFile
    private var first = true
    /// Per thread: the loops it runs, in order of appearance (its track's name), or its wait_thread name.
    private var threads: [Int32: [String]] = [:]
    private var threadOrder: [Int32] = []
    /// Stalls and losses are the summary's own, so the export marks the same ones `summarize` counts.
    private var summarizer: TraceSummarizer
    private let lateThreshold: UInt64
    private var nextFlowID: UInt64 = 1
    /// Per source: its first signal since its last perform (a perform answers every signal before it), written
    /// when the perform comes, with the arrow to it; one still waiting when the trace ends is written without.
    private var pendingSignals: [UInt64: (name: String, tid: Int32, at: UInt64)] = [:]
    /// Per loop: its items' waits, from when each became due (fire date, signal, enqueue) to its callout.
    private var backlogs: [UInt64: BacklogSeries] = [:]
    private var labels: [UInt64: String] = [:]
    /// Per loop: the start of the current utilization window and the sleep inside it.
    private var windows: [UInt64: (start: UInt64, slept: UInt64)] = [:]
    /// Per NIO loop: traced I/O since its last tick (busy, not the sleep NIO counts it in).
    private var nioIOSinceTick: [UInt64: UInt64] = [:]
    private var origin: UInt64?
    /// Per thread: slices begun and not yet ended, and its last event. A trace cut off leaves slices open (they
    /// are closed at the thread's last event, marked as cut off); a flight-recorder ring starts with ends whose
    /// begins it overwrote (they are left out, so viewers do not close the wrong slice).
    private var open: [Int32: (slices: Int, last: UInt64)] = [:]
    /// Per thread: the wait it is in (any program's, `rlctl record --any`), written as one complete slice when it
    /// ends; a wait whose end is missing (lost, or a begin whose end came after another begin) is left out.
    private var waits: [Int32: (call: WaitCall, target: Int32, timeout: Int64, begin: UInt64)] = [:]
    /// Per wait loop (thread, epoll descriptor or -1): its utilization window, as `windows` for the other loops.
    private var waitWindows: [WaitLoopKey: (start: UInt64, slept: UInt64)] = [:]
    private var lastTimestamp: UInt64 = 0
    /// The kernel view (kernel_*): per thread, its run queue of the time off the CPU about to be written; tasks'
    /// names; and the threads with thread states, in order (their tracks are in a process of their own, pid 2, so
    /// that they overlap the loop's slices without nesting in them).
    private var runQueues: [Int32: TraceEvent.KernelRunQueue] = [:]
    private var taskNames: [Int32: String] = [:]
    private var kernelThreads: [Int32] = []
    private static let window: UInt64 = 100_000_000   // 100 ms utilization samples

    init(out: AtomicFile, options: TraceSummarizer.Options) {
        self.out = out
        var summaryOptions = options
        summaryOptions.stallsPerLoop = .max
        summarizer = TraceSummarizer(options: summaryOptions)
        lateThreshold = options.lateThreshold
        out.write("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")
    }

    /// A loss window the reader found, before the events after it (as the summary is fed).
    mutating func noteLoss(_ window: TraceHealth.LossWindow) {
        summarizer.noteLoss(window)
    }

    private mutating func flowID() -> String {
        defer { nextFlowID += 1 }
        return "\"0x\(String(nextFlowID, radix: 16))\""
    }

    /// Work queued for a loop at `time` from a thread the trace does not name (a block's enqueue, an actor job's, a
    /// port message's send): a mark on the loop's `queued on loop N` track, where its arrow to the callout starts.
    /// Returns the arrow, nil when the time is unknown (0).
    private mutating func queued(_ name: String, loop: UInt64, at time: UInt64, args: String) -> String? {
        guard time != 0 else { return nil }
        let arrow = flowID()
        emit("{\"ph\":\"n\",\"name\":\(jsonString(name)),\"cat\":\"queue\",\"id\":\(jsonString("queued on loop \(loop)")),\"pid\":1,\"ts\":\(micros(time)),\"bind_id\":\(arrow),\"flow_out\":true,\"args\":{\(args)}}")
        return arrow
    }

    /// A thread's track, in order of first appearance; `name` one of the loops it runs (or its wait_thread name).
    private mutating func track(thread tid: Int32, name: String? = nil) {
        if threads[tid] == nil {
            threads[tid] = []
            threadOrder.append(tid)
        }
        if let name, !threads[tid]!.contains(name) { threads[tid]!.append(name) }
    }

    private mutating func backlog(_ loop: UInt64, from due: UInt64, to start: UInt64) {
        // An item called out the moment it became due never waited: it is no backlog.
        guard due != 0, due < start, let origin else { return }
        backlogs[loop, default: BacklogSeries(origin: origin)].add(due: due, start: start)
    }

    private mutating func emit(_ json: String) {
        out.write(first ? json : ",\n" + json)
        first = false
    }

    /// Microseconds since the first event, with nanosecond precision.
    private mutating func micros(_ ns: UInt64) -> String {
        let base = origin ?? ns
        if origin == nil { origin = ns }
        let delta = ns >= base ? ns - base : 0
        return "\(delta / 1000).\(String(delta % 1000).leftPadded(to: 3))"
    }

    mutating func write(_ event: TraceEvent) {
        if writeKernel(event) { return }
        let tid = event.threadID
        // A batch of waits belongs to its waiting thread, not to the one that sent it (the interposer's flusher).
        if case .waitBatch = event.payload {} else { track(thread: tid) }
        summarizer.consume(event)
        let ts = micros(event.timestamp)
        func slice(_ phase: String, _ name: String, _ args: String = "", flowIn: String? = nil) -> String {
            let flow = flowIn.map { ",\"bind_id\":\($0),\"flow_in\":true" } ?? ""
            return "{\"ph\":\"\(phase)\",\"name\":\(jsonString(name)),\"cat\":\"callout\",\"pid\":1,\"tid\":\(tid),\"ts\":\(ts)\(flow)\(args.isEmpty ? "" : ",\"args\":{\(args)}")}"
        }
        lastTimestamp = max(lastTimestamp, event.timestamp)
        var thread = open[tid] ?? (0, event.timestamp)
        thread.last = max(thread.last, event.timestamp)
        switch event.payload {
        case .runBegin, .timerFireBegin, .sourcePerformBegin, .blockBegin, .observerBegin, .mainQueueBegin, .jobBegin:
            thread.slices += 1
        case .runEnd, .timerFireEnd, .sourcePerformEnd, .blockEnd, .observerEnd, .mainQueueEnd, .jobEnd:
            guard thread.slices > 0 else {
                open[tid] = thread
                return
            }
            thread.slices -= 1
        default:
            break
        }
        open[tid] = thread
        switch event.payload {
        case .activity(let activity, let place):
            emit("{\"ph\":\"i\",\"s\":\"t\",\"name\":\"\(activity.description)\",\"cat\":\"activity\",\"pid\":1,\"tid\":\(tid),\"ts\":\(ts),\"args\":{\"loop\":\(place.loopID),\"mode\":\(jsonString(place.mode)),\"iteration\":\(place.iteration),\"depth\":\(place.depth)}}")
        case .runBegin(let loop, let mode, let timeout, _):
            emit(slice("B", "run \(mode)", "\"loop\":\(loop),\"timeout_ns\":\(timeout)"))
        case .runEnd(_, _, let result):
            emit(slice("E", "run", "\"result\":\"\(result.description)\""))
        case .timerFireBegin(let loop, let id, let scheduled, let tolerance, _, let missed):
            let firing = TimerFiring(scheduled: scheduled, tolerance: tolerance, firedAt: event.timestamp)
            let name = labels[id].map { "timer \($0)" } ?? "timer \(id)"
            // A late firing (the summary's definition) gets an arrow from its fire date: what the loop was doing then.
            var flow: String?
            if firing.isLate(threshold: lateThreshold), let origin, scheduled >= origin {
                let arrow = flowID()
                flow = arrow
                emit(complete("\(name) due", cat: "due", tid: tid, from: scheduled, to: scheduled,
                              args: "\"tolerance_ns\":\(tolerance)", flowOut: arrow))
            }
            emit(slice("B", name, "\"lateness_ns\":\(firing.lateness),\"tolerance_ns\":\(tolerance),\"missed\":\(missed)", flowIn: flow))
            emit("{\"ph\":\"C\",\"name\":\(jsonString("lateness \(name)")),\"pid\":1,\"ts\":\(ts),\"args\":{\"ms\":\(milliseconds(firing.lateness))}}")
            backlog(loop, from: scheduled, to: event.timestamp)
        case .sourcePerformBegin(let loop, let id, let kind, _, let signaled):
            var flow: String?
            if let signal = pendingSignals.removeValue(forKey: id) {
                let arrow = flowID()
                flow = arrow
                emit(complete(signal.name, cat: "signal", tid: signal.tid, from: signal.at, to: signal.at, args: "\"source\":\(id)", flowOut: arrow))
            } else if kind == .port {
                flow = queued("message sent to \(labels[id] ?? "port \(id)")", loop: loop, at: signaled, args: "\"port\":\(id)")
            }
            emit(slice("B", labels[id].map { "\(kind.description) \($0)" } ?? "\(kind.description) \(id)", flowIn: flow))
            backlog(loop, from: signaled, to: event.timestamp)
        case .blockBegin(let loop, let id, let enqueued):
            let waited = queueWait(enqueued: enqueued, ranAt: event.timestamp) ?? 0
            emit(slice("B", "block", "\"id\":\(id),\"queued_ns\":\(waited)",
                       flowIn: queued("block queued", loop: loop, at: enqueued, args: "\"id\":\(id)")))
            backlog(loop, from: enqueued, to: event.timestamp)
        case .observerBegin(_, let id, let activity):
            emit(slice("B", labels[id].map { "observer \($0)" } ?? "observer \(id)", "\"activity\":\"\(activity.description)\""))
        case .mainQueueBegin:
            emit(slice("B", "main queue"))
        case .timerFireEnd, .sourcePerformEnd, .blockEnd, .observerEnd, .mainQueueEnd, .jobEnd:
            emit(slice("E", ""))
        case .wakeUp(let loop, let reason, let slept):
            let start = event.timestamp >= slept ? event.timestamp - slept : 0
            let startTs = micros(start)
            emit("{\"ph\":\"X\",\"name\":\"sleep\",\"cat\":\"sleep\",\"pid\":1,\"tid\":\(tid),\"ts\":\(startTs),\"dur\":\(slept / 1000).\(String(slept % 1000).leftPadded(to: 3)),\"args\":{\"woken_by\":\"\(reason.description)\"}}")
            sampleUtilization(loop: loop, slept: slept, at: event.timestamp, iterationStart: event.timestamp)
        case .sourceSignal(let id):
            // A zero-length slice rather than an instant: only slices carry flows. A signal repeated before the
            // perform is drawn without one (the perform answers the first).
            let name = labels[id].map { "signal \($0)" } ?? "signal \(id)"
            if pendingSignals[id] == nil {
                pendingSignals[id] = (name, tid, event.timestamp)
            } else {
                emit(complete(name, cat: "signal", tid: tid, from: event.timestamp, to: event.timestamp, args: "\"source\":\(id)"))
            }
        case .loopCreate(let loop, let threadID, let name):
            track(thread: threadID, name: "loop \(loop) \(name)")
        case .itemLabel(let id, _, let label):
            labels[id] = label
        case .jobBegin(let loop, let id, let enqueued, let priority):
            let waited = queueWait(enqueued: enqueued, ranAt: event.timestamp) ?? 0
            emit(slice("B", "job", "\"id\":\(id),\"queued_ns\":\(waited),\"priority\":\(priority)",
                       flowIn: queued("job queued", loop: loop, at: enqueued, args: "\"id\":\(id),\"priority\":\(priority)")))
            backlog(loop, from: enqueued, to: event.timestamp)
        case .loopAdapted(let loop, let adapter, let group):
            track(thread: tid, name: "\(adapter.description) loop \(loop)")
            emit("{\"ph\":\"i\",\"s\":\"t\",\"name\":\"traced by \(adapter.description)\",\"cat\":\"adapter\",\"pid\":1,\"tid\":\(tid),\"ts\":\(ts),\"args\":{\"loop\":\(loop),\"group\":\(group)}}")
        case .nioTick(let loop, let start, let end, let sleep, let tasks):
            // Complete slices with their own times: the tick is reported after it ended.
            emit(complete("tick", cat: "tick", tid: tid, from: start, to: end, args: "\"tasks\":\(tasks)"))
            let iteration = NIOIteration(ioSincePreviousTick: nioIOSinceTick.removeValue(forKey: loop) ?? 0,
                                         tickStart: start, tickEnd: end, nioSleep: sleep)
            sampleUtilization(loop: loop, slept: iteration.sleep, at: end, iterationStart: start >= sleep ? start - sleep : 0)
        case .nioIO(let loop, let channel, let io, let start, let end):
            nioIOSinceTick[loop, default: 0] += end >= start ? end - start : 0
            let name = "\(io.description) " + (labels[channel] ?? "channel \(channel)")
            emit(complete(name, cat: "callout", tid: tid, from: start, to: end, args: "\"channel\":\(channel)"))
        case .probeFire(_, let scheduled, let lateness, let cost):
            let start = scheduled &+ lateness
            emit(complete("lateness probe", cat: "probe", tid: tid, from: start, to: start &+ cost, args: "\"lateness_ns\":\(lateness)"))
        case .waitBegin(let call, let target, _, let timeout):
            waits[tid] = (call, target, timeout, event.timestamp)
        case .waitEnd(let ready, let error):
            guard let wait = waits.removeValue(forKey: tid) else { break }
            emitWait(tid: tid, call: wait.call, target: wait.target, timeout: wait.timeout, from: wait.begin, to: event.timestamp,
                     ready: ready, error: error)
        case .waitBatch(let batch):
            track(thread: batch.threadID)
            for wait in batch.waits where !wait.beganBeforeRecording {
                guard let end = wait.end else {
                    // Still waiting when the recording ended: drawn as the embedded trace's open wait is.
                    waits[batch.threadID] = (wait.call, wait.target, wait.timeout, wait.begin)
                    continue
                }
                emitWait(tid: batch.threadID, call: wait.call, target: wait.target, timeout: wait.timeout, from: wait.begin, to: end,
                         ready: wait.ready, error: wait.error)
            }
        case .waitThread(let pid, _, let thread, let process):
            track(thread: tid, name: "\(process) (\(pid)) \(thread)")
        case .loopStall(let s):
            // What the loop itself reported, at its own threshold (the stall tracks are the summary's, at --stall).
            let culprit = s.culpritKind == .none ? "no callout" : (s.culpritLabel.isEmpty ? "\(s.culpritKind) \(s.culpritID)" : "\(s.culpritKind) \(s.culpritLabel)")
            emit("{\"ph\":\"i\",\"s\":\"t\",\"name\":\(jsonString("loop reported stall \(milliseconds(s.busy)) ms: \(culprit)")),\"cat\":\"reported-stall\",\"pid\":1,\"tid\":\(tid),\"ts\":\(ts),\"args\":{\"loop\":\(s.loopID),\"iteration\":\(s.iteration),\"busy_ns\":\(s.busy),\"threshold_ns\":\(s.threshold),\"culprit_ns\":\(s.culpritDuration)}}")
        case .kernelBegin, .kernelTask, .kernelTimer, .kernelRunQueue, .kernelOffCPU, .kernelLost:
            break   // writeKernel(_:)
        case .loopHang(let loop, let iteration, let busy, _):
            emit("{\"ph\":\"i\",\"s\":\"g\",\"name\":\(jsonString("watchdog: loop \(loop) stuck for \(milliseconds(busy)) ms")),\"cat\":\"hang\",\"pid\":1,\"tid\":\(tid),\"ts\":\(ts),\"args\":{\"loop\":\(loop),\"iteration\":\(iteration),\"busy_ns\":\(busy)}}")
        }
    }

    private mutating func emitWait(tid: Int32, call: WaitCall, target: Int32, timeout: Int64, from begin: UInt64, to end: UInt64,
                                   ready: Int32, error: Int32) {
        emit(complete("wait \(call.description)", cat: "wait", tid: tid, from: begin, to: end,
                      args: "\"target\":\(target),\"timeout_ns\":\(timeout),\"ready\":\(ready),\"error\":\(error)"))
        // A non-blocking check (timeout 0) is work, not sleep, as in the summary.
        let slept = timeout == 0 ? 0 : (end >= begin ? end - begin : 0)
        let key = WaitLoopKey(threadID: tid, target: call.isEpoll ? target : -1)
        var window = waitWindows[key] ?? (begin, 0)
        sampleUtilization(window: &window, name: "utilization tid \(tid) " + (key.target >= 0 ? "epoll fd \(key.target)" : "poll/select"),
                          slept: slept, at: end)
        waitWindows[key] = window
    }

    /// A wait loop: a thread's waits on one epoll descriptor, or its poll/select waits (target -1).
    private struct WaitLoopKey: Hashable {
        let threadID: Int32
        let target: Int32
    }

    /// Adds a sleep that ended at `time` to the loop's utilization window, and writes the window's counter once it
    /// spans 100 ms. A loop's first window starts at `iterationStart` (a NIO tick's iteration began before it).
    private mutating func sampleUtilization(loop: UInt64, slept: UInt64, at time: UInt64, iterationStart: UInt64) {
        var window = windows[loop] ?? (min(iterationStart, time), 0)
        sampleUtilization(window: &window, name: "utilization loop \(loop)", slept: slept, at: time)
        windows[loop] = window
    }

    /// The counter `name` over `window`: adds the sleep, and writes the window's busy share once it spans 100 ms.
    private mutating func sampleUtilization(window: inout (start: UInt64, slept: UInt64), name: String, slept: UInt64, at time: UInt64) {
        window.slept += slept
        if time >= window.start && time - window.start >= Self.window {
            let span = time - window.start
            let busy = span > window.slept ? Double(span - window.slept) / Double(span) : 0
            emit("{\"ph\":\"C\",\"name\":\(jsonString(name)),\"pid\":1,\"ts\":\(micros(time)),\"args\":{\"busy\":\(String(format2(busy)))}}")
            window = (time, 0)
        }
    }

    /// A slice whose start and end the event carries (an adapter's, reported after it ended).
    private mutating func complete(_ name: String, cat: String, pid: Int = 1, tid: Int32, from start: UInt64, to end: UInt64, args: String,
                                   flowOut: String? = nil) -> String {
        let duration = end >= start ? end - start : 0
        let flow = flowOut.map { ",\"bind_id\":\($0),\"flow_out\":true" } ?? ""
        return "{\"ph\":\"X\",\"name\":\(jsonString(name)),\"cat\":\"\(cat)\",\"pid\":\(pid),\"tid\":\(tid),\"ts\":\(micros(start)),\"dur\":\(duration / 1000).\(String(duration % 1000).leftPadded(to: 3))\(flow),\"args\":{\(args)}}"
    }

    /// A slice on a track of its own (Chrome's async events, one track per `track`): stalls and loss windows
    /// overlap the thread's own slices without nesting in them.
    private mutating func trackSlice(_ name: String, cat: String, track: String, from start: UInt64, to end: UInt64, args: String) {
        let common = "\"name\":\(jsonString(name)),\"cat\":\"\(cat)\",\"id\":\(jsonString(track)),\"pid\":1"
        emit("{\"ph\":\"b\",\(common),\"ts\":\(micros(start)),\"args\":{\(args)}}")
        emit("{\"ph\":\"e\",\(common),\"ts\":\(micros(max(start, end)))}")
    }

    mutating func finish(health: TraceHealth) {
        // A thread still waiting when the trace ended (a loop asleep when recording stopped): its wait runs to the end.
        for (tid, wait) in waits.sorted(by: { $0.key < $1.key }) {
            emit(complete("wait \(wait.call.description)", cat: "wait", tid: tid, from: wait.begin, to: max(wait.begin, lastTimestamp),
                          args: "\"target\":\(wait.target),\"timeout_ns\":\(wait.timeout),\"did_not_end\":\"trace ended\""))
        }
        for (tid, thread) in open.sorted(by: { $0.key < $1.key }) where thread.slices > 0 {
            let ts = micros(thread.last)
            for _ in 0..<thread.slices {
                emit("{\"ph\":\"E\",\"pid\":1,\"tid\":\(tid),\"ts\":\(ts),\"args\":{\"did_not_end\":\"trace cut off\"}}")
            }
        }
        for (id, signal) in pendingSignals.sorted(by: { $0.key < $1.key }) {
            emit(complete(signal.name, cat: "signal", tid: signal.tid, from: signal.at, to: signal.at,
                          args: "\"source\":\(id),\"performed\":\"not in the trace\""))
        }
        let summary = summarizer.finish(health: health)
        writeStalls(summary)
        writeLosses(health)
        writeBacklog()
        for tid in threadOrder {
            let names = threads[tid] ?? []
            let name = names.isEmpty ? "thread \(tid)" : names.joined(separator: " + ")
            emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":\(tid),\"args\":{\"name\":\(jsonString(name))}}")
        }
        emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\(jsonString("run loops (events lost: \(health.eventsLost))"))}}")
        if !kernelThreads.isEmpty {
            for tid in kernelThreads {
                let names = threads[tid] ?? []
                let name = (names.isEmpty ? "thread \(tid)" : names.joined(separator: " + ")) + ": off the CPU"
                emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":2,\"tid\":\(tid),\"args\":{\"name\":\(jsonString(name))}}")
            }
            emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":2,\"args\":{\"name\":\"kernel view: thread states\"}}")
        }
        out.write("\n]}\n")
    }
}

extension ChromeTraceWriter {
    /// Every stall the summary counts (its threshold, its culprit), one track per loop, and a marker on the loop's
    /// thread where it began.
    private mutating func writeStalls(_ summary: TraceSummary) {
        for loop in summary.loops {
            writeStalls(loop.worstStalls.map { ($0.atNanoseconds, $0.busyNanoseconds, $0.cause, "\"loop\":\($0.loopID),\"iteration\":\($0.iteration)") },
                        track: "stalls of loop \(loop.loopID ?? 0)", thread: loop.threadID)
        }
        for loop in summary.nio?.loops ?? [] {
            writeStalls(loop.worstStalls.map { ($0.atNanoseconds, $0.busyNanoseconds, $0.cause, "\"loop\":\($0.loopID),\"tick\":\($0.iteration)") },
                        track: "stalls of NIO loop \(loop.loopID)", thread: loop.threadID)
        }
        for loop in summary.waits?.loops ?? [] {
            // The thread and descriptor in the track's id: two waiting threads can share a name.
            writeStalls(loop.worstStalls.map { ($0.atNanoseconds, $0.busyNanoseconds, nil, "\"iteration\":\($0.iteration)") },
                        track: "stalls of \(loop.name) (tid \(loop.threadID), \(loop.family) \(loop.target))", thread: loop.threadID)
        }
    }

    /// One loop's stalls on its track, in time order, and a marker on its thread where each began. A slice ends
    /// where the next begins at the latest: a NIO stall begins at its longest I/O but lasts its whole iteration's
    /// busy time, and slices of one track must not overlap. `culprit` nil: the loop's callouts are not traced.
    private mutating func writeStalls(_ stalls: [(at: UInt64, busy: UInt64, culprit: String?, args: String)], track: String, thread: Int32?) {
        let ordered = stalls.sorted { $0.at < $1.at }
        for (index, stall) in ordered.enumerated() {
            let label = "stall \(milliseconds(stall.busy)) ms" + (stall.culprit.map { ": \($0)" } ?? "")
            let next = index + 1 < ordered.count ? ordered[index + 1].at : .max
            trackSlice(label, cat: "stall", track: track, from: stall.at, to: min(stall.at &+ stall.busy, next),
                       args: stall.args + ",\"busy_ns\":\(stall.busy),\"culprit\":\(jsonString(stall.culprit ?? "not available"))")
            if let thread {
                emit("{\"ph\":\"i\",\"s\":\"t\",\"name\":\(jsonString(label)),\"cat\":\"stall\",\"pid\":1,\"tid\":\(thread),\"ts\":\(micros(stall.at))}")
            }
        }
    }

    /// Each window of lost events or packets as a slice on its stream's loss track (`losses of tid N` for the
    /// embedded recorder's per-thread streams, of the per-CPU buffer for LTTng's), and, when the stream is a
    /// thread's, a marker on that thread where the window begins.
    private mutating func writeLosses(_ health: TraceHealth) {
        for var window in health.lossWindows {
            // A window open to the end (a stream missing from the trace, events left out) ends with the trace.
            window.to = min(window.to, max(lastTimestamp, window.from))
            let what = window.events > 0 ? "\(window.events) events lost" : "events lost (whole packets)"
            trackSlice(what, cat: "loss", track: "losses of \(window.stream)", from: window.from, to: window.to,
                       args: "\"stream\":\(jsonString(window.stream)),\"events\":\(window.events)")
            if window.stream.hasPrefix("tid "), let tid = Int32(window.stream.dropFirst(4)) {
                let until = window.to >= window.from ? window.to - window.from : 0
                emit("{\"ph\":\"i\",\"s\":\"t\",\"name\":\(jsonString(what + " in the next " + formatNanoseconds(until))),\"cat\":\"loss\",\"pid\":1,\"tid\":\(tid),\"ts\":\(micros(window.from))}")
            }
        }
        if health.recordingCutOff {
            emit("{\"ph\":\"i\",\"s\":\"g\",\"name\":\"recording cut off (events after each thread's last packet are missing)\",\"cat\":\"loss\",\"pid\":1,\"ts\":\(micros(lastTimestamp))}")
        }
    }

    /// Items due and not yet called out, per loop: the mean number waiting in each bucket (1 ms, wider on long
    /// traces), written where it changes.
    private mutating func writeBacklog() {
        for loop in backlogs.keys.sorted() {
            let name = jsonString("backlog loop \(loop)")
            var previous: String?
            let levels = backlogs[loop]!.levels(end: lastTimestamp)
            // After the last item's bucket nothing waits: the line comes back to 0 there.
            let closing = (levels.last.map { $0.start + backlogs[loop]!.width } ?? 0, 0.0)
            for level in levels + [closing] {
                let items = String(format2(level.1))
                guard items != previous else { continue }
                previous = items
                emit("{\"ph\":\"C\",\"name\":\(name),\"pid\":1,\"ts\":\(micros(level.0)),\"args\":{\"items\":\(items)}}")
            }
        }
    }
}

/// Milliseconds with microsecond precision, as a JSON number.
private func milliseconds(_ nanoseconds: UInt64) -> String {
    "\(nanoseconds / 1_000_000).\(String(nanoseconds / 1000 % 1000).leftPadded(to: 3))"
}

private func format2(_ value: Double) -> String {
    let rounded = (value * 1000).rounded() / 1000
    return String(rounded)
}

extension ChromeTraceWriter {
    /// The kernel view's events: each time off the CPU of a followed thread as its states, on the thread's track in
    /// the kernel view's process: blocked (in which system call), then runnable and waiting for a CPU (behind whom) or
    /// throttled. Returns false for any other event.
    private mutating func writeKernel(_ event: TraceEvent) -> Bool {
        switch event.payload {
        case .kernelBegin, .kernelTimer, .kernelLost:
            summarizer.consume(event)
        case .kernelTask(let tid, let pid, let command):
            taskNames[tid] = pid == 0 ? "\(command) (kernel thread)" : "\(command) (pid \(pid))"
            summarizer.consume(event)
        case .kernelRunQueue(let queue):
            runQueues[queue.threadID] = queue
            summarizer.consume(event)
        case .kernelOffCPU(let off):
            summarizer.consume(event)
            lastTimestamp = max(lastTimestamp, event.timestamp)
            if !kernelThreads.contains(off.threadID) { kernelThreads.append(off.threadID) }
            let queue = runQueues.removeValue(forKey: off.threadID)
            if !off.reason.leftRunnable, off.woken > off.left {
                let what = off.syscall >= 0 ? SyscallNames.name(off.syscall) : (off.reason == .diskSleep ? "page fault or I/O" : "no system call")
                emit(kernelSlice("blocked in \(what)", tid: off.threadID, from: off.left, to: off.woken,
                                 args: "\"reason\":\(jsonString(off.reason.description)),\"syscall\":\(off.syscall),\"waker_tid\":\(off.wakerThreadID)"
                                    + (off.wakerThreadID > 0 ? ",\"waker\":\(jsonString(taskNames[off.wakerThreadID] ?? "thread \(off.wakerThreadID)"))" : "")))
            }
            if off.back > off.woken {
                let throttled = off.reason == .throttled || off.throttled * 2 >= off.runnable
                let culprits = (queue?.culprits ?? []).map { "\(taskNames[$0.threadID] ?? "thread \($0.threadID)") \($0.nanoseconds) ns" }
                let args = "\"cpu\":\(off.cpu),\"throttled_ns\":\(off.throttled),\"reason\":\(jsonString(off.reason.description))"
                    + ",\"held_by\":[\(culprits.map(jsonString).joined(separator: ","))]" + (queue.map { ",\"others_ns\":\($0.others)" } ?? "")
                emit(kernelSlice(throttled ? "throttled (CPU quota)" : "waiting for CPU \(off.cpu)", tid: off.threadID,
                                 from: off.woken, to: off.back, args: args))
            }
        default:
            return false
        }
        return true
    }

    /// A thread state on the kernel view's track (pid 2). A time off the CPU that began before the trace's first event
    /// is drawn from there: the view has no earlier time.
    private mutating func kernelSlice(_ name: String, tid: Int32, from start: UInt64, to end: UInt64, args: String) -> String {
        complete(name, cat: "kernel", pid: 2, tid: tid, from: origin.map { max(start, $0) } ?? start, to: end, args: args)
    }
}

import TraceModel

/// Chrome trace-event JSON (the format Perfetto UI and chrome://tracing open): one track per loop thread, a
/// slice per callout and per sleep, an instant per activity, and a utilization counter per loop.
struct ChromeTraceWriter {
    let out: BufferedFile
    private var first = true
    private var namedThreads: Set<Int32> = []
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
    private static let window: UInt64 = 100_000_000   // 100 ms utilization samples

    init(out: BufferedFile) {
        self.out = out
        out.write("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")
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
        let tid = event.threadID
        if namedThreads.insert(tid).inserted {
            emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":\(tid),\"args\":{\"name\":\"thread \(tid)\"}}")
        }
        let ts = micros(event.timestamp)
        func slice(_ phase: String, _ name: String, _ args: String = "") -> String {
            "{\"ph\":\"\(phase)\",\"name\":\(jsonString(name)),\"cat\":\"callout\",\"pid\":1,\"tid\":\(tid),\"ts\":\(ts)\(args.isEmpty ? "" : ",\"args\":{\(args)}")}"
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
        case .timerFireBegin(_, let id, let scheduled, let tolerance, _, let missed):
            let late = TimerFiring(scheduled: scheduled, tolerance: tolerance, firedAt: event.timestamp).lateness
            emit(slice("B", labels[id].map { "timer \($0)" } ?? "timer \(id)", "\"lateness_ns\":\(late),\"tolerance_ns\":\(tolerance),\"missed\":\(missed)"))
        case .sourcePerformBegin(_, let id, let kind, _, _):
            emit(slice("B", labels[id].map { "\(kind.description) \($0)" } ?? "\(kind.description) \(id)"))
        case .blockBegin(_, let id, let enqueued):
            let waited = queueWait(enqueued: enqueued, ranAt: event.timestamp) ?? 0
            emit(slice("B", "block", "\"id\":\(id),\"queued_ns\":\(waited)"))
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
            emit("{\"ph\":\"i\",\"s\":\"t\",\"name\":\"signal\",\"cat\":\"signal\",\"pid\":1,\"tid\":\(tid),\"ts\":\(ts),\"args\":{\"source\":\(id)}}")
        case .loopCreate(let loop, let threadID, let name):
            emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":\(threadID),\"args\":{\"name\":\(jsonString("loop \(loop) \(name)"))}}")
        case .itemLabel(let id, _, let label):
            labels[id] = label
        case .jobBegin(_, let id, let enqueued, let priority):
            let waited = queueWait(enqueued: enqueued, ranAt: event.timestamp) ?? 0
            emit(slice("B", "job", "\"id\":\(id),\"queued_ns\":\(waited),\"priority\":\(priority)"))
        case .loopAdapted(let loop, let adapter, let group):
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
            emit(complete("wait \(wait.call.description)", cat: "wait", tid: tid, from: wait.begin, to: event.timestamp,
                          args: "\"target\":\(wait.target),\"timeout_ns\":\(wait.timeout),\"ready\":\(ready),\"error\":\(error)"))
            // A non-blocking check (timeout 0) is work, not sleep, as in the summary.
            let slept = wait.timeout == 0 ? 0 : (event.timestamp >= wait.begin ? event.timestamp - wait.begin : 0)
            let key = WaitLoopKey(threadID: tid, target: wait.call.isEpoll ? wait.target : -1)
            var window = waitWindows[key] ?? (wait.begin, 0)
            sampleUtilization(window: &window, name: "utilization tid \(tid) " + (key.target >= 0 ? "epoll fd \(key.target)" : "poll/select"),
                              slept: slept, at: event.timestamp)
            waitWindows[key] = window
        case .waitThread(let pid, _, let thread, let process):
            emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":\(tid),\"args\":{\"name\":\(jsonString("\(process) (\(pid)) \(thread)"))}}")
        }
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
    private mutating func complete(_ name: String, cat: String, tid: Int32, from start: UInt64, to end: UInt64, args: String) -> String {
        let duration = end >= start ? end - start : 0
        return "{\"ph\":\"X\",\"name\":\(jsonString(name)),\"cat\":\"\(cat)\",\"pid\":1,\"tid\":\(tid),\"ts\":\(micros(start)),\"dur\":\(duration / 1000).\(String(duration % 1000).leftPadded(to: 3)),\"args\":{\(args)}}"
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
        emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\(jsonString("run loops (events lost: \(health.eventsLost))"))}}")
        out.write("\n]}\n")
    }
}

private func format2(_ value: Double) -> String {
    let rounded = (value * 1000).rounded() / 1000
    return String(rounded)
}

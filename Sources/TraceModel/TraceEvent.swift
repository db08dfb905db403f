

/// One event of a run-loop trace, whichever backend recorded it (the embedded recorder or LTTng).
///
/// The names and fields are the `runloop` schema (`Sources/CTraceSchema/include/runloop_events.def`, ``TraceSchema``):
/// every reader produces these (TraceReading's TraceEventDecoding maps the schema's fields to them), and every
/// analysis consumes only these.
public struct TraceEvent: Sendable, Equatable {
    /// CLOCK_MONOTONIC nanoseconds (LTTng's clock, and the loop's).
    public var timestamp: UInt64
    /// The kernel thread id that emitted the event (LTTng's `vtid` context).
    public var threadID: Int32
    /// The process that emitted it (LTTng's `vpid` context), 0 when the trace does not say: rlctl's own
    /// recordings trace one process and leave it out; a live view of every process (`rlctl top`) adds it.
    public var processID: Int32
    public var payload: Payload

    public init(timestamp: UInt64, threadID: Int32, processID: Int32 = 0, payload: Payload) {
        self.timestamp = timestamp
        self.threadID = threadID
        self.processID = processID
        self.payload = payload
    }

    /// Where an activity happened.
    public struct Place: Sendable, Equatable {
        public var loopID: UInt64
        public var mode: String
        public var iteration: UInt64
        /// Nesting level of the run (1 for the outermost).
        public var depth: UInt32

        public init(loopID: UInt64, mode: String, iteration: UInt64, depth: UInt32) {
            self.loopID = loopID
            self.mode = mode
            self.iteration = iteration
            self.depth = depth
        }
    }

    public enum Payload: Sendable, Equatable {
        /// `runloop:entry`, `before_timers`, `before_sources`, `before_waiting`, `after_waiting`, `exit`.
        case activity(LoopActivity, Place)
        /// `runloop:run_begin`.
        case runBegin(loopID: UInt64, mode: String, timeoutNanoseconds: UInt64, returnAfterSourceHandled: Bool)
        /// `runloop:run_end`.
        case runEnd(loopID: UInt64, mode: String, result: LoopRunResult)
        /// `runloop:timer_fire_begin`: `scheduled` is the fire date; `missed` counts skipped grid slots.
        case timerFireBegin(loopID: UInt64, timerID: UInt64, scheduled: UInt64, tolerance: UInt64, interval: UInt64, missed: UInt64)
        /// `runloop:timer_fire_end`.
        case timerFireEnd(loopID: UInt64, timerID: UInt64)
        /// `runloop:source_signal`, emitted on the signalling thread.
        case sourceSignal(sourceID: UInt64)
        /// `runloop:source_perform_begin`: `signaled` is the first-signal time (custom), send time (port) or 0.
        case sourcePerformBegin(loopID: UInt64, sourceID: UInt64, kind: LoopSourceKind, order: Int64, signaled: UInt64)
        /// `runloop:source_perform_end`.
        case sourcePerformEnd(loopID: UInt64, sourceID: UInt64)
        /// `runloop:block_begin`: `enqueued` is when `perform` queued it.
        case blockBegin(loopID: UInt64, blockID: UInt64, enqueued: UInt64)
        /// `runloop:block_end`.
        case blockEnd(loopID: UInt64, blockID: UInt64)
        /// `runloop:observer_begin`.
        case observerBegin(loopID: UInt64, observerID: UInt64, activity: LoopActivity)
        /// `runloop:observer_end`.
        case observerEnd(loopID: UInt64, observerID: UInt64)
        /// `runloop:wakeup`: what ended a sleep and how long it lasted.
        case wakeUp(loopID: UInt64, reason: LoopWakeReason, slept: UInt64)
        /// `runloop:loop_create`.
        case loopCreate(loopID: UInt64, threadID: Int32, name: String)
        /// `runloop:item_label`: the user's name for a timer, source, port or observer.
        case itemLabel(itemID: UInt64, kind: LoopItemKind, label: String)
        /// `runloop:main_queue_begin`: the main loop runs the main dispatch queue's work (rule 38).
        case mainQueueBegin(loopID: UInt64)
        /// `runloop:main_queue_end`.
        case mainQueueEnd(loopID: UInt64)
        /// `runloop:job_begin`: an actor job run by the loop as its executor; `enqueued` is when the runtime
        /// queued it, `priority` its `JobPriority` raw value.
        case jobBegin(loopID: UInt64, jobID: UInt64, enqueued: UInt64, priority: UInt8)
        /// `runloop:job_end`.
        case jobEnd(loopID: UInt64, jobID: UInt64)
        /// `runloop:loop_adapted`: an adapter traces this loop (a Foundation RunLoop, a SwiftNIO event loop of
        /// group `groupID`).
        case loopAdapted(loopID: UInt64, adapter: LoopAdapter, groupID: UInt64)
        /// `runloop:nio_tick`: a SwiftNIO tick's task phase (`start` to `end`, `tasks` run); `sleep` is the time
        /// since the previous tick ended, the wait and the I/O handled before this tick together.
        case nioTick(loopID: UInt64, start: UInt64, end: UInt64, sleep: UInt64, tasks: UInt64)
        /// `runloop:nio_io`: one I/O event a traced channel's pipeline handled, from `start` to `end`.
        case nioIO(loopID: UInt64, channelID: UInt64, event: NIOIOEvent, start: UInt64, end: UInt64)
        /// `runloop:probe_fire`: the lateness probe's task, due at `scheduled`, started `lateness` late and ran
        /// for `cost`.
        case probeFire(loopID: UInt64, scheduled: UInt64, lateness: UInt64, cost: UInt64)
        /// `runloop:wait_begin`: a thread of any program (`rlctl record --any`) is about to block in `call` on
        /// `target` (an epoll descriptor, -1 for poll and select) for at most `timeout` ns (-1: no timeout).
        case waitBegin(call: WaitCall, target: Int32, setSize: UInt32, timeout: Int64)
        /// `runloop:wait_end`: the thread's wait returned `ready` (-1 on failure, with `error` its errno).
        case waitEnd(ready: Int32, error: Int32)
        /// `runloop:wait_thread`: the waiting thread's process and names, before its first wait.
        case waitThread(pid: Int32, ppid: Int32, thread: String, process: String)
        /// `runloop:loop_stall`: an iteration busy past the process's stall threshold, reported by the loop.
        case loopStall(LoopStall)
        /// `runloop:loop_hang`: the watchdog saw `loopID` busy in `iteration` for at least `busy` ns, past
        /// `threshold`, while it was still stuck.
        case loopHang(loopID: UInt64, iteration: UInt64, busy: UInt64, threshold: UInt64)
        /// `runloop:wait_batch`: waits of one thread (not necessarily the event's), each with its begin and end
        /// time, sent together after they ended: what the interposer sends through LTTng instead of `wait_begin`
        /// and `wait_end`.
        case waitBatch(WaitBatch)
        /// `runloop:kernel_begin`: the kernel view follows process `pid`'s threads from here on.
        case kernelBegin(pid: Int32, command: String)
        /// `runloop:kernel_task`: names a task that kernel events mention (`pid` 0: a kernel thread or idle).
        case kernelTask(threadID: Int32, pid: Int32, command: String)
        /// `runloop:kernel_timer`: the hrtimer whose expiry woke `threadID` in the `kernelOffCPU` that follows.
        case kernelTimer(threadID: Int32, due: UInt64, latest: UInt64, fired: UInt64)
        /// `runloop:kernel_run_queue`: who held the CPU `threadID` waited for, in the `kernelOffCPU` that follows.
        case kernelRunQueue(KernelRunQueue)
        /// `runloop:kernel_off_cpu`: one time `threadID` was off its CPU, why, and what it waited for.
        case kernelOffCPU(KernelOffCPU)
        /// `runloop:kernel_lost`: the kernel recorder lost `records` records since `from`.
        case kernelLost(records: UInt64, from: UInt64)
    }

    /// What `runloop:kernel_run_queue` holds: the tasks that held CPU `cpu` while `threadID` was runnable there.
    public struct KernelRunQueue: Sendable, Equatable {
        public var threadID: Int32
        public var cpu: Int32
        /// Time held by tasks beyond ``culprits`` (and time queued on a CPU it then migrated from).
        public var others: UInt64
        /// Longest first.
        public var culprits: [Culprit]

        public struct Culprit: Sendable, Equatable {
            public var threadID: Int32
            public var nanoseconds: UInt64

            public init(threadID: Int32, nanoseconds: UInt64) {
                self.threadID = threadID
                self.nanoseconds = nanoseconds
            }
        }

        public init(threadID: Int32, cpu: Int32, others: UInt64, culprits: [Culprit]) {
            self.threadID = threadID
            self.cpu = cpu
            self.others = others
            self.culprits = culprits
        }
    }

    /// What `runloop:kernel_off_cpu` holds: thread `threadID` off its CPU from `left` to `back`.
    public struct KernelOffCPU: Sendable, Equatable {
        public var threadID: Int32
        public var reason: KernelOffCPUReason
        /// The system call it blocked in (the machine's number), -1 when none (a page fault, or it left runnable).
        public var syscall: Int32
        public var left: UInt64
        /// When it became runnable again (`left` when it left runnable).
        public var woken: UInt64
        /// When a CPU ran it again.
        public var back: UInt64
        public var cpu: Int32
        /// The task that woke it, 0 for an interrupt or the idle task, -1 when it left runnable.
        public var wakerThreadID: Int32
        /// Of `woken` to `back`, the time its cgroup was out of CPU quota.
        public var throttled: UInt64

        public init(threadID: Int32, reason: KernelOffCPUReason, syscall: Int32, left: UInt64, woken: UInt64, back: UInt64, cpu: Int32,
                    wakerThreadID: Int32, throttled: UInt64) {
            self.threadID = threadID
            self.reason = reason
            self.syscall = syscall
            self.left = left
            self.woken = woken
            self.back = back
            self.cpu = cpu
            self.wakerThreadID = wakerThreadID
            self.throttled = throttled
        }

        /// Blocked: from `left` to `woken` (0 when it left runnable).
        public var blocked: UInt64 { woken &- left }
        /// Runnable and waiting for a CPU: from `woken` to `back`, the throttled part included.
        public var runnable: UInt64 { back &- woken }
    }

    /// What `runloop:wait_batch` holds: waits of thread `threadID`, in its order.
    public struct WaitBatch: Sendable, Equatable {
        public var threadID: Int32
        public var waits: [Wait]

        public init(threadID: Int32, waits: [Wait]) {
            self.threadID = threadID
            self.waits = waits
        }

        /// The `wait_begin` and `wait_end` events the waits stand for, at their own times on their own thread, as
        /// the embedded recorder writes them (a wait that had not returned: its begin alone). They are earlier
        /// than the batch and than events of other threads read before it: for exports, not for a time-ordered
        /// stream. A wait in progress when the recording began: its end alone.
        public func events(processID: Int32) -> [TraceEvent] {
            var events: [TraceEvent] = []
            events.reserveCapacity(waits.count * 2)
            for wait in waits {
                if wait.beganBeforeRecording {
                    if !wait.isMarker, let end = wait.end {
                        events.append(TraceEvent(timestamp: end, threadID: threadID, processID: processID,
                                                 payload: .waitEnd(ready: wait.ready, error: wait.error)))
                    }
                    continue
                }
                events.append(TraceEvent(timestamp: wait.begin, threadID: threadID, processID: processID,
                                         payload: .waitBegin(call: wait.call, target: wait.target, setSize: wait.setSize, timeout: wait.timeout)))
                if let end = wait.end {
                    events.append(TraceEvent(timestamp: end, threadID: threadID, processID: processID,
                                             payload: .waitEnd(ready: wait.ready, error: wait.error)))
                }
            }
            return events
        }

        /// One wait: `wait_begin`'s fields, when it began and ended, and `wait_end`'s fields.
        public struct Wait: Sendable, Equatable {
            public var call: WaitCall
            public var target: Int32
            public var setSize: UInt32
            public var timeout: Int64
            public var begin: UInt64
            /// nil: the wait had not returned when the recording ended.
            public var end: UInt64?
            public var ready: Int32
            public var error: Int32

            /// Whether the wait was already in progress when the recording began (`begin` all ones: the kernel
            /// recorder attached while the thread waited; its start and timeout are unknown), or is no wait at all
            /// (``outsideWaitsAtRecordingStart``).
            public var beganBeforeRecording: Bool { begin == .max }

            /// No wait: the thread was outside its waits when the recording began, at `end` (`begin` all ones,
            /// `error` -1): its first iteration's known part starts there.
            public var outsideWaitsAtRecordingStart: Bool { begin == .max && error == -1 }

            /// A marker, not a wait (`begin` all ones, `error` negative): ``outsideWaits(at:call:target:)`` (-1) or
            /// ``threadBegan(at:call:target:)`` (-2).
            public var isMarker: Bool { begin == .max && error < 0 }

            /// The marker of a thread outside its waits when the recording began at `time`, on the loop of `call`
            /// and `target` (the wait that ends that first iteration).
            public static func outsideWaits(at time: UInt64, call: WaitCall, target: Int32) -> Wait {
                Wait(call: call, target: target, setSize: 0, timeout: -1, begin: .max, end: time, ready: -1, error: -1)
            }

            /// The marker of a thread that began at `time`, during the recording: its first iteration starts there.
            public static func threadBegan(at time: UInt64, call: WaitCall, target: Int32) -> Wait {
                Wait(call: call, target: target, setSize: 0, timeout: -1, begin: .max, end: time, ready: -1, error: -2)
            }

            public init(call: WaitCall, target: Int32, setSize: UInt32, timeout: Int64, begin: UInt64, end: UInt64?, ready: Int32, error: Int32) {
                self.call = call
                self.target = target
                self.setSize = setSize
                self.timeout = timeout
                self.begin = begin
                self.end = end
                self.ready = ready
                self.error = error
            }
        }
    }

    /// What `runloop:loop_stall` reports: where, how long, and the callout that ran longest.
    public struct LoopStall: Sendable, Equatable {
        public var loopID: UInt64
        public var mode: String
        /// The loop's iteration number (counted across its nested runs).
        public var iteration: UInt64
        /// When the iteration began.
        public var start: UInt64
        /// The iteration's time minus its sleeps.
        public var busy: UInt64
        /// The threshold the loop compared `busy` with.
        public var threshold: UInt64
        public var culpritKind: LoopCalloutKind
        public var culpritID: UInt64
        /// How long the culprit's callout took (0 when `culpritKind` is none).
        public var culpritDuration: UInt64
        /// The culprit's label ("" when it has none).
        public var culpritLabel: String

        public init(loopID: UInt64, mode: String, iteration: UInt64, start: UInt64, busy: UInt64, threshold: UInt64, culpritKind: LoopCalloutKind,
                    culpritID: UInt64, culpritDuration: UInt64, culpritLabel: String) {
            self.loopID = loopID
            self.mode = mode
            self.iteration = iteration
            self.start = start
            self.busy = busy
            self.threshold = threshold
            self.culpritKind = culpritKind
            self.culpritID = culpritID
            self.culpritDuration = culpritDuration
            self.culpritLabel = culpritLabel
        }
    }

    /// The event's full name, as LTTng shows it (`runloop:before_waiting`).
    public var name: String { "runloop:" + payload.eventName }
}

extension TraceEvent.Payload {
    /// The event name without the provider (`before_waiting`).
    public var eventName: String {
        switch self {
        case .activity(let activity, _): return activity.description
        case .runBegin: return "run_begin"
        case .runEnd: return "run_end"
        case .timerFireBegin: return "timer_fire_begin"
        case .timerFireEnd: return "timer_fire_end"
        case .sourceSignal: return "source_signal"
        case .sourcePerformBegin: return "source_perform_begin"
        case .sourcePerformEnd: return "source_perform_end"
        case .blockBegin: return "block_begin"
        case .blockEnd: return "block_end"
        case .observerBegin: return "observer_begin"
        case .observerEnd: return "observer_end"
        case .wakeUp: return "wakeup"
        case .loopCreate: return "loop_create"
        case .itemLabel: return "item_label"
        case .mainQueueBegin: return "main_queue_begin"
        case .mainQueueEnd: return "main_queue_end"
        case .jobBegin: return "job_begin"
        case .jobEnd: return "job_end"
        case .loopAdapted: return "loop_adapted"
        case .nioTick: return "nio_tick"
        case .nioIO: return "nio_io"
        case .probeFire: return "probe_fire"
        case .waitBegin: return "wait_begin"
        case .waitEnd: return "wait_end"
        case .waitThread: return "wait_thread"
        case .loopStall: return "loop_stall"
        case .loopHang: return "loop_hang"
        case .waitBatch: return "wait_batch"
        case .kernelBegin: return "kernel_begin"
        case .kernelTask: return "kernel_task"
        case .kernelTimer: return "kernel_timer"
        case .kernelRunQueue: return "kernel_run_queue"
        case .kernelOffCPU: return "kernel_off_cpu"
        case .kernelLost: return "kernel_lost"
        }
    }
}

/// What a reader knows about a trace's completeness: never hidden from a summary.
public struct TraceHealth: Sendable, Equatable {
    /// Events decoded.
    public var eventsRead: UInt64 = 0
    /// Events the tracer dropped (LTTng's discarded events; the recorder's full buffers).
    public var eventsLost: UInt64 = 0
    /// Whole packets lost (LTTng's discarded packets), when the tracer reports them.
    public var packetsLost: UInt64 = 0
    /// Events of kinds this build does not know (a newer recorder's), skipped by their declared fields: read
    /// correctly but left out of the events; not a loss.
    public var eventsSkipped: UInt64 = 0
    /// The windows where events were lost: per thread or stream, from the last good timestamp to the next.
    public var lossWindows: [LossWindow] = []
    /// The recording never completed the trace: its process was killed or crashed while recording (the embedded
    /// recorder writes its `end` file last). Each thread's events after its last written packet are missing, and
    /// how many is unknown; a packet cut short by the end is left out.
    public var recordingCutOff = false
    /// What the trace's own accounting says is missing, one line each (a stream file deleted, emptied or cut
    /// short; events of the schema the metadata no longer declares). Every such event is also in ``eventsLost``
    /// (at least one when the count is unknown), so a damaged trace is never complete.
    public var damage: [String] = []
    /// Why a recording cut off stopped: it could not write its trace (the text of its errno: "No space left on
    /// device"), rather than its process being killed. Nil when no recording said so.
    public var writeFailure: String?

    public init() {}

    public struct LossWindow: Sendable, Equatable {
        public var stream: String
        public var from: UInt64
        public var to: UInt64
        public var events: UInt64
        public init(stream: String, from: UInt64, to: UInt64, events: UInt64) {
            self.stream = stream
            self.from = from
            self.to = to
            self.events = events
        }
    }

    /// Whether anything was lost.
    public var isComplete: Bool { eventsLost == 0 && packetsLost == 0 }

    /// Loss windows kept apart; past this many, each new window is merged into the last one, which then covers every
    /// stream (its counts stay exact): a trace that loses events in every packet must not hold a window per packet.
    public static let maxLossWindows = 1 << 16

    /// Records a loss window, within ``maxLossWindows``.
    public mutating func noteLossWindow(_ window: LossWindow) {
        guard lossWindows.count >= Self.maxLossWindows, var last = lossWindows.last else {
            lossWindows.append(window)
            return
        }
        if last.stream != Self.mergedLossStream {
            damage.append("more than \(Self.maxLossWindows) loss windows: the later ones are merged into one over every stream")
            last.stream = Self.mergedLossStream
        }
        last.from = min(last.from, window.from)
        last.to = max(last.to, window.to)
        last.events = last.events.addingLoss(window.events)
        lossWindows[lossWindows.count - 1] = last
    }

    /// The stream name of windows that cover every stream.
    public static let mergedLossStream = "trace"
}

extension UInt64 {
    /// A sum of loss counts: they come from the trace itself, and a corrupt one near 2^64 is a huge loss, not an
    /// overflow trap (in the readers, the summaries and the budget checks alike).
    package func addingLoss(_ count: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(count)
        return overflow ? .max : sum
    }
}

/// A source of trace events in timestamp order, read incrementally (constant memory whatever the trace size).
public protocol TraceEventReader {
    /// The next event in timestamp order, nil at the end.
    /// - Throws: ``TraceReadError`` for a corrupt, truncated or unreadable trace.
    mutating func next() throws(TraceReadError) -> TraceEvent?
    /// Completeness so far (final once `next()` returned nil).
    var health: TraceHealth { get }
}

/// Why a trace could not be read: names the file and byte offset when it is about the data.
public struct TraceReadError: Error, CustomStringConvertible, Equatable {
    public var path: String
    public var offset: UInt64?
    public var reason: String

    public init(path: String, offset: UInt64? = nil, reason: String) {
        self.path = path
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        if let offset { return "\(path): at byte \(offset): \(reason)" }
        return "\(path): \(reason)"
    }
}

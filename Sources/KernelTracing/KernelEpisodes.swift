import CKernelProbe
import TraceModel

/// A task a kernel event mentions (a waker, a task that held the CPU), named by `kernel_task` before the first
/// event that mentions it. The command stays the kernel's 16 bytes until it is named: most records mention tasks
/// named long ago, and the consumer must keep up with the ring buffer.
struct KernelTaskName: Hashable, Sendable {
    var threadID: Int32
    var processID: Int32
    var comm: (UInt64, UInt64)

    init(threadID: Int32, processID: Int32, comm: (UInt64, UInt64)) {
        self.threadID = threadID
        self.processID = processID
        self.comm = comm
    }

    init(threadID: Int32, processID: Int32, command: String) {
        var bytes: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            for (index, byte) in command.utf8.prefix(15).enumerated() { raw[index] = byte }
        }
        self.init(threadID: threadID, processID: processID, comm: bytes)
    }

    init(_ task: rl_kp_task) {
        self.init(threadID: task.tid, processID: task.pid, comm: unsafeBitCast(task.comm, to: (UInt64, UInt64).self))
    }

    var command: String { commandString(comm) }

    static func == (a: Self, b: Self) -> Bool {
        a.threadID == b.threadID && a.processID == b.processID && a.comm == b.comm
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(threadID)
        hasher.combine(processID)
        hasher.combine(comm.0)
        hasher.combine(comm.1)
    }
}

/// The events of one probe record, all stamped with one time, in the schema's order; and the tasks they mention,
/// named when the group is handed out (in time order, so that the name comes before the first mention even when
/// records arrive out of order).
struct KernelEventGroup: Sendable {
    var timestamp: UInt64
    var mentions: [KernelTaskName]
    var events: [TraceEvent]
}

/// Turns the probe's records into the schema's events, and hands them out in time order.
///
/// Records of different CPUs reach the ring buffer slightly out of order: each poll's groups are sorted, those
/// newer than `now - reorderWindow` are held for the next poll, and a group that still comes older than what was
/// handed out is stamped with the last time handed out (its fields keep the exact times).
struct KernelEventOrdering: Sendable {
    let reorderWindow: UInt64
    private var held: [(sequence: UInt64, group: KernelEventGroup)] = []
    private var sequence: UInt64 = 0
    private var named: Set<KernelTaskName> = []
    private(set) var lastHandedOut: UInt64 = 0

    init(reorderWindow: UInt64) {
        self.reorderWindow = reorderWindow
    }

    mutating func add(_ group: KernelEventGroup) {
        held.append((sequence, group))
        sequence += 1
    }

    /// The groups up to `now - reorderWindow` (all of them when `final`), as events in non-decreasing time order.
    mutating func release(now: UInt64, final: Bool) -> [TraceEvent] {
        guard !held.isEmpty else { return [] }
        held.sort { ($0.group.timestamp, $0.sequence) < ($1.group.timestamp, $1.sequence) }
        let limit = final ? UInt64.max : (now > reorderWindow ? now - reorderWindow : 0)
        let count = held.firstIndex { $0.group.timestamp > limit } ?? held.count
        var events: [TraceEvent] = []
        for (_, group) in held[..<count] {
            let time = max(group.timestamp, lastHandedOut)
            for task in group.mentions where named.insert(task).inserted {
                events.append(TraceEvent(timestamp: time, threadID: task.threadID, processID: task.processID,
                                         payload: .kernelTask(threadID: task.threadID, pid: task.processID, command: task.command)))
            }
            for var event in group.events {
                event.timestamp = time
                events.append(event)
            }
            lastHandedOut = time
        }
        held.removeFirst(count)
        return events
    }
}

/// A fixed-size C string (a task's comm) as a String.
func commandString<T>(_ tuple: T) -> String {
    withUnsafeBytes(of: tuple) { bytes in
        let length = bytes.firstIndex(of: 0) ?? bytes.count
        return String(decoding: bytes[..<length], as: UTF8.self)
    }
}

extension KernelEventGroup {
    /// The events of one record of the probe: a time off the CPU, or a process followed because a followed one
    /// started it.
    init?(record r: rl_kp_record) {
        switch Int(r.kind) {
        case RL_KP_FORK:
            let command = commandString(r.comm)
            self.init(timestamp: r.left_ns, mentions: [],
                      events: [TraceEvent(timestamp: r.left_ns, threadID: r.pid, processID: r.pid,
                                          payload: .kernelBegin(pid: r.pid, command: command))])
        case RL_KP_EPISODE:
            self.init(episode: r)
        default:
            return nil
        }
    }

    private init?(episode r: rl_kp_record) {
        guard let reason = KernelOffCPUReason(rawValue: r.reason) else { return nil }
        let time = r.back_ns
        var mentions: [KernelTaskName] = []
        var events: [TraceEvent] = []
        func event(_ payload: TraceEvent.Payload) -> TraceEvent {
            TraceEvent(timestamp: time, threadID: r.tid, processID: r.pid, payload: payload)
        }
        var waker: Int32 = -1
        if !reason.leftRunnable {
            waker = r.has_waker != 0 ? r.waker.tid : 0
            if waker != 0 {
                mentions.append(KernelTaskName(r.waker))
            }
        }
        if r.has_timer != 0 {
            events.append(event(.kernelTimer(threadID: r.tid, due: r.timer_due_ns, latest: r.timer_latest_ns, fired: r.timer_fired_ns)))
        }
        var culprits: [TraceEvent.KernelRunQueue.Culprit] = []
        withUnsafeBytes(of: r.culprits) { raw in
            let all = raw.bindMemory(to: rl_kp_culprit.self)
            for culprit in all.prefix(Int(r.culprit_count)) where culprit.ns > 0 {
                culprits.append(.init(threadID: culprit.task.tid, nanoseconds: culprit.ns))
                mentions.append(KernelTaskName(culprit.task))
            }
        }
        culprits.sort { ($0.nanoseconds, $1.threadID) > ($1.nanoseconds, $0.threadID) }
        if !culprits.isEmpty || r.others_ns > 0 {
            events.append(event(.kernelRunQueue(.init(threadID: r.tid, cpu: r.queue_cpu >= 0 ? r.queue_cpu : r.cpu,
                                                      others: r.others_ns, culprits: culprits))))
        }
        events.append(event(.kernelOffCPU(.init(threadID: r.tid, reason: reason, syscall: r.syscall, left: r.left_ns,
                                                 woken: r.woken_ns, back: r.back_ns, cpu: r.cpu, wakerThreadID: waker,
                                                 throttled: r.throttled_ns))))
        self.init(timestamp: time, mentions: mentions, events: events)
    }
}

/// One wait call of a followed thread (epoll_wait, epoll_pwait, epoll_pwait2, poll, ppoll, select, pselect6), seen
/// by the kernel's syscall tracepoints as the thread made it: what `rlctl record --any`'s interposer sees from
/// inside the program, for a program nothing was loaded into (one already running, one that makes raw system
/// calls: Go).
public struct KernelWait: Sendable, Equatable {
    public var threadID: Int32
    public var processID: Int32
    /// The call as the schema's wait_batch holds it; `begin` is `UInt64.max` for a wait already in progress when the
    /// recording began (its start and timeout are unknown: timeout -1; its target and set size are read from the
    /// registers the call was made with).
    public var wait: TraceEvent.WaitBatch.Wait
    /// The thread's waits just before this one that the kernel recorder lost (its ring buffer was full).
    public var lostBefore: UInt32
    /// The thread's name (comm) when the call returned, as the kernel's 16 bytes.
    var comm: (UInt64, UInt64)

    public var threadName: String { commandString(comm) }

    /// Whether the wait was already in progress when the recording began.
    public var beganBeforeRecording: Bool { wait.beganBeforeRecording }

    public init(threadID: Int32, processID: Int32, threadName: String, wait: TraceEvent.WaitBatch.Wait, lostBefore: UInt32 = 0) {
        self.threadID = threadID
        self.processID = processID
        self.wait = wait
        self.lostBefore = lostBefore
        comm = KernelTaskName(threadID: threadID, processID: processID, command: threadName).comm
    }

    init?(_ r: rl_kp_wait) {
        guard r.call <= UInt32(UInt8.max), let call = WaitCall(rawValue: UInt8(r.call)) else { return nil }
        threadID = r.tid
        processID = r.pid
        wait = .init(call: call, target: r.target, setSize: r.set_size, timeout: r.timeout_ns, begin: r.begin_ns,
                     end: r.end_ns, ready: r.ready, error: r.error)
        lostBefore = r.lost_before
        comm = unsafeBitCast(r.comm, to: (UInt64, UInt64).self)
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.threadID == b.threadID && a.processID == b.processID && a.wait == b.wait && a.lostBefore == b.lostBefore
            && a.comm == b.comm
    }
}

import CKernelProbe
import Foundation
import Glibc
import TraceModel

/// Whether the kernel view can run on this machine.
public enum KernelView {
    /// nil when the kernel view can run here (with `recordingWaits`, also its wait calls' programs, for
    /// `record --pid`); else one line saying why not and what to do (not root, built or installed without libbpf, no
    /// BTF, a missing tracepoint, BPF disabled, the verifier's refusal). Loads the probe to let the kernel check it,
    /// then unloads it.
    public static func unavailableReason(recordingWaits: Bool = false) -> String? {
        var why = [CChar](repeating: 0, count: 1024)
        return rl_kp_unavailable(recordingWaits ? 1 : 0, &why, why.count) == 0 ? nil : text(why)
    }

    /// Whether this build has the probe at all (Package.swift found libbpf-dev).
    public static var isBuilt: Bool { rl_kp_built() != 0 }
}

/// Why the kernel recorder could not start or follow a process: one line.
public struct KernelRecorderError: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// The kernel's side of the followed processes' threads: every time one of them was off its CPU (why, in which
/// system call, who woke it and from which timer, who held the CPU while it waited for it), as the `kernel_*`
/// events of the trace schema.
///
/// One consumer thread reads the probe's ring buffer every `Options.pollInterval` and hands `sink` the events in
/// batches, in non-decreasing timestamp order across calls (the last batch from `stop()`). That thread is never
/// followed itself. Nothing is pinned in the kernel: what the recorder loaded goes away with `stop()`, or with
/// the process however it ends (SIGKILL included).
public final class KernelRecorder: Sendable {
    public struct Options: Sendable {
        /// Also follow the processes that followed processes start (from the moment they are forked).
        public var followChildren: Bool
        /// Threads of followed processes to leave out (the caller's own helper threads).
        public var excludedThreads: [Int32]
        /// The ring buffer's size in bytes: a power of two, at least a page. A record takes 272 bytes: the default
        /// 16 MiB holds about 60 000, 200 ms of two threads switching 300 000 times a second, so that a consumer
        /// kept off the CPU for a while (the followed threads are busy, the machine has 2 cores) loses nothing.
        public var ringBytes: UInt32
        /// How often the consumer thread reads the ring buffer.
        public var pollInterval: Duration
        /// Records newer than this are held to the next poll, so that those of other CPUs can still come before.
        public var reorderWindow: Duration
        /// Whether a wake-up's interrupt context is read from the CPU's preempt count where the kernel's BTF says
        /// where it is (x86-64), instead of kept by programs on every irq and softirq entry and exit (a NIO server
        /// under load enters softirqs 150,000 times a second). False: those programs, as on kernels without it.
        public var readsPreemptCount = true
        /// With waits: the token with which rlctl's wait interposer claims a thread's waits (it records them itself,
        /// and the recorder leaves the thread out from then on); 0: none.
        public var claimToken: UInt32 = 0

        public init(followChildren: Bool = false, excludedThreads: [Int32] = [], ringBytes: UInt32 = 16 << 20,
                    pollInterval: Duration = .milliseconds(10), reorderWindow: Duration = .milliseconds(2)) {
            self.followChildren = followChildren
            self.excludedThreads = excludedThreads
            self.ringBytes = ringBytes
            self.pollInterval = pollInterval
            self.reorderWindow = reorderWindow
        }
    }

    public struct Statistics: Sendable, Equatable {
        /// Times off the CPU received.
        public var records: UInt64
        /// Times off the CPU dropped because the ring buffer was full (the consumer fell behind).
        public var ringFull: UInt64
        /// Times off the CPU whose state could not be kept: the thread's storage could not be made, or its
        /// return to a CPU was not seen and could not be rebuilt.
        public var untracked: UInt64
        /// Times off the CPU whose return to a CPU reached no program of the probe, rebuilt from the scheduler's
        /// own counters (run time, arrivals, time queued): received, not lost; the switch-in time is within a few
        /// µs (docs/kernel-view.md).
        public var rebuilt: UInt64 = 0
        /// Hard interrupts whose preempt count read as none: the kernel's layout does not fit the offsets its BTF
        /// gave, so a waker that was an interrupt may be named as the task it stopped (0 where the count is not
        /// read, or read right).
        public var interruptMisreads: UInt64 = 0
        /// All the times off the CPU lost (what the kernel_lost events add up to).
        public var lost: UInt64 { ringFull + untracked }
        /// Wait calls dropped because the ring buffer was full (or no state could be kept for their thread).
        public var waitsLost: UInt64 = 0
        /// Of those, the ones a thread's next wait placed on its stream (``KernelWaitThreads/ThreadEvents/lostBefore``),
        /// so that its loop knows where its chain broke; the rest (a thread that ended, or the recording, before its
        /// next wait) no stream can place.
        public var waitsLostPlaced: UInt64 = 0

        public init(records: UInt64 = 0, ringFull: UInt64 = 0, untracked: UInt64 = 0) {
            self.records = records
            self.ringFull = ringFull
            self.untracked = untracked
        }
    }

    private let state: Locked<State>
    private let sink: @Sendable ([TraceEvent]) -> Void
    private let waitSink: (@Sendable ([KernelWaitThreads.ThreadEvents]) -> Void)?
    private let consumerDone = DispatchSemaphore(value: 0)
    private let pollInterval: Duration

    private struct State: ~Copyable {
        var probe: OpaquePointer?
        var ordering: KernelEventOrdering
        var statistics = Statistics()
        var stopping = false
        var finalStatistics: Statistics?
        var consumerThread: Int32 = 0
        var waitThreads = KernelWaitThreads()
    }

    /// Loads the probe and attaches it; follows nothing until `follow(process:)`. With `waits`, the followed threads'
    /// wait calls are recorded too, from the kernel's syscall tracepoints, and handed to it as each thread's
    /// `wait_thread` and `wait_batch` events, in the thread's order (``KernelWaitThreads``); every process's system
    /// calls then take the kernel's slower entry path until `stop()`.
    public init(options: Options = Options(), sink: @escaping @Sendable ([TraceEvent]) -> Void,
                waits waitSink: (@Sendable ([KernelWaitThreads.ThreadEvents]) -> Void)? = nil) throws(KernelRecorderError) {
        var why = [CChar](repeating: 0, count: 1024)
        guard let probe = rl_kp_open(options.ringBytes, options.followChildren ? 1 : 0, options.readsPreemptCount ? 1 : 0,
                                     waitSink == nil ? 0 : 1, options.claimToken, &why, why.count) else {
            throw KernelRecorderError(text(why))
        }
        for tid in options.excludedThreads {
            let result = rl_kp_skip(probe, tid)
            if result != 0 {
                rl_kp_close(probe)
                throw KernelRecorderError("cannot leave thread \(tid) out of the kernel view: \(String(cString: strerror(-result)))")
            }
        }
        let window = options.reorderWindow.components
        let windowNanoseconds = UInt64(window.seconds) * 1_000_000_000 + UInt64(window.attoseconds / 1_000_000_000)
        state = Locked(State(probe: probe, ordering: KernelEventOrdering(reorderWindow: windowNanoseconds)))
        self.sink = sink
        self.waitSink = waitSink
        pollInterval = options.pollInterval
        let started = DispatchSemaphore(value: 0)
        // The thread holds the recorder only while it polls, so that dropping the recorder stops it (deinit).
        let weakSelf = WeakRecorder(self)
        let thread = Thread { [pollInterval, consumerDone] in
            Self.consume(weakSelf, every: pollInterval, started: started, done: consumerDone)
        }
        thread.name = "rlctl-kernel"
        thread.start()
        // The consumer thread is left out before anything can be followed (it may be in a followed process).
        started.wait()
    }

    deinit {
        _ = stop()
    }

    /// Follows every thread of process `pid`, from now on (`kernel_begin` says so, with its command). `fromItsStart`:
    /// the process has not run its program yet (held at rlctl's gate), so nothing of it began before the recording.
    public func follow(process pid: Int32, fromItsStart: Bool = false) throws(KernelRecorderError) {
        let command: String
        do {
            command = try String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)
                .trimmingCharacters(in: .newlines)
        } catch {
            throw KernelRecorderError("no process \(pid) to follow (/proc/\(pid)/comm cannot be read)")
        }
        let failure: String? = state.withLock { state in
            guard let probe = state.probe, !state.stopping else { return "the kernel recorder is stopped" }
            // Before the follow: no event of the process can then come before the time it is followed from.
            let now = Self.monotonicNow()
            let result = rl_kp_follow(probe, pid)
            guard result == 0 else { return "cannot follow process \(pid): \(String(cString: strerror(-result)))" }
            state.ordering.add(KernelEventGroup(timestamp: now, mentions: [], events: [
                TraceEvent(timestamp: now, threadID: pid, processID: pid, payload: .kernelBegin(pid: pid, command: command)),
            ]))
            // Attaching to a running process (waits recorded): its threads now. For those outside a wait, the first wait
            // ends an iteration whose known part starts here; those asleep are off their CPU from here on, as far as
            // the recording knows, so that when they wake (a Go thread parked on a futex) that is seen.
            if waitSink != nil && !fromItsStart {
                let threads = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []).compactMap { Int32($0) }
                state.waitThreads.followed(threads: threads, at: now)
                for tid in threads { Self.seedIfAsleep(probe, pid: pid, tid: tid, at: now) }
            }
            return nil
        }
        if let failure { throw KernelRecorderError(failure) }
    }

    /// Seeds the probe's open time off the CPU for thread `tid` when it is asleep now (state S or D), with the system
    /// call it sleeps in and the scheduler's counters (/proc/PID/task/TID/schedstat: run time, time queued, arrivals).
    private static func seedIfAsleep(_ probe: OpaquePointer, pid: Int32, tid: Int32, at now: UInt64) {
        let task = "/proc/\(pid)/task/\(tid)"
        // The counters first: a thread that wakes after they are read is no longer asleep when its state is.
        guard let schedstat = try? String(contentsOfFile: task + "/schedstat", encoding: .utf8),
              let state = ProcessStat(pid: pid, thread: tid)?.state, state == "S" || state == "D" else { return }
        let counters = schedstat.split(whereSeparator: \.isWhitespace).compactMap { UInt64($0) }
        guard counters.count == 3 else { return }
        let call = (try? String(contentsOfFile: task + "/syscall", encoding: .utf8))?.split(separator: " ").first.flatMap { Int32($0) } ?? -1
        let reason = UInt8(state == "S" ? RL_KP_SLEEPING : RL_KP_DISK_SLEEP)
        _ = rl_kp_seed(probe, tid, now, reason, call, counters[0], counters[2], counters[1])
    }

    /// Detaches the probe, hands `sink` (and the wait sink) what was left, unloads everything; the counts of the whole
    /// recording.
    /// A second call returns the same counts.
    @discardableResult
    public func stop() -> Statistics {
        let first: Bool = state.withLock { state in
            if state.stopping { return false }
            state.stopping = true
            return true
        }
        guard first else {
            // Another stop() ran (or runs): wait for its counts.
            while true {
                if let done = state.withLock({ $0.finalStatistics }) { return done }
                usleep(1000)
            }
        }
        // (From deinit on the consumer thread itself, which then ends at its next wake-up, there is nothing to wait
        // for: it is not polling.)
        if state.withLock({ $0.consumerThread }) != rl_kp_thread_id() { consumerDone.wait() }
        // Detached first, so that the last read holds every record sent, and the losses are final.
        let last = state.withLock { state in
            rl_kp_detach(state.probe)
            return poll(&state, final: true)
        }
        hand(last)
        return state.withLock { state in
            rl_kp_close(state.probe)
            state.probe = nil
            state.finalStatistics = state.statistics
            return state.statistics
        }
    }

    // ===== the consumer thread =====

    /// Holds the recorder for its consumer thread without keeping it alive (a parameter or capture of the
    /// recorder itself would, for the whole loop).
    private final class WeakRecorder: Sendable {
        weak let recorder: KernelRecorder?
        init(_ recorder: KernelRecorder) { self.recorder = recorder }
    }

    private static func consume(_ weakRecorder: WeakRecorder, every pollInterval: Duration, started: DispatchSemaphore,
                                done: DispatchSemaphore) {
        let tid = rl_kp_thread_id()
        weakRecorder.recorder?.state.withLock { state in
            state.consumerThread = tid
            if let probe = state.probe { _ = rl_kp_skip(probe, tid) }
        }
        started.signal()
        let interval = pollInterval.components
        let sleep = timespec(tv_sec: Int(interval.seconds), tv_nsec: Int(interval.attoseconds / 1_000_000_000))
        while true {
            var remaining = sleep
            var request = sleep
            // Sleeping between reads (and records sent without a wake-up, BPF_RB_NO_WAKEUP) keeps the followed
            // threads' context switches free of the ring buffer's wake-up work.
            while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
            guard let strong = weakRecorder.recorder else { break }
            let (stopping, batch) = strong.state.withLock { state in
                state.stopping ? (true, Polled()) : (false, strong.poll(&state, final: false))
            }
            if stopping { break }
            strong.hand(batch)
        }
        done.signal()
    }

    private final class Collected {
        var groups: [KernelEventGroup] = []
        var records: UInt64 = 0
        var waits: [KernelWait] = []
        var threadsMade: [(tid: Int32, at: UInt64)] = []
    }

    /// What one poll hands out: the kernel events in time order, and the wait calls in each thread's order.
    private struct Polled {
        var events: [TraceEvent] = []
        var waits: [KernelWaitThreads.ThreadEvents] = []
    }

    private func hand(_ polled: Polled) {
        // Waits first: a kernel event about a wait's thread never needs the wait, and the reverse order would let a
        // reader that follows both see an episode before the wait it belongs to only at the end of a poll.
        if !polled.waits.isEmpty { waitSink?(polled.waits) }
        if !polled.events.isEmpty { sink(polled.events) }
    }

    /// Reads the ring buffer and the loss counters; the events that can be handed out now, and the waits read.
    private func poll(_ state: inout State, final: Bool) -> Polled {
        guard let probe = state.probe else { return Polled() }
        let collected = Collected()
        _ = rl_kp_consume(probe, { context, record in
            guard let context, let record else { return }
            let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
            if Int(record.pointee.kind) == RL_KP_EPISODE { collected.records += 1 }
            if Int(record.pointee.kind) == RL_KP_THREAD {
                collected.threadsMade.append((record.pointee.tid, record.pointee.left_ns))
            } else if let group = KernelEventGroup(record: record.pointee) {
                collected.groups.append(group)
            }
        }, { context, wait in
            guard let context, let wait else { return }
            let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
            if let wait = KernelWait(wait.pointee) { collected.waits.append(wait) }
        }, Unmanaged.passUnretained(collected).toOpaque())
        state.statistics.records += collected.records
        // (A thread's making is sent before its first wait: in this read or an earlier one.)
        for made in collected.threadsMade { state.waitThreads.began(thread: made.tid, at: made.at) }
        for group in collected.groups { state.ordering.add(group) }
        var dropped: UInt64 = 0, untracked: UInt64 = 0, rebuilt: UInt64 = 0, misreads: UInt64 = 0, waitsDropped: UInt64 = 0
        var first: UInt64 = 0
        rl_kp_take_losses(probe, &dropped, &untracked, &rebuilt, &misreads, &waitsDropped, &first)
        state.statistics.waitsLost += waitsDropped
        state.statistics.rebuilt += rebuilt
        state.statistics.interruptMisreads += misreads
        let now = Self.monotonicNow()
        if dropped + untracked > 0 {
            state.statistics.ringFull += dropped
            state.statistics.untracked += untracked
            state.ordering.add(KernelEventGroup(timestamp: now, mentions: [], events: [
                TraceEvent(timestamp: now, threadID: 0, processID: 0,
                           payload: .kernelLost(records: dropped + untracked, from: first == 0 ? now : first)),
            ]))
        }
        let waits = collected.waits.isEmpty ? [] : state.waitThreads.events(for: collected.waits)
        state.statistics.waitsLostPlaced += waits.reduce(0) { $0 + $1.lostBefore }
        return Polled(events: state.ordering.release(now: now, final: final), waits: waits)
    }

    static func monotonicNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

/// A NUL-terminated C buffer as a String.
func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// A value under a pthread-based lock (NSLock), which ThreadSanitizer sees; it does not see Synchronization's
/// Mutex on Linux, and the recorder's state is shared by the consumer thread and whoever stops it.
private final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: consuming Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

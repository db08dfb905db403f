import Foundation
import TraceModel

/// Turns the kernel recorder's wait calls into the events a wait interposer's recording holds, thread by thread:
/// each thread's `wait_thread` before its first wait and again whenever its name changed (names follow renames,
/// as the interposer's do), then its waits as one `wait_batch` per call, stamped with the last wait's end.
public struct KernelWaitThreads: Sendable {
    /// A process's parent and name, as `wait_thread` carries them.
    public struct Process: Sendable, Equatable {
        public var parent: Int32
        public var name: String

        public init(parent: Int32, name: String) {
            self.parent = parent
            self.name = name
        }
    }

    /// One thread's part of a batch: its events, and how many of its waits were lost just before them.
    public struct ThreadEvents: Sendable, Equatable {
        public var threadID: Int32
        public var lostBefore: UInt64
        public var events: [TraceEvent]
    }

    private var named: [Int32: String] = [:]
    /// The threads of each followed process when it was attached to, and when; and the threads made since, and
    /// when: a thread's first wait that was not in progress at the attach ends an iteration whose known part starts
    /// there (or starts with the thread).
    private var attached: [Int32: (at: UInt64, made: Bool)] = [:]

    /// A process is followed from `time` on, with these threads.
    public mutating func followed(threads: [Int32], at time: UInt64) {
        for tid in threads { attached[tid] = (time, false) }
    }

    /// Thread `tid` of a followed process was made at `time`.
    public mutating func began(thread tid: Int32, at time: UInt64) {
        attached[tid] = (time, true)
    }
    private var processes: [Int32: Process] = [:]
    private let lookUp: @Sendable (Int32) -> Process?

    /// `lookUp` finds a process's parent and name (from /proc by default) the first time one of its threads waits.
    public init(lookUp: @escaping @Sendable (Int32) -> Process? = KernelWaitThreads.procProcess) {
        self.lookUp = lookUp
    }

    /// Thread by thread, each thread's waits in their order; a thread whose waits were lost in between has a part
    /// for the waits before the loss and one for those after it.
    public mutating func events(for waits: [KernelWait]) -> [ThreadEvents] {
        var parts: [ThreadEvents] = []
        var current: [Int32: Int] = [:]
        var pending: [Int32: (pid: Int32, waits: [TraceEvent.WaitBatch.Wait])] = [:]
        func flush(_ tid: Int32) {
            guard let held = pending.removeValue(forKey: tid), let last = held.waits.last, let part = current[tid] else { return }
            parts[part].events.append(TraceEvent(timestamp: last.end ?? last.begin, threadID: tid, processID: held.pid,
                                                 payload: .waitBatch(.init(threadID: tid, waits: held.waits))))
        }
        for wait in waits {
            let tid = wait.threadID
            if wait.lostBefore > 0 || current[tid] == nil {
                flush(tid)
                parts.append(ThreadEvents(threadID: tid, lostBefore: UInt64(wait.lostBefore), events: []))
                current[tid] = parts.count - 1
            }
            let name = wait.threadName
            if named[tid] != name {
                flush(tid)
                named[tid] = name
                let process = self.process(wait.processID, fallback: tid == wait.processID ? name : nil)
                let at = wait.beganBeforeRecording ? (wait.wait.end ?? 0) : min(attached[tid]?.at ?? .max, wait.wait.begin)
                parts[current[tid]!].events.append(TraceEvent(timestamp: at, threadID: tid, processID: wait.processID,
                                                              payload: .waitThread(pid: wait.processID, ppid: process.parent,
                                                                                   thread: name, process: process.name)))
            }
            // (Not after waits of it were lost: where its first iteration began is unknown then.)
            if let since = attached.removeValue(forKey: tid), !wait.beganBeforeRecording, wait.lostBefore == 0 {
                let marker: TraceEvent.WaitBatch.Wait = since.made
                    ? .threadBegan(at: since.at, call: wait.wait.call, target: wait.wait.target)
                    : .outsideWaits(at: since.at, call: wait.wait.call, target: wait.wait.target)
                pending[tid, default: (wait.processID, [])].waits.append(marker)
            }
            pending[tid, default: (wait.processID, [])].waits.append(wait.wait)
        }
        for tid in current.keys { flush(tid) }
        return parts
    }

    private mutating func process(_ pid: Int32, fallback: String?) -> Process {
        if let known = processes[pid] { return known }
        let found = lookUp(pid) ?? Process(parent: 0, name: fallback ?? "pid \(pid)")
        processes[pid] = found
        return found
    }

    /// A process's parent and name from /proc/PID/stat; nil once the process is gone.
    @Sendable public static func procProcess(_ pid: Int32) -> Process? {
        ProcessStat(pid: pid).map { Process(parent: $0.parent, name: $0.name) }
    }
}

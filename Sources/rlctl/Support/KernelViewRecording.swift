import Analysis
import ArgumentParser
import Foundation
import KernelTracing
import TraceModel
import Tracing

/// `--kernel`: whether a recording also takes the kernel's view of its loops' threads (docs/kernel-view.md).
enum KernelChoice: String, ExpressibleByArgument, CaseIterable {
    /// On when this machine allows it; otherwise the summary says why not.
    case auto
    /// On, or a one-line error before anything runs.
    case on
    case off
}

struct KernelViewOptions: ParsableArguments {
    @Option(help: "The kernel's side of every late wake-up and stall (BPF on the scheduler's tracepoints): auto (on when this machine allows it; otherwise the summary says why not), on (an error when it cannot be), or off.")
    var kernel: KernelChoice = .auto

    /// Before anything runs: with `--kernel on`, a machine that cannot take the kernel view is a usage error.
    /// Returns why it is not available (nil: it is, or it was not asked for).
    func requireAvailable() throws -> String? { try kernel.requireAvailable() }
}

extension KernelChoice {
    /// With `on`, a machine that cannot take the kernel view is a usage error; otherwise why it is not available
    /// (nil: it is, or `off`).
    func requireAvailable() throws -> String? {
        guard self != .off else { return nil }
        guard let reason = KernelView.unavailableReason() else { return nil }
        if self == .on { throw Failure.input("--kernel on: the kernel view is not available: \(reason)") }
        return reason
    }
}

/// The kernel view of one recording: the kernel recorder follows the traced process's threads and writes what it
/// sees into the trace folder's `kernel/` trace, which the readers merge with the loops' events.
final class KernelViewRecording: @unchecked Sendable {
    private let recorder: KernelRecorder
    private let writer: KernelTraceWriter
    /// With `rlctl record --pid`: the trace of the followed threads' wait calls, written from the kernel's side.
    private let waitWriter: WaitTraceWriter?
    private let lock = NSLock()
    private var stopped: Outcome?
    private var cleanup: ExitCleanups.Token?
    /// The kernel's waits' registration in ``LiveRecordings`` while they are written.
    private var liveEntry: String?

    /// What the kernel view of a recording came to.
    struct Outcome {
        var records: UInt64
        var lost: UInt64
        /// Of the records, those rebuilt from the scheduler's counters (KernelRecorder.Statistics.rebuilt).
        var rebuilt: UInt64 = 0
        /// Wait calls lost (with `record --pid`).
        var waitsLost: UInt64 = 0
        /// Why `kernel/` is incomplete (a write failure), nil when it is whole.
        var problem: String?
        /// Why the trace of the wait calls the kernel recorded is incomplete (a write failure), nil when it is whole.
        var waitsProblem: String?

        /// The wait calls lost, said once at the top of `summary`'s damage (each thread's own losses are loss windows
        /// of its stream already).
        func noteWaitsLost(in summary: inout TraceSummary) {
            guard waitsLost > 0 else { return }
            summary.health.trace.damage.append("the kernel recorder lost \(waitsLost) wait calls (its ring buffer was full): the figures of the loops around them are incomplete")
        }
    }

    /// Where the wait calls the kernel records go (`record --any`).
    enum WaitsDestination {
        /// They are the trace (`--any-via kernel`: nothing else records).
        case trace
        /// A part of the trace beside the interposer's (``TraceSchema/kernelWaitsFolder``): the waits of the processes
        /// no interposer claimed.
        case part
    }

    /// Starts following `process` (and, with `followChildren`, the processes it starts) into `traceFolder/kernel`,
    /// or returns nil when `options` say off or the kernel view is not available (`unavailable` then says why).
    /// With `waits`, also the wait calls (`record --any`), which must be recorded: no kernel view is then an error.
    static func start(_ options: KernelViewOptions, unavailable: String?, traceFolder: String, following process: Int32,
                      followChildren: Bool, waits: WaitsDestination? = nil, claimToken: UInt32 = 0) throws -> KernelViewRecording? {
        guard options.kernel != .off, unavailable == nil else { return nil }
        do {
            return try KernelViewRecording(traceFolder: traceFolder, following: [process], followChildren: followChildren,
                                           waits: waits, claimToken: claimToken)
        } catch {
            if waits != nil { throw Failure.input("cannot start the kernel view that records the waits: \(error)") }
            // Available a moment ago, refused now (another recording's maps, memory): with auto the recording goes
            // on without it, and the summary says why.
            if options.kernel == .on { throw Failure.input("--kernel on: cannot start the kernel view: \(error)") }
            note("kernel view: not available — \(error)")
            return nil
        }
    }

    /// `rlctl record --pid`: follows the running `processes` (and, with `followChildren`, the processes they start
    /// from now on), their wait calls written as the trace in `traceFolder` and the rest as its kernel view.
    static func attach(to processes: [Int32], followChildren: Bool, traceFolder: String) throws -> KernelViewRecording {
        try KernelViewRecording(traceFolder: traceFolder, following: processes, followChildren: followChildren, waits: .trace,
                                attaching: true)
    }

    private init(traceFolder: String, following processes: [Int32], followChildren: Bool, waits: WaitsDestination? = nil,
                 claimToken: UInt32 = 0, attaching: Bool = false) throws {
        let writer = try KernelTraceWriter(folder: traceFolder + "/" + TraceSchema.kernelViewFolder)
        self.writer = writer
        let waitWriter: WaitTraceWriter?
        switch waits {
        case nil: waitWriter = nil
        case .trace: waitWriter = try WaitTraceWriter(folder: traceFolder)
        case .part:
            waitWriter = try WaitTraceWriter(folder: traceFolder + "/" + TraceSchema.kernelWaitsFolder, part: TraceSchema.kernelWaitsPart)
        }
        self.waitWriter = waitWriter
        // `rlctl top` (and its exporter) follows the waits the kernel records as it follows an interposer's.
        if let waitWriter, let entry = LiveRecordings.register(tracePath: waitWriter.folder) {
            liveEntry = entry
        }
        let recorded = recordedProcesses
        var options = KernelRecorder.Options()
        options.followChildren = followChildren
        options.claimToken = claimToken
        let failure = WriteFailure(), waitFailure = WriteFailure()
        var waitSink: (@Sendable ([KernelWaitThreads.ThreadEvents]) -> Void)?
        if let waitWriter {
            // Its own failure: the kernel view's writes failing (the busier ones) must not stop the loops' waits.
            waitSink = { parts in
                recorded.note(parts)
                guard !waitFailure.happened else { return }
                do {
                    for part in parts { try waitWriter.write(part.events, thread: part.threadID, lostBefore: part.lostBefore) }
                } catch { waitFailure.record("\(error)") }
            }
        }
        self.waitFailure = waitFailure
        recorder = try KernelRecorder(options: options, sink: { events in
            guard !failure.happened else { return }
            do { try writer.write(events) } catch { failure.record("\(error)") }
        }, waits: waitSink)
        self.failure = failure
        // A program rlctl started is held at its gate until then: followed from its start. One attached to
        // (record --pid) has been running.
        for process in processes { try recorder.follow(process: process, fromItsStart: !attaching) }
        cleanup = ExitCleanups.shared.add { [weak self] in _ = self?.stop() }
    }

    private let failure: WriteFailure
    private let waitFailure: WriteFailure

    /// The processes whose wait calls the kernel recorded, in the order they first waited.
    var processesRecorded: [RecordedProcesses.Process] { recordedProcesses.all }
    private let recordedProcesses = RecordedProcesses()

    /// The processes the kernel recorded waits of, each once, with its name and why no interposer recorded it
    /// (looked at when it first waits, while it still runs).
    final class RecordedProcesses: @unchecked Sendable {
        struct Process {
            var pid: Int32
            var name: String
            /// Why the interposer could not record it: `statically linked`, `set-user-ID`, a Go program; nil when
            /// nothing in its program says.
            var unreachable: String?
            /// Whether its program could be looked at (a process gone by then, or one that exec'd since, could not).
            var inspected: Bool
        }

        private let lock = NSLock()
        private var processes: [Process] = []
        private var seen: Set<Int32> = []

        var all: [Process] { lock.withLock { processes } }

        func note(_ parts: [KernelWaitThreads.ThreadEvents]) {
            for part in parts {
                for event in part.events {
                    guard case .waitThread(let pid, _, _, let process) = event.payload, !lock.withLock({ seen.contains(pid) }) else { continue }
                    var unreachable: String?
                    var inspected = true
                    do {
                        if try ProgramInspection.inspect("/proc/\(pid)/exe").isGo { unreachable = "a Go program: its runtime waits with raw system calls" }
                    } catch {
                        unreachable = error.kernelCanRecord
                        inspected = unreachable != nil
                    }
                    lock.withLock {
                        if seen.insert(pid).inserted {
                            processes.append(Process(pid: pid, name: process, unreachable: unreachable, inspected: inspected))
                        }
                    }
                }
            }
        }
    }

    /// Stops following, writes the end of `kernel/`; the same outcome for every caller.
    func stop() -> Outcome {
        lock.lock()
        defer { lock.unlock() }
        if let stopped { return stopped }
        let statistics = recorder.stop()
        var problem = failure.message
        if problem == nil {
            do { try writer.finish() } catch { problem = "\(error)" }
        }
        var waitsProblem = waitFailure.message
        if waitsProblem == nil, let waitWriter {
            let unplaced = statistics.waitsLost > statistics.waitsLostPlaced ? statistics.waitsLost - statistics.waitsLostPlaced : 0
            do { try waitWriter.finish(waitsLostElsewhere: unplaced) } catch { waitsProblem = "\(error)" }
        }
        if problem == nil, statistics.interruptMisreads > 0 {
            problem = "this kernel's preempt count did not read as an interrupt in \(statistics.interruptMisreads) "
                + "timer interrupts, so a thread woken from an interrupt may name the task it stopped as its waker"
        }
        let outcome = Outcome(records: statistics.records, lost: statistics.lost, rebuilt: statistics.rebuilt,
                              waitsLost: statistics.waitsLost, problem: problem, waitsProblem: waitsProblem)
        liveEntry.map(LiveRecordings.unregister)
        stopped = outcome
        if let cleanup { ExitCleanups.shared.remove(cleanup) }
        return outcome
    }

    /// The first write error of the consumer thread, kept for `stop()`.
    private final class WriteFailure: @unchecked Sendable {
        private let lock = NSLock()
        private var first: String?
        var happened: Bool { lock.withLock { first != nil } }
        var message: String? { lock.withLock { first } }
        func record(_ message: String) { lock.withLock { if first == nil { first = message } } }
    }
}

extension KernelViewOptions {
    /// What the summary says of the kernel view beyond what the trace holds: not asked for, not available here (and
    /// why), or written only in part (and why, on stderr).
    func describe(in summary: inout TraceSummary, unavailable: String?, outcome: KernelViewRecording.Outcome?) {
        if kernel == .off { return summary.noteKernelViewNotRecorded() }
        if let unavailable { return summary.noteKernelViewUnavailable(unavailable) }
        if let problem = outcome?.problem { note("kernel view: \(problem); its causes cover what was written") }
        if let rebuilt = outcome?.rebuilt, rebuilt > 0 { summary.noteKernelRecordsRebuilt(rebuilt) }
    }
}

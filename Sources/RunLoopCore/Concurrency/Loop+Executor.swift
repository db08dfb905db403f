import CRunLoopLinux
import Dispatch

// Rule 39: a loop is a serial executor. An actor that returns `loop.asUnownedSerialExecutor()` from its
// `unownedExecutor` runs every job on that loop's thread, in enqueue order, one at a time, each job a callout
// that tracing sees (`job_begin`/`job_end`).
//
// Why `Loop` itself conforms instead of a separate executor object over it (NIO has both: an event loop that
// mixes in `NIOSerialEventLoopExecutor`, and `NIODefaultSerialEventLoopExecutor` wrapping loops that do not):
// `Loop` is one concrete class, so one object is the loop, the executor and the identity the runtime compares
// (`isSameExclusiveExecutionContext` and the executor check of `assumeIsolated`). A wrapper would add a second
// object whose lifetime an `UnownedSerialExecutor` does not keep, for no behaviour of its own.
//
// Jobs share the queue of `perform` blocks, for the common modes:
// - they run at the steps blocks run at (3, 4 and 9), FIFO with performed blocks, so a block performed before
//   an actor call runs before the call's job;
// - while the loop runs a mode that is not common (a private modal mode), jobs wait, as blocks for the common
//   modes do, and run when the loop is back in a common mode; a pending job keeps the common modes alive;
// - a run nested in a job (a job that runs the loop) runs no other job, and pending jobs do not keep its mode
//   alive: the actor's jobs never overlap, which a nested run would otherwise break (the outer job is still
//   running). CFRunLoop keeps the main queue serial the same way: a run nested in a main-queue callout does not
//   service the main queue. Blocks and everything else still run in such a nested run;
// - enqueuing wakes a sleeping loop, from any thread including the loop's own (as `perform` does);
// - a job costs no allocation of ours: the runtime's job is queued as it is (the queue's storage is reused).
//
// After the loop's thread has exited (its loop torn down), jobs are not dropped, which would leave their
// tasks suspended forever, and the process is not stopped: the jobs pending at tear-down and every job enqueued
// later run on a serial fallback queue of that loop, still one at a time and in enqueue order, so the actor's
// exclusion holds and awaiting tasks finish. They no longer run on the loop's thread (it is gone) and are not
// traced (no loop runs them). The actor keeps its `Loop` (a strong reference) as long as it may get jobs: an
// `UnownedSerialExecutor` does not retain the loop.

extension Loop: SerialExecutor {
    /// Queues an actor's job for the common modes and wakes the loop; see the notes above.
    public func enqueue(_ job: consuming ExecutorJob) {
        enqueue(.common, .job(UnownedJob(job)))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Two loops are never the same context; the runtime asks only when the executors differ.
    public func isSameExclusiveExecutionContext(other: Loop) -> Bool {
        self === other
    }

    /// What `assumeIsolated` and `preconditionIsolated` call when they run on a thread outside one of this
    /// loop's jobs (in a timer, a block, an observer): the loop's own thread is the loop's isolation.
    public func checkIsolated() {
        requireUsage(isOwnedByCurrentThread,
                     "expected to run on loop \(id)'s thread (thread \(threadID)) but running on thread \(crl_gettid()): code isolated to an actor on a loop executor runs on that loop's thread only")
    }

    /// The non-trapping form of ``checkIsolated()``, for the runtime's isolation queries.
    public func isIsolatingCurrentContext() -> Bool? {
        isOwnedByCurrentThread
    }
}

extension Loop {
    /// Whether an entry of the block queue may run now, in `mode`: its modes admit it, and a job waits while
    /// another job runs further out.
    func mayRun(_ pending: borrowing PendingBlock, in mode: Mode, modeIsCommon: Bool) -> Bool {
        if isRunningJob, case .job = pending.work { return false }
        return pending.modes.admits(mode, modeIsCommon: modeIsCommon)
    }

    /// Runs one entry of the block queue at steps 3, 4 or 9 as its traced callout. It takes the entry over (the
    /// caller popped it): a borrowed one cost a retain and a release of the closure per block, on the loop's
    /// side of every cross-thread perform (callgrind: 14 instructions of about 200 per block drained).
    func runPendingWork(_ pending: consuming PendingBlock, _ frame: RunFrame) {
        switch pending.work {
        case .block(let body):
            if let sink = frame.sink {
                sink.blockBegin(frame.context(loop: self), blockID: pending.id, enqueued: pending.enqueuedAt)
                measureCallout(frame, since: pending.enqueuedAt)
                let began = calloutBegan(frame)
                body()
                sink.blockEnd(frame.context(loop: self), blockID: pending.id)
                calloutEnded(frame, began: began, .block, id: pending.id, label: nil)
            } else {
                measureCallout(frame, since: pending.enqueuedAt)
                body()
            }
            frame.unpublished.blocksRun += 1
        case .job(let job):
            isRunningJob = true
            defer { isRunningJob = false }
            if let sink = frame.sink {
                sink.jobBegin(frame.context(loop: self), jobID: pending.id, enqueued: pending.enqueuedAt,
                              priority: UInt8(truncatingIfNeeded: job.priority.rawValue))
                measureCallout(frame, since: pending.enqueuedAt)
                let began = calloutBegan(frame)
                job.runSynchronously(on: asUnownedSerialExecutor())
                sink.jobEnd(frame.context(loop: self), jobID: pending.id)
                calloutEnded(frame, began: began, .job, id: pending.id, label: nil)
            } else {
                measureCallout(frame, since: pending.enqueuedAt)
                job.runSynchronously(on: asUnownedSerialExecutor())
            }
            frame.unpublished.jobsRun += 1
        }
    }

    /// Where a torn-down loop's jobs go: created at tear-down, it runs them one at a time in arrival order.
    func makeOrphanedJobs() -> OrphanedJobs {
        OrphanedJobs(executor: asUnownedSerialExecutor(), loopID: id)
    }
}

/// The serial fallback of a loop whose thread has exited (see the notes at the top of this file). It holds the
/// loop unowned, as the runtime does: the job's actor keeps the loop alive.
final class OrphanedJobs: @unchecked Sendable {
    private let executor: UnownedSerialExecutor
    private let loopID: UInt64
    /// Made for the first job: most loops end with none, and their tear-down should not start libdispatch.
    /// Guarded by the block queue's lock, which every call of `run` holds.
    private var queue: DispatchQueue?

    init(executor: UnownedSerialExecutor, loopID: UInt64) {
        self.executor = executor
        self.loopID = loopID
    }

    /// Called with the block queue's lock held, so jobs keep their order across the tear-down.
    func run(_ job: UnownedJob) {
        let queue = self.queue ?? DispatchQueue(label: "RunLoopCore.loop-\(loopID).jobs-after-thread-exit")
        self.queue = queue
        queue.async { [executor] in job.runSynchronously(on: executor) }
    }
}

import DequeModule

/// The loop's queue of performed blocks, under its own lock: producers on other threads contend only with each
/// other and with the loop taking the whole queue, never with the loop's mode tables.
/// Lock order: the loop's lock, then this queue's. A pthread mutex, not Synchronization's `Mutex`: its futex lives
/// in the uninstrumented standard library, so ThreadSanitizer could not see it order anything.
final class BlockQueue: @unchecked Sendable {
    private struct State {
        var blocks = Deque<PendingBlock>()
        var closed = false
        /// Where actor jobs go once the loop is torn down (Concurrency/Loop+Executor.swift).
        var orphanedJobs: OrphanedJobs?
    }

    private let lock = ConditionLock()
    /// Unchecked by the runtime's exclusivity checks: `lock` orders every access (see RunFrame).
    @exclusivity(unchecked) private var guarded = State()

    private func withState<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&guarded)
    }

    /// Queues a block; false once the loop was torn down (the block is dropped; a job runs on the fallback).
    func append(_ block: PendingBlock) -> Bool {
        withState { state in
            guard !state.closed else {
                if case .job(let job) = block.work { state.orphanedJobs?.run(job) }
                return false
            }
            state.blocks.append(block)
            return true
        }
    }

    /// Moves every queued block into `batch` (which must be empty); false when there were none.
    func takeAll(into batch: inout Deque<PendingBlock>) -> Bool {
        withState { state in
            guard !state.blocks.isEmpty else { return false }
            swap(&state.blocks, &batch)
            return true
        }
    }

    /// Returns blocks that could not run in this mode to the front, ahead of any queued meanwhile.
    func putBack(_ leftovers: [PendingBlock]) {
        withState { state in
            for block in leftovers.reversed() { state.blocks.prepend(block) }
        }
    }

    /// Whether a queued block or job matches (one that may run in a mode keeps that mode alive).
    func contains(where match: (PendingBlock) -> Bool) -> Bool {
        withState { state in state.blocks.contains(where: match) }
    }

    /// Refuses further blocks and hands back the pending ones (to be dropped, not run). Pending jobs, and jobs
    /// appended from now on, go to `orphanedJobs` instead, in order: under this lock, so none overtakes another.
    func close(handingJobsTo orphanedJobs: OrphanedJobs) -> Deque<PendingBlock> {
        withState { state in
            state.closed = true
            state.orphanedJobs = orphanedJobs
            var dropped = Deque<PendingBlock>()
            for pending in state.blocks {
                if case .job(let job) = pending.work { orphanedJobs.run(job) } else { dropped.append(pending) }
            }
            state.blocks.removeAll()
            return dropped
        }
    }
}

import DequeModule
import Glibc

/// The loop's queue of performed blocks, under its own lock: producers on other threads contend only with each
/// other and with the loop taking the whole queue, never with the loop's mode tables.
/// Lock order: the loop's lock, then this queue's. A pthread mutex, not Synchronization's `Mutex`: its futex lives
/// in the uninstrumented standard library, so ThreadSanitizer could not see it order anything.
///
/// Laid out for the cross-thread wake-up, whose latency is mostly cache lines that the other core last wrote or
/// that went cold while the loop slept. The mutex and the counts share the first 64-byte line of one allocation,
/// and the first ``slotCount`` blocks go into 64-byte slots (`PendingBlock`'s stride) right behind it; the loop
/// holds the allocation's address itself. A `perform` from another thread touches two lines of the queue, and so
/// does the loop taking it. (A lock of its own, the queue object, a deque's header and its slot were four lines
/// on each side.) Blocks beyond the slots go to `overflow`, a deque, in order behind them; a drain of thousands of
/// blocks is handed over whole.
struct BlockQueue: @unchecked Sendable {
    /// Behind the mutex, in the same line.
    private struct Counts {
        /// Blocks in the slots, which fill from the first; the loop always takes them all.
        var inSlots: UInt32 = 0
        /// Blocks in `overflow` (kept here, so that the common append and take need not reach the deque). While
        /// there are any, new blocks go there too, behind them.
        var inOverflow: UInt32 = 0
        var closed = false
    }

    /// What the common append and take never touch; it owns the allocation.
    private final class Spill {
        let memory: UnsafeMutableRawPointer
        /// Behind the slots, in order. Guarded by the mutex; unchecked by the runtime's exclusivity checks for that.
        @exclusivity(unchecked) var overflow = Deque<PendingBlock>()
        /// Where actor jobs go once the loop is torn down (Concurrency/Loop+Executor.swift). Guarded by the mutex.
        @exclusivity(unchecked) var orphanedJobs: OrphanedJobs?

        init(memory: UnsafeMutableRawPointer) {
            self.memory = memory
        }

        deinit {
            BlockQueue.slots(memory).deinitialize(count: Int(BlockQueue.counts(memory).pointee.inSlots))
            pthread_mutex_destroy(BlockQueue.mutex(memory))
            memory.deallocate()
        }
    }

    /// A power of two; more than any burst but a benchmark's drain.
    static let slotCount = 64
    private static let countsOffset = 48
    private static let lineSize = 64

    /// Stored in the loop itself, so that reaching the queue's first line costs no load from another object.
    private let memory: UnsafeMutableRawPointer
    private let spill: Spill

    private static func mutex(_ memory: UnsafeMutableRawPointer) -> UnsafeMutablePointer<pthread_mutex_t> {
        memory.assumingMemoryBound(to: pthread_mutex_t.self)
    }
    private static func counts(_ memory: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Counts> {
        (memory + countsOffset).assumingMemoryBound(to: Counts.self)
    }
    private static func slots(_ memory: UnsafeMutableRawPointer) -> UnsafeMutablePointer<PendingBlock> {
        (memory + lineSize).assumingMemoryBound(to: PendingBlock.self)
    }
    private var mutex: UnsafeMutablePointer<pthread_mutex_t> { BlockQueue.mutex(memory) }
    private var counts: UnsafeMutablePointer<Counts> { BlockQueue.counts(memory) }
    private var slots: UnsafeMutablePointer<PendingBlock> { BlockQueue.slots(memory) }
    private var overflow: Deque<PendingBlock> {
        get { spill.overflow }
        nonmutating set { spill.overflow = newValue }
        nonmutating _modify { yield &spill.overflow }
    }

    init() {
        precondition(MemoryLayout<pthread_mutex_t>.size <= BlockQueue.countsOffset
                     && BlockQueue.countsOffset + MemoryLayout<Counts>.size <= BlockQueue.lineSize,
                     "BUG IN RunLoopCore (please report): the block queue's first line does not hold its lock and counts")
        // Not needed for correctness, only for a slot to be one cache line.
        assert(MemoryLayout<PendingBlock>.stride == BlockQueue.lineSize, "PendingBlock no longer fills one 64-byte slot")
        memory = UnsafeMutableRawPointer.allocate(
            byteCount: BlockQueue.lineSize + BlockQueue.slotCount * MemoryLayout<PendingBlock>.stride,
            alignment: BlockQueue.lineSize)
        spill = Spill(memory: memory)
        PThreadMutex.initialize(memory.bindMemory(to: pthread_mutex_t.self, capacity: 1), spinsBeforeSleeping: true)
        (memory + BlockQueue.countsOffset).bindMemory(to: Counts.self, capacity: 1).initialize(to: Counts())
        (memory + BlockQueue.lineSize).bindMemory(to: PendingBlock.self, capacity: BlockQueue.slotCount)
    }

    @inline(__always)
    private func withLock<T>(_ body: (inout Counts) -> T) -> T {
        PThreadMutex.lock(mutex)
        defer { PThreadMutex.unlock(mutex) }
        return body(&counts.pointee)
    }

    /// Moves the slots' blocks out, oldest first, and empties the slots (lock held).
    private func emptySlots(_ counts: inout Counts, into body: (PendingBlock) -> Void) {
        for index in 0..<Int(counts.inSlots) { body((slots + index).move()) }
        counts.inSlots = 0
    }

    /// Queues a block; false once the loop was torn down (the block is dropped; a job runs on the fallback).
    func append(_ block: PendingBlock) -> Bool {
        withLock { counts in
            guard !counts.closed else {
                if case .job(let job) = block.work { spill.orphanedJobs?.run(job) }
                return false
            }
            if counts.inOverflow == 0 && counts.inSlots < UInt32(BlockQueue.slotCount) {
                (slots + Int(counts.inSlots)).initialize(to: block)
                counts.inSlots += 1
            } else {
                overflow.append(block)
                counts.inOverflow += 1
            }
            return true
        }
    }

    /// Moves every queued block into `batch` (which must be empty); false when there were none.
    func takeAll(into batch: inout Deque<PendingBlock>) -> Bool {
        withLock { counts in
            guard counts.inSlots != 0 || counts.inOverflow != 0 else { return false }
            if counts.inOverflow == 0 {
                emptySlots(&counts) { batch.append($0) }
            } else {
                // The slots hold the oldest: they go in front of the overflow, which is handed over whole.
                for index in (0..<Int(counts.inSlots)).reversed() { overflow.prepend((slots + index).move()) }
                counts.inSlots = 0
                swap(&overflow, &batch)
                counts.inOverflow = 0
            }
            return true
        }
    }

    /// Returns blocks that could not run in this mode to the front, ahead of any queued meanwhile.
    func putBack(_ leftovers: [PendingBlock]) {
        withLock { counts in
            // Rare (blocks for another mode): all of it goes to the overflow, which keeps one order.
            var queue = Deque(leftovers)
            emptySlots(&counts) { queue.append($0) }
            queue.append(contentsOf: overflow)
            overflow = queue
            counts.inOverflow = UInt32(queue.count)
        }
    }

    /// Whether a queued block or job matches (one that may run in a mode keeps that mode alive).
    func contains(where match: (PendingBlock) -> Bool) -> Bool {
        withLock { counts in
            for index in 0..<Int(counts.inSlots) where match(slots[index]) { return true }
            return overflow.contains(where: match)
        }
    }

    /// Refuses further blocks and hands back the pending ones (to be dropped, not run). Pending jobs, and jobs
    /// appended from now on, go to `orphanedJobs` instead, in order: under this lock, so none overtakes another.
    func close(handingJobsTo orphanedJobs: OrphanedJobs) -> Deque<PendingBlock> {
        withLock { counts in
            counts.closed = true
            spill.orphanedJobs = orphanedJobs
            var dropped = Deque<PendingBlock>()
            let sortOut = { (pending: PendingBlock) in
                if case .job(let job) = pending.work { orphanedJobs.run(job) } else { dropped.append(pending) }
            }
            emptySlots(&counts, into: sortOut)
            overflow.forEach(sortOut)
            overflow.removeAll()
            counts.inOverflow = 0
            return dropped
        }
    }
}

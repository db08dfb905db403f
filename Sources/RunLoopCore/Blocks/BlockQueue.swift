import DequeModule

/// The loop's queue of performed blocks, under its own lock: producers on other threads contend only with each
/// other and with the loop taking the whole queue, never with the loop's mode tables.
/// Lock order: the loop's lock, then this queue's. A pthread mutex, not Synchronization's `Mutex`: its futex lives
/// in the uninstrumented standard library, so ThreadSanitizer could not see it order anything.
final class BlockQueue: @unchecked Sendable {
    private struct State {
        var blocks = Deque<PendingBlock>()
        var closed = false
    }

    private let lock = ConditionLock()
    /// Unchecked by the runtime's exclusivity checks: `lock` orders every access (see RunFrame).
    @exclusivity(unchecked) private var guarded = State()

    private func withState<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&guarded)
    }

    /// Queues a block; false once the loop was torn down (the block is dropped).
    func append(_ block: PendingBlock) -> Bool {
        withState { state in
            guard !state.closed else { return false }
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

    /// Whether a block waits for `mode` (which keeps the mode alive).
    func hasBlock(for mode: Loop.Mode, modeIsCommon: Bool) -> Bool {
        withState { state in
            state.blocks.contains { $0.modes.admits(mode, modeIsCommon: modeIsCommon) }
        }
    }

    /// Refuses further blocks and hands back the pending ones (to be dropped, not run).
    func close() -> Deque<PendingBlock> {
        withState { state in
            state.closed = true
            var dropped = Deque<PendingBlock>()
            swap(&dropped, &state.blocks)
            return dropped
        }
    }
}

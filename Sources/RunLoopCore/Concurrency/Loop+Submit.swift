// An async way to run a closure on a loop and get its result: `try await loop.submit { … }`.
//
// Not an async overload of `perform`: in an async context Swift prefers the async overload, so every existing
// `loop.perform { … }` written there would need an `await` and would start waiting for the block. The name is
// SwiftNIO's (`EventLoop.submit`) for the same idea; the block itself is a performed block (rule 30), traced as
// `block_begin`/`block_end`.

extension Loop {
    /// Thrown by ``submit(inModes:_:)`` when the loop's thread has exited before the closure ran: the loop was
    /// torn down and its pending blocks dropped (rule 3), so the closure never runs.
    public struct ThreadExitedError: Error, CustomStringConvertible, Sendable {
        /// The loop whose thread exited.
        public let loopID: UInt64

        public var description: String {
            "loop \(loopID)'s thread has exited: its pending blocks are dropped and new ones are refused"
        }
    }

    /// Runs `body` on the loop's thread as a block performed in `modes` (FIFO with other blocks; it wakes the
    /// loop) and returns its result, or rethrows its error.
    ///
    /// - Throws: ``ThreadExitedError`` when the loop's thread exits (or has exited) before `body` ran;
    ///   `CancellationError` when the calling task is cancelled before `body` started: the block is then skipped
    ///   when its turn comes. Once `body` has started it runs to the end and its result is returned, cancelled or
    ///   not: the loop cannot interrupt a callout.
    /// - Note: from a task on an actor of this loop, the block runs on a later pass of the loop; the task is
    ///   suspended meanwhile, so the loop is free to run it.
    public func submit<Value: Sendable>(inModes modes: [Mode] = [.common],
                                        _ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        requireUsage(!modes.isEmpty, "Loop.submit(inModes:): name at least one mode (or .common)")
        let call = SubmittedCall<Value>()
        let blockModes = BlockModes(modes)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard call.install(continuation) else { return }
                // Owned by the block alone: released unrun (the loop torn down), it ends the wait with an error.
                let witness = DropWitness { [id] in call.abandon(ThreadExitedError(loopID: id)) }
                enqueue(blockModes) {
                    withExtendedLifetime(witness) {
                        guard call.start() else { return }
                        call.finish(Result { try body() })
                    }
                }
            }
        } onCancel: {
            call.cancel()
        }
    }
}

/// The state of one ``Loop/submit(inModes:_:)``: who resumes the caller (the block, its cancellation, or its
/// drop), exactly once.
private final class SubmittedCall<Value: Sendable>: @unchecked Sendable {
    private enum State {
        case created
        case cancelledEarly
        case waiting(CheckedContinuation<Value, any Error>)
        case running(CheckedContinuation<Value, any Error>)
        case resumed
    }

    private let lock = ConditionLock()
    private var state = State.created

    /// False when the task was cancelled first (the caller is then resumed at once and nothing is queued).
    func install(_ continuation: CheckedContinuation<Value, any Error>) -> Bool {
        lock.lock()
        guard case .created = state else {
            state = .resumed
            lock.unlock()
            continuation.resume(throwing: CancellationError())
            return false
        }
        state = .waiting(continuation)
        lock.unlock()
        return true
    }

    func cancel() {
        lock.lock()
        switch state {
        case .created:
            state = .cancelledEarly
            lock.unlock()
        case .waiting(let continuation):
            state = .resumed
            lock.unlock()
            continuation.resume(throwing: CancellationError())
        case .cancelledEarly, .running, .resumed:
            lock.unlock()
        }
    }

    /// On the loop's thread: false when the caller has gone (cancelled), so the body is skipped.
    func start() -> Bool {
        lock.withLock {
            guard case .waiting(let continuation) = state else { return false }
            state = .running(continuation)
            return true
        }
    }

    func finish(_ result: Result<Value, any Error>) {
        let continuation: CheckedContinuation<Value, any Error>? = lock.withLock {
            guard case .running(let continuation) = state else { return nil }
            state = .resumed
            return continuation
        }
        continuation?.resume(with: result)
    }

    /// The block was released without running: the loop's thread exited.
    func abandon(_ error: any Error) {
        let continuation: CheckedContinuation<Value, any Error>? = lock.withLock {
            guard case .waiting(let continuation) = state else { return nil }
            state = .resumed
            return continuation
        }
        continuation?.resume(throwing: error)
    }
}

/// Calls `action` when released: tells a block that ran from one that was dropped.
private final class DropWitness: Sendable {
    private let action: @Sendable () -> Void

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = action
    }

    deinit {
        action()
    }
}

import Synchronization

/// A custom input source (CFRunLoop's "version 0"): another thread signals it, the loop performs it.
///
/// Signalling marks the source; the loop performs every signalled source of the running mode once per
/// iteration, by ascending `order`, then by the time of the first signal. Repeated signals before the perform
/// collapse into one perform. Signalling does **not** wake the loop: call ``Loop/wakeUp()`` after it, or use
/// ``signalAndWakeUp()``.
public final class LoopSource: @unchecked Sendable {
    /// A process-unique id, as trace events report it.
    public let id: UInt64
    /// Sources with a lower order are performed first.
    public let order: Int
    /// A name for traces and summaries.
    public let label: String?

    let schedule: (@Sendable (Loop, Loop.Mode) -> Void)?
    let cancel: (@Sendable (Loop, Loop.Mode) -> Void)?
    let perform: @Sendable () -> Void
    let binding = Binding()
    private let valid = Atomic<Bool>(true)
    /// The monotonic time of the first pending signal; 0 when not signalled. One word, so signal and clear are
    /// each a single atomic operation.
    private let signaledAt = Atomic<UInt64>(0)

    /// Modes the source is in. Guarded by the owning loop's lock.
    var modes: Set<Loop.Mode> = []

    /// Creates a custom source.
    /// - Parameters:
    ///   - order: sources with a lower order are performed first.
    ///   - label: a name for traces and summaries.
    ///   - schedule: called on the adding thread once for each concrete mode the source is added to.
    ///   - cancel: called once for each mode the source leaves, including on invalidation and when the loop's
    ///     thread exits.
    ///   - perform: called on the loop's thread after a signal.
    public init(order: Int = 0, label: String? = nil, schedule: (@Sendable (Loop, Loop.Mode) -> Void)? = nil,
                cancel: (@Sendable (Loop, Loop.Mode) -> Void)? = nil, perform: @escaping @Sendable () -> Void) {
        self.id = Sequence.next()
        self.order = order
        self.label = label
        self.schedule = schedule
        self.cancel = cancel
        self.perform = perform
    }

    /// Marks the source for performing. Does not wake the loop. Ignored by an invalid source.
    /// - Returns: true when this call made the source pending; false when it collapsed into a pending signal
    ///   (or the source is invalid). Each `true` is matched by exactly one perform.
    @discardableResult
    public func signal() -> Bool {
        guard isValid else { return false }
        let sink = LoopEventSink.current
        if signaledAt.load(ordering: .relaxed) != 0 {
            sink?.sourceSignaled(sourceID: id, at: monotonicNanoseconds())
            return false
        }
        let now = max(monotonicNanoseconds(), 1)
        sink?.sourceSignaled(sourceID: id, at: now)
        return signaledAt.compareExchange(expected: 0, desired: now, ordering: .acquiringAndReleasing).exchanged
    }

    /// Signals the source and wakes the loop it is scheduled in.
    /// - Returns: what ``signal()`` returned.
    @discardableResult
    public func signalAndWakeUp() -> Bool {
        let pending = signal()
        binding.loop?.wakeUp()
        return pending
    }

    /// Whether a signal is waiting for its perform.
    public var isSignaled: Bool { signaledAt.load(ordering: .acquiring) != 0 }

    /// Whether the source can still be signalled and performed.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Removes the source from every mode (calling `cancel` for each) and ignores later signals.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        signaledAt.store(0, ordering: .relaxed)
        let left: (Loop, Set<Loop.Mode>)? = binding.withStateLocked { loop in
            guard let loop else { return nil }
            return (loop, loop.detach(self))
        }
        if let (loop, modes) = left {
            for mode in modes { cancel?(loop, mode) }
        }
    }

    /// When the pending signal was made (monotonic ns), or 0.
    var pendingSignalTime: UInt64 { signaledAt.load(ordering: .acquiring) }

    /// Clears the pending signal just before the perform; returns when it was made, or 0 if none was pending.
    func takeSignal() -> UInt64 {
        signaledAt.exchange(0, ordering: .acquiringAndReleasing)
    }
}

/// A stand-in for the main dispatch queue, for tests in virtual time: a loop on a ``VirtualKernel`` that carries
/// one serves it exactly as the main loop serves `DispatchQueue.main` (in its common modes, at step 9, woken by
/// arrivals), so rule 38 is checked with exact activity traces on any thread.
///
/// It behaves like libdispatch's main queue as a run loop sees it: ``async(_:)`` on an empty queue makes its
/// descriptor readable (libdispatch writes the main queue's eventfd); a drain runs the blocks queued before it
/// started, in order, and blocks queued meanwhile wait for the next drain (and make the descriptor readable
/// again); a drain from inside a drain does nothing.
///
/// ```swift
/// let kernel = VirtualKernel()
/// let mainQueue = VirtualMainQueue(servedThrough: kernel)
/// let loop = Loop.makeCurrent(on: kernel)     // serves mainQueue in its common modes
/// mainQueue.async { print("runs at step 9 of a common-mode run") }
/// ```
@_spi(VirtualTime)
public final class VirtualMainQueue: @unchecked Sendable {
    /// The number the kernel knows the queue's descriptor by: no real descriptor a test watches has it.
    let descriptor = Int32.max
    private let kernel: VirtualKernel
    private let lock = ConditionLock()
    // Guarded by lock.
    private var queued: [@Sendable () -> Void] = []
    /// The descriptor's readiness: libdispatch's eventfd counter is not zero.
    private var readable = false
    // Loop thread only.
    private var isDraining = false

    /// A queue that the loop created on `kernel` (with ``Loop/makeCurrent(on:)``, afterwards) serves.
    /// - Precondition: the kernel has no loop and no main queue yet.
    public init(servedThrough kernel: VirtualKernel) {
        self.kernel = kernel
        kernel.attachMainQueue(self)
    }

    /// Queues `block`, from any thread, as `DispatchQueue.main.async` does.
    public func async(_ block: @escaping @Sendable () -> Void) {
        let wake: Bool = lock.withLock {
            queued.append(block)
            // libdispatch writes the eventfd when the queue was empty; the drain takes every queued block.
            return queued.count == 1 && markReadable()
        }
        if wake { kernel.setReadiness(.readable, of: descriptor) }
    }

    /// Blocks queued and not yet run.
    public var pendingCount: Int {
        lock.withLock { queued.count }
    }

    func acknowledge() -> Bool {
        let wasReadable: Bool = lock.withLock {
            defer { readable = false }
            return readable
        }
        if wasReadable { kernel.setReadiness([], of: descriptor) }
        return wasReadable
    }

    func drain() {
        guard !isDraining else { return }
        isDraining = true
        let batch: [@Sendable () -> Void] = lock.withLock {
            defer { queued.removeAll() }
            return queued
        }
        for block in batch { block() }
        isDraining = false
        // As libdispatch after a drain: work left behind makes the descriptor readable again.
        let wake = lock.withLock { !queued.isEmpty && markReadable() }
        if wake { kernel.setReadiness(.readable, of: descriptor) }
    }

    /// Lock held; true when the descriptor was not readable yet.
    private func markReadable() -> Bool {
        defer { readable = true }
        return !readable
    }
}

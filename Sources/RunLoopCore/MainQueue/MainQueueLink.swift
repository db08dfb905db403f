import CRunLoopLinux

// Rule 38: the main thread's loop serves the main dispatch queue in its common modes, as CFRunLoop does
// (`__CFRUNLOOP_IS_SERVICING_THE_MAIN_DISPATCH_QUEUE__`, seed 004, step 9). On Linux libdispatch exports the
// two hooks CF uses: the main queue's eventfd, which libdispatch writes when work arrives for an empty queue
// (and again after a drain that left work behind), and the drain itself. Nobody but the run loop reads the
// eventfd: CF reads it in its wait (`__CFRunLoopServiceFileDescriptors`), we read it in step 9, just before
// the drain, so work that arrives during the drain writes it again and wakes the next wait.

/// The main queue as one loop serves it: libdispatch's (the main loop), or a test's ``VirtualMainQueue`` (a
/// loop on a ``VirtualKernel`` that carries one). Loop thread only, except where marked.
final class MainQueueLink {
    private enum Queue {
        /// libdispatch's main queue; its eventfd is fetched at the first run that serves it (the call creates
        /// it), so a process that never serves the main queue never opens it.
        case dispatch
        case virtual(VirtualMainQueue)
    }

    private let queue: Queue
    /// The descriptor step 7 watches: -2 until fetched (under the loop's lock), -1 when libdispatch has no hooks.
    private var handle: Int32 = -2
    /// True while a servicing callout runs. A run nested in it does not serve the queue and does not count it
    /// as keeping its mode alive: libdispatch's drain is not re-entrant (a nested drain returns at once), so
    /// such a run could only spin on the descriptor. CF does the same with its `__CFTSDKeyIsInGCDMainQ` flag.
    var isServicing = false

    /// The main loop's link, a virtual loop's when its kernel carries a fake main queue, nil for every other loop.
    init?(isMain: Bool, kernel: Kernel) {
        if isMain {
            queue = .dispatch
        } else if case .virtual(let virtualKernel) = kernel, let fake = virtualKernel.mainQueue {
            queue = .virtual(fake)
        } else {
            return nil
        }
    }

    /// The descriptor that is readable while main-queue work waits; nil when there is no main queue to serve
    /// (libdispatch not loaded, or without the hooks). Loop lock held: the first call fetches it.
    var descriptor: Int32? {
        if handle == -2 {
            switch queue {
            case .dispatch: handle = crl_main_queue_handle()
            case .virtual(let fake): handle = fake.descriptor
            }
        }
        return handle >= 0 ? handle : nil
    }

    /// Consumes the descriptor's readiness, so the next wait blocks until new work arrives. Returns false when
    /// there was none (a nested run served the queue since the wait reported it).
    func acknowledge() -> Bool {
        switch queue {
        case .dispatch: return crl_eventfd_drain(handle) == 0
        case .virtual(let fake): return fake.acknowledge()
        }
    }

    /// Runs the work queued so far; work queued meanwhile makes the descriptor readable again.
    func drain() {
        switch queue {
        case .dispatch: crl_main_queue_drain()
        case .virtual(let fake): fake.drain()
        }
    }
}

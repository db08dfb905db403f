// The main dispatch queue's part of an iteration (rule 38; MainQueueLink.swift says how libdispatch is reached):
// whether a run serves it, its descriptor in step 7's wait set, and its servicing in step 9.

extension Loop {
    /// Whether a run of `mode` serves the main queue now: this loop has one (the main loop), the mode is common,
    /// and the loop is not inside a servicing callout (lock held). Such a mode is never empty, even before any
    /// item was added to it: the main queue stands for a source in it, as in CF's `__CFRunLoopModeIsEmpty`.
    func servesMainQueue(modeIsCommon: Bool) -> Bool {
        guard modeIsCommon, let mainQueue, !mainQueue.isServicing else { return false }
        return mainQueue.descriptor != nil
    }

    /// Step 7: the main queue's descriptor is in the wait set of a run that serves it, and not in that of a run
    /// that does not (a run nested in a servicing callout shares its mode's wait set), so work arriving from
    /// any thread wakes the first and never the second. The descriptor stays registered between runs: an
    /// iteration of the main loop costs no system call for it.
    func prepareMainQueueWait(_ frame: RunFrame) {
        let set = frame.state.waitSet
        guard frame.servesMainQueue != set.watchesMainQueue, let mainQueue, let fd = lock.withLock({ mainQueue.descriptor }) else {
            return
        }
        if frame.servesMainQueue {
            if let error = kernel.backend.watch(fd, for: .readable, token: SelectorToken.mainQueue, in: set) {
                preconditionFailure("BUG IN RunLoopCore (please report): watching the main queue's descriptor \(fd): \(error)")
            }
        } else {
            kernel.backend.unwatch(fd, in: set)
        }
        set.watchesMainQueue = frame.servesMainQueue
    }

    /// Step 9, after the due timers and before the ready descriptor and port sources: runs the main queue's work
    /// when step 7 found its descriptor ready, as one traced callout. Returns whether it did; like CF, that
    /// counts as a handled source (`run(…, returnAfterSourceHandled: true)` returns after it).
    func serviceMainQueue(_ frame: RunFrame) -> Bool {
        guard frame.mainQueueReady else { return false }
        frame.mainQueueReady = false
        guard let mainQueue, mainQueue.acknowledge() else { return false }
        servingTheMainDispatchQueue(mainQueue, frame)
        return true
    }

    /// Do not rename: like CF's `__CFRUNLOOP_IS_SERVICING_THE_MAIN_DISPATCH_QUEUE__`, this frame tells a stack
    /// trace or a profile that main-queue work (a `DispatchQueue.main` block, a `@MainActor` job) is running.
    @inline(never)
    private func servingTheMainDispatchQueue(_ mainQueue: MainQueueLink, _ frame: RunFrame) {
        mainQueue.isServicing = true
        frame.sink?.mainQueueBegin(frame.context(loop: self))
        let began = calloutBegan(frame)
        mainQueue.drain()
        frame.sink?.mainQueueEnd(frame.context(loop: self))
        calloutEnded(frame, began: began, .mainQueue, id: 0, label: nil)
        mainQueue.isServicing = false
        frame.unpublished.mainQueueServicings += 1
    }
}

// The step functions of one iteration. Each takes the lock only to snapshot or update the mode's tables and
// calls user code with the lock dropped, so callouts may add, remove, signal, perform and run nested loops.

extension Loop {
    // ===== steps 1, 2, 6, 8 and Entry/Exit: observers =====

    /// Calls the mode's observers of `activity` in (order, insertion) order, over a snapshot.
    func notifyObservers(_ activity: Activity, _ frame: RunFrame) {
        frame.sink?.activity(activity, frame.context(loop: self))
        let state = frame.state!
        guard state.isObserved(activity) else { return }
        lock.withLock {
            for observer in state.observers where observer.activities.contains(activity) && !observer.isFiring {
                frame.observers.append(observer)
            }
        }
        for observer in frame.observers {
            // Skipped when invalidated earlier in this pass, or already in its callout further out.
            guard observer.isValid, !observer.isFiring else { continue }
            observer.isFiring = true
            frame.sink?.observerBegin(frame.context(loop: self), observerID: observer.id, activity: activity)
            let began = calloutBegan(frame)
            observer.handler(observer, activity)
            frame.sink?.observerEnd(frame.context(loop: self), observerID: observer.id)
            calloutEnded(frame, began: began, .observer, id: observer.id, label: observer.label)
            observer.isFiring = false
            frame.unpublished.observerCallouts += 1
            if !observer.repeats { observer.invalidate() }
        }
        frame.observers.removeAll(keepingCapacity: true)
    }

    // ===== steps 3, 4 and 9: blocks =====

    /// Runs the queued blocks that may run in this mode, FIFO; the others keep their place in the queue.
    /// Blocks queued meanwhile wait for the next pass.
    @discardableResult
    func doBlocks(_ frame: RunFrame) -> Bool {
        // Every block queued so far is taken now: a block queued from here on sets the flag again.
        blockQueuedOnLoopThread = false
        guard blocks.takeAll(into: &frame.blocks) else { return false }
        let modeIsCommon = lock.withLock { frame.state.isCommon }

        var ran = false
        while let block = frame.blocks.popFirst() {
            guard mayRun(block, in: frame.mode, modeIsCommon: modeIsCommon) else {
                frame.leftoverBlocks.append(block)
                continue
            }
            runPendingWork(block, frame)
            ran = true
        }
        if !frame.leftoverBlocks.isEmpty {
            blocks.putBack(frame.leftoverBlocks)
            frame.leftoverBlocks.removeAll(keepingCapacity: true)
        }
        return ran
    }

    // ===== step 4: custom sources =====

    /// Performs the mode's signalled custom sources by (order, first-signal time); with
    /// returnAfterSourceHandled only the first. Returns whether any ran.
    func doCustomSources(_ frame: RunFrame) -> Bool {
        let state = frame.state!
        lock.withLock {
            for source in state.sources {
                let signaledAt = source.pendingSignalTime
                if signaledAt != 0 { frame.sources.append((source, signaledAt)) }
            }
        }
        guard !frame.sources.isEmpty else { return false }
        if frame.sources.count > 1 {
            frame.sources.sort { lhs, rhs in
                if lhs.source.order != rhs.source.order { return lhs.source.order < rhs.source.order }
                if lhs.signaledAt != rhs.signaledAt { return lhs.signaledAt < rhs.signaledAt }
                return lhs.source.id < rhs.source.id
            }
        }
        var handled = false
        for (source, _) in frame.sources {
            guard source.isValid else { continue }
            // The signal is cleared just before the perform, so a re-signal from inside it runs next iteration.
            let signaledAt = source.takeSignal()
            guard signaledAt != 0 else { continue }
            frame.sink?.sourcePerformBegin(frame.context(loop: self), sourceID: source.id, kind: .custom,
                                           order: source.order, signaled: signaledAt)
            measureCallout(frame, since: signaledAt)
            let began = calloutBegan(frame)
            source.perform()
            frame.sink?.sourcePerformEnd(frame.context(loop: self), sourceID: source.id)
            calloutEnded(frame, began: began, .source, id: source.id, label: source.label)
            frame.unpublished.sourcesHandled += 1
            handled = true
            if frame.returnAfterSourceHandled { break }
        }
        frame.sources.removeAll(keepingCapacity: true)
        return handled
    }

    // ===== step 7: wait =====

    /// Sleeps until something happens (or only polls), then records what woke the loop.
    func waitForWakeUp(_ frame: RunFrame, poll: Bool) {
        prepareMainQueueWait(frame)
        let (sleptFrom, messageWaiting) = poll ? (0, false) : prepareToSleep(frame)
        // A message that reached one of the mode's ports since step 5 turns the sleep into a poll: its send saw
        // no sleeping loop to wake (rule 21a). So does a block queued from this thread since the last block step
        // (by a block, or a BeforeWaiting observer), which wrote no wake-up: it runs in step 9 (rule 31).
        let ready = kernel.wait(frame.state.waitSet, poll: poll || messageWaiting || blockQueuedOnLoopThread)
        countWait()
        frame.waitNumber = waitCount
        if !poll { setWaiting(false) }
        let sawTimer = consumeWakeUp(ready, frame)
        recordWakeUp(frame, poll: poll, sawTimer: sawTimer, sleptFrom: sleptFrom)
    }

    /// Arms the kernel timer for the mode's next wake date and publishes the sleeping mode and deadline, so that
    /// a timer changed from another thread meanwhile re-arms it. Returns when the sleep started if a tracer or the
    /// loop's measurements want its length, else 0 (no clock read per sleep otherwise), and whether a port of the
    /// mode already holds a message.
    private func prepareToSleep(_ frame: RunFrame) -> (sleptFrom: UInt64, messageWaiting: Bool) {
        let state = frame.state!
        let messageWaiting = lock.withLock {
            kernel.arm(deadline: wakeDeadline(for: state, runDeadline: frame.deadline))
            sleepingIn = state
            sleepingDeadline = frame.deadline
            // Before the sleep rather than after it: a thread reading the statistics of a sleeping loop sees all
            // its work, outer runs' included, and the wake-up does not spend cold cache lines on it.
            for running in runStack { publishCounters(running) }
            // Under the lock that a port's send checks `sleepingIn` under: either it wakes this sleep or this
            // sees its message.
            return hasQueuedMessage(state)
        }
        setWaiting(true)
        guard timesSleeps(frame) else { return (0, messageWaiting) }
        let start = now()
        measurements?.beganSleep(at: start)
        return (start, messageWaiting)
    }

    /// Keeps the ready descriptors for step 9 and consumes the wake-up, so the next wait blocks again. Returns
    /// whether the timer expired.
    private func consumeWakeUp(_ ready: ReadyEvents, _ frame: RunFrame) -> Bool {
        var sawWakeUp = false
        var sawTimer = false
        for index in 0..<ready.count {
            let (token, readiness) = ready[index]
            switch token {
            case SelectorToken.wakeUp: sawWakeUp = true
            case SelectorToken.timer: sawTimer = true
            case SelectorToken.mainQueue: frame.mainQueueReady = true
            default:
                frame.readyTokens.append((token, readiness))
                frame.descriptorsReady = true
            }
        }
        // Read after step 9, not now: the read is a system call between the wake-up and the work it announced.
        if sawWakeUp { wakeUpLeftByTheWait = true }
        return sawTimer
    }

    /// Consumes the timer expiry, ends the sleep for other threads, counts the iteration and (after a sleep) its
    /// wake reason, publishes the counters after a poll (before a sleep, ``prepareToSleep(_:)`` did), and tells
    /// the tracer: one lock for all of it.
    private func recordWakeUp(_ frame: RunFrame, poll: Bool, sawTimer: Bool, sleptFrom: UInt64) {
        let reason: WakeReason? = lock.withLock {
            // Under the lock: another thread may re-arm the timer until `sleepingIn` is cleared.
            if sawTimer { kernel.consumeTimerExpiry() }
            let reason = poll ? nil : wakeReason(frame, sawTimer: sawTimer)
            sleepingIn = nil
            // Counted here, with the sleep and its reason, so that no reader sees more sleeps than iterations.
            counters.iterations += 1
            if let reason {
                counters.sleeps += 1
                counters.countWakeUp(reason)
            } else {
                // A poll: a loop that keeps polling never sleeps, so it publishes here.
                publishCounters(frame)
            }
            return reason
        }
        guard let reason, timesSleeps(frame) else { return }
        let slept = now() &- sleptFrom
        sleptWhileTimed &+= slept
        measurements?.addSleep(slept)
        frame.sink?.wakeUp(frame.context(loop: self), reason: reason, slept: slept)
    }

    @inline(__always)
    private func timesSleeps(_ frame: RunFrame) -> Bool { frame.sink != nil || measurements != nil }

    /// What ended a sleep, most specific first (lock held: the mode's ports and sources are read).
    private func wakeReason(_ frame: RunFrame, sawTimer: Bool) -> WakeReason {
        if frame.stopRequested.load(ordering: .acquiring) { return .stop }
        if sawTimer { return now() >= frame.deadline ? .timeout : .timer }
        if frame.mainQueueReady { return .mainQueue }
        if frame.descriptorsReady { return .descriptor }
        if hasQueuedMessage(frame.state) { return .port }
        if frame.state.sources.contains(where: { $0.isSignaled }) { return .source }
        return .manual
    }

    // ===== step 9: what woke us =====

    /// Fires due timers, serves the main dispatch queue, handles ready descriptor and port sources, then runs
    /// blocks. Returns whether a source was handled (timers and blocks do not count; the main queue does).
    func handleWakeUp(_ frame: RunFrame) -> Bool {
        doTimers(frame)
        let servedMainQueue = serviceMainQueue(frame)
        let handled = doReadySources(frame) || servedMainQueue
        doBlocks(frame)
        return handled
    }

    /// Fires the timers due now in fire-date order. The due set is collected first, so a timer added or
    /// rescheduled by a callout does not fire in the same pass.
    func doTimers(_ frame: RunFrame) {
        let state = frame.state!
        guard state.holdsTimers else { return }
        lock.withLock {
            let date = now()
            for timer in state.timers {
                if timer.fireDateNanoseconds > date { break }
                if !timer.isFiring { frame.timers.append(timer) }
            }
        }
        for timer in frame.timers { fire(timer, frame) }
        frame.timers.removeAll(keepingCapacity: true)
    }

    private func fire(_ timer: LoopTimer, _ frame: RunFrame) {
        lock.lock()
        // An earlier callout of this pass may have invalidated, removed or rescheduled it.
        let checkedAt = now()
        guard timer.isValid, !timer.isFiring, timer.modes.contains(frame.mode),
              timer.fireDateNanoseconds <= checkedAt else {
            lock.unlock()
            return
        }
        timer.isFiring = true
        timer.fireDateSetDuringCallout = false
        let scheduled = timer.fireDateNanoseconds
        let missed = timer.missedSlots
        timer.missedSlots = 0
        lock.unlock()

        frame.sink?.timerFireBegin(frame.context(loop: self), timerID: timer.id, scheduled: scheduled,
                                   tolerance: timer.toleranceNanoseconds, interval: timer.intervalNanoseconds, missed: missed)
        // Its lateness on the loop's clock: the due check's read stands for the callout's start.
        measureCallout(frame, since: scheduled, timer: true, readAt: checkedAt)
        let began = calloutBegan(frame)
        timer.handler(timer)
        frame.sink?.timerFireEnd(frame.context(loop: self), timerID: timer.id)
        calloutEnded(frame, began: began, .timer, id: timer.id, label: timer.label)
        frame.unpublished.timersFired += 1

        lock.lock()
        timer.isFiring = false
        let boundHere = timer.binding.loop === self
        if timer.intervalNanoseconds == 0 {
            // One-shot: invalidated after its callout, even if the callout moved its fire date or removed it
            // from its modes (rule 23).
            if boundHere && timer.isValid {
                timer.markInvalid()
                _ = detach(timer)
            }
        } else if boundHere && timer.isValid && !timer.fireDateSetDuringCallout {
            let next = LoopTimer.nextGridDate(after: scheduled, interval: timer.intervalNanoseconds, now: now())
            timer.missedSlots = next.skipped
            reschedule(timer, to: next.date)
        }
        lock.unlock()
        // Removed from its modes by the callout (unbound) or moved to another loop: invalidate() takes the lock
        // of wherever it is now.
        if timer.intervalNanoseconds == 0 && !boundHere { timer.invalidate() }
    }

    /// Handles ready descriptor sources and ports with messages, by (order, id); with returnAfterSourceHandled
    /// only the first. Returns whether any was handled. Each source is checked again just before its call: an
    /// earlier callout of the pass (or a nested run it started) may have removed it, or consumed its readiness.
    func doReadySources(_ frame: RunFrame) -> Bool {
        let state = frame.state!
        guard frame.descriptorsReady || state.holdsPorts else { return false }
        lock.withLock {
            for (token, readiness) in frame.readyTokens {
                if let source = state.descriptors[token] {
                    frame.readySources.append(.descriptor(source, DescriptorSource.events(from: readiness)))
                }
            }
            for port in state.ports where port.queuedCount > 0 {
                frame.readySources.append(.port(port))
            }
        }
        frame.readyTokens.removeAll(keepingCapacity: true)
        frame.descriptorsReady = false
        guard !frame.readySources.isEmpty else { return false }
        if frame.readySources.count > 1 {
            frame.readySources.sort { ($0.order, $0.id) < ($1.order, $1.id) }
        }
        var handled = false
        for ready in frame.readySources {
            switch ready {
            case .descriptor(let source, let events):
                guard let events = currentEvents(of: source, reported: events, frame), source.beginCall() else {
                    continue
                }
                frame.sink?.sourcePerformBegin(frame.context(loop: self), sourceID: source.id, kind: .descriptor,
                                               order: source.order, signaled: 0)
                let began = calloutBegan(frame)
                source.handler(source, events)
                frame.sink?.sourcePerformEnd(frame.context(loop: self), sourceID: source.id)
                calloutEnded(frame, began: began, .descriptor, id: source.id, label: source.label)
                source.endCall()
                frame.unpublished.sourcesHandled += 1
                handled = true
            case .port(let port):
                handled = deliverMessages(of: port, frame) || handled
            }
            if handled && frame.returnAfterSourceHandled { break }
        }
        frame.readySources.removeAll(keepingCapacity: true)
        return handled
    }

    /// What to hand a descriptor's handler: nil when the source left this mode (or the loop) since the wait,
    /// or when a nested run waited since and the descriptor is no longer ready (its readiness was consumed; a
    /// blocking read would hang). Without a nested wait the report is the wait's own: no syscall.
    private func currentEvents(of source: DescriptorSource, reported: DescriptorSource.Events,
                               _ frame: RunFrame) -> DescriptorSource.Events? {
        let stillHere = lock.withLock { frame.state.descriptors[source.id] === source }
        guard stillHere else { return nil }
        guard waitCount != frame.waitNumber else { return reported }
        let now = kernel.backend.currentReadiness(of: source.fileDescriptor, for: source.epollInterest)
        let events = DescriptorSource.events(from: now)
        return events.isEmpty ? nil : events
    }

    /// Delivers `port`'s messages one at a time, in send order, while the port is still in this mode: a handler
    /// that removes it leaves the rest queued, one that invalidates it drops them, and a nested run it starts
    /// delivers the next ones itself (rule 21a). At most the messages queued when the pass reaches the port
    /// (one with returnAfterSourceHandled), so a sender that keeps the queue full cannot hold the loop here.
    private func deliverMessages(of port: LoopPort, _ frame: RunFrame) -> Bool {
        guard let handler = port.handler else { return false }
        var budget = frame.returnAfterSourceHandled ? 1 : port.queuedCount
        var delivered = false
        while budget > 0, isScheduled(port, frame), let (message, sentAt) = port.takeMessage() {
            budget -= 1
            frame.sink?.sourcePerformBegin(frame.context(loop: self), sourceID: port.id, kind: .port,
                                           order: port.order, signaled: sentAt)
            measureCallout(frame, since: sentAt)
            let began = calloutBegan(frame)
            handler(port, message)
            frame.sink?.sourcePerformEnd(frame.context(loop: self), sourceID: port.id)
            calloutEnded(frame, began: began, .port, id: port.id, label: port.label)
            frame.unpublished.sourcesHandled += 1
            delivered = true
        }
        return delivered
    }

    private func isScheduled(_ port: LoopPort, _ frame: RunFrame) -> Bool {
        lock.withLock { frame.state.ports.contains { $0 === port } }
    }

    /// Whether a port of the mode holds a message (lock held).
    func hasQueuedMessage(_ state: ModeState) -> Bool {
        state.holdsPorts && state.ports.contains { $0.queuedCount > 0 }
    }
}

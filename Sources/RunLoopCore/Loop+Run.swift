import CRunLoopLinux

// Running: the entry points, a run's Entry/Exit frame, and the iteration as the ten steps of the rulebook
// (docs/semantics.md §3). The step functions live in Loop+Steps.swift.

extension Loop {
    /// Runs the loop once in `mode` until a result: see the type documentation for the iteration order.
    ///
    /// - Parameters:
    ///   - mode: the mode to run; the common token, a mode never used, or an empty mode returns
    ///     `Loop.RunResult.finished` at once with no observer calls.
    ///   - timeout: how long the run may last; zero runs exactly one non-blocking iteration.
    ///   - returnAfterSourceHandled: return after the first source (custom, descriptor or port) is handled;
    ///     only the first signalled custom source is performed, the rest stay signalled.
    /// - Returns: why the run ended.
    /// - Precondition: called on the loop's own thread, with a timeout that is not negative.
    @discardableResult
    public func run(mode: Mode = .default, timeout: Duration, returnAfterSourceHandled: Bool = false) -> RunResult {
        requireUsage(isOwnedByCurrentThread,
                     "Loop.run: loop \(id) belongs to thread \(threadID) but was run from thread \(crl_gettid()); a loop only runs on its own thread (use Loop.current)")
        requireUsage(timeout >= .zero, "Loop.run: the timeout must not be negative (got \(timeout))")
        announceToCurrentSink()
        let start = now()
        guard let frame = beginRun(mode: mode, deadline: Instant(nanoseconds: start).advanced(by: timeout).nanoseconds,
                                   pollsOnly: timeout == .zero, returnAfterSourceHandled: returnAfterSourceHandled) else {
            return .finished
        }
        frame.sink?.runBegin(frame.context(loop: self), timeoutNanoseconds: UInt64(timeout.nanosecondsClamped),
                             returnAfterSourceHandled: returnAfterSourceHandled)
        notifyObservers(.entry, frame)
        let result = frame.stopRequested.load(ordering: .acquiring) ? .stopped : runIterations(frame)
        notifyObservers(.exit, frame)
        frame.sink?.runEnd(frame.context(loop: self), result: result)
        endRun(frame)
        return result
    }

    /// Runs the default mode until a run returns `Loop.RunResult.stopped` or `Loop.RunResult.finished`.
    public func run() {
        while true {
            let result = run(mode: .default, timeout: Loop.forever)
            if result == .stopped || result == .finished { return }
        }
    }

    /// A timeout that never passes in practice (about 34,000 years).
    public static let forever: Duration = .seconds(1 << 40)

    /// The ten steps, until one iteration decides the result.
    private func runIterations(_ frame: RunFrame) -> RunResult {
        while true {
            if let result = runIteration(frame) { return result }
        }
    }

    /// One iteration: one call per step of the rulebook's event order.
    private func runIteration(_ frame: RunFrame) -> RunResult? {
        countIteration()
        adoptLayeredSink(frame)
        adoptMeasurements()
        ignoresOwnWakeUps = false
        beginStallWatch(frame)
        notifyObservers(.beforeTimers, frame)                                // 1
        notifyObservers(.beforeSources, frame)                               // 2
        doBlocks(frame)                                                      // 3
        var sourceHandled = doCustomSources(frame)                           // 4
        if sourceHandled { doBlocks(frame) }
        var poll = sourceHandled || frame.pollsOnly                          // 5
        if !poll {
            switch sleepDecision(frame) {
            case .finish(let result): return result
            case .poll: poll = true
            case .sleep: notifyObservers(.beforeWaiting, frame)              // 6
            }
        }
        waitForWakeUp(frame, poll: poll)                                     // 7
        ignoresOwnWakeUps = true
        if !poll { notifyObservers(.afterWaiting, frame) }                   // 8
        if handleWakeUp(frame) { sourceHandled = true }                      // 9
        drainWakeUpAfterTheWait()
        return iterationResult(frame, sourceHandled: sourceHandled)          // 10
    }

    /// A sink installed over the run's own since it began, and passing every event on to it (RunLoopMetrics'),
    /// serves the run from this iteration on: metrics attached to a loop that runs for good (a LoopThread's)
    /// start without waiting for a next run. One load per iteration.
    @inline(__always)
    private func adoptLayeredSink(_ frame: RunFrame) {
        guard let current = LoopEventSink.current, current !== frame.sink else { return }
        adoptIfLayered(current, frame)
    }

    @inline(never)
    private func adoptIfLayered(_ current: LoopEventSink, _ frame: RunFrame) {
        guard current.layered, current.layeredOver === frame.sink else { return }
        frame.sink = current
    }

    // ===== entry and exit =====

    /// Checks the mode and pushes a frame; nil when the run finishes at once.
    private func beginRun(mode: Mode, deadline: UInt64, pollsOnly: Bool, returnAfterSourceHandled: Bool) -> RunFrame? {
        lock.lock()
        defer { lock.unlock() }
        guard !isTornDown, mode != .common else { return nil }
        // Outside a run, or nested in steps 8-10 of one: a wake-up written meanwhile is not this run's.
        if ignoresOwnWakeUps { drainWakeUpAfterTheWait() }
        let known = modes[mode]
        let modeIsCommon = known?.isCommon ?? commonModeSet.contains(mode)
        let servesMainQueue = servesMainQueue(modeIsCommon: modeIsCommon)
        // A mode never used holds no item, but a block performed for it, or the main queue it serves, keeps it
        // alive (and so creates it).
        let existing = known ?? (servesMainQueue || blocks.contains { $0.modes.admits(mode, modeIsCommon: modeIsCommon) }
                                       ? modeState(mode) : nil)
        guard let state = existing, !isEmpty(state) else { return nil }
        let frame = framePool.popLast() ?? RunFrame()
        frame.begin(state: state, deadline: deadline, pollsOnly: pollsOnly,
                    returnAfterSourceHandled: returnAfterSourceHandled, depth: UInt32(runStack.count + 1))
        frame.servesMainQueue = servesMainQueue
        // CF's per-run data: the run honours its own thread's wake-ups until its first wait; the outer run's
        // state comes back when it ends.
        frame.outerIgnoresOwnWakeUps = ignoresOwnWakeUps
        frame.outerBlockQueuedOnLoopThread = blockQueuedOnLoopThread
        ignoresOwnWakeUps = false
        runStack.append(frame)
        activeRuns.store(runStack.count, ordering: .releasing)
        counters.runs += 1
        return frame
    }

    private func endRun(_ frame: RunFrame) {
        lock.withLock {
            let top = runStack.removeLast()
            precondition(top === frame, "BUG IN RunLoopCore (please report): runs ended out of order")
            ignoresOwnWakeUps = frame.outerIgnoresOwnWakeUps
            // A block the outer run's thread queued before this run (for the outer mode) still needs its poll.
            blockQueuedOnLoopThread = blockQueuedOnLoopThread || frame.outerBlockQueuedOnLoopThread
            activeRuns.store(runStack.count, ordering: .releasing)
            publishCounters(frame)
            frame.end()
            framePool.append(frame)
        }
    }

    // ===== predicates =====

    /// A mode is empty when it holds no source, port or timer and no block pending for it, and the main queue
    /// does not stand for a source in it (lock held).
    func isEmpty(_ state: ModeState) -> Bool {
        guard state.hasNoItems, !servesMainQueue(modeIsCommon: state.isCommon) else { return false }
        return !blocks.contains { mayRun($0, in: state.mode, modeIsCommon: state.isCommon) }
    }

    /// Rule 33: consumes the wake-up the last wait returned for, and any written since the wait (from any thread),
    /// once steps 8 and 9 have run, as CF ignores wake-ups from just after its wait until the next iteration.
    /// Every check a wake-up can stand for (blocks, signalled sources, a stop, the run's end) comes after this in
    /// step 10 or the next iteration, so a wake-up it consumes is never lost. A run that starts while the loop
    /// runs no other, or nested in step 8 or 9, drains on entry for the same reason (or its first wait would
    /// return at once for a wake-up that is not its own). The flag is cleared after the drain: a wake-up that
    /// lands in between finds it set and writes nothing, and what it announced is seen by the next step anyway.
    @inline(__always)
    func drainWakeUpAfterTheWait() {
        guard wakeUpLeftByTheWait || wakePending.load(ordering: .relaxed) else { return }
        wakeUpLeftByTheWait = false
        drainWakeUp()
    }

    /// Consumes the wake-up descriptor, then lets the next wakeUp() write it again.
    func drainWakeUp() {
        kernel.consumeWakeUp()
        wakePending.store(false, ordering: .releasing)
    }

    /// What step 6 does instead of going to sleep, decided under one lock.
    private enum SleepDecision {
        /// Better than CF: a mode that became empty during the iteration ends the run instead of sleeping until
        /// the timeout.
        case finish(RunResult)
        /// A port of the mode holds a message: like a handled source, it makes the iteration a poll (rule 21a).
        case poll
        case sleep
    }

    private func sleepDecision(_ frame: RunFrame) -> SleepDecision {
        let (empty, message) = lock.withLock { (isEmpty(frame.state), hasQueuedMessage(frame.state)) }
        if empty { return .finish(iterationResult(frame, sourceHandled: false) ?? .finished) }
        return message ? .poll : .sleep
    }

    /// Step 10: the first that applies of handledSource, timedOut, stopped, finished; nil to go round again.
    /// Its clock read (needed for the deadline unless the run ends anyway) also ends the iteration's stall watch.
    private func iterationResult(_ frame: RunFrame, sourceHandled: Bool) -> RunResult? {
        let endsAnyway = (frame.returnAfterSourceHandled && sourceHandled) || frame.pollsOnly
        let time = endsAnyway && !frame.stall.isWatching ? 0 : now()
        endStallWatch(frame, at: time)
        if frame.returnAfterSourceHandled && sourceHandled { return .handledSource }
        if frame.pollsOnly || time >= frame.deadline { return .timedOut }
        if frame.stopRequested.load(ordering: .acquiring) { return .stopped }
        if lock.withLock({ isEmpty(frame.state) }) { return .finished }
        return nil
    }

    func publishCounters(_ frame: RunFrame) {
        let delta = frame.unpublished
        counters.timersFired += delta.timersFired
        counters.sourcesHandled += delta.sourcesHandled
        counters.blocksRun += delta.blocksRun
        counters.jobsRun += delta.jobsRun
        counters.observerCallouts += delta.observerCallouts
        counters.mainQueueServicings += delta.mainQueueServicings
        frame.unpublished = RunFrame.CalloutCounts()
    }
}

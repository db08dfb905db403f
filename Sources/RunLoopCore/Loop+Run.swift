import CRunLoopLinux

// Running: the entry points, a run's Entry/Exit frame, and the iteration as the ten steps of the rulebook
// (docs/semantics.md §3). The step functions live in Loop+Steps.swift.

extension Loop {
    /// Runs the loop once in `mode` until a result: see the type documentation for the iteration order.
    ///
    /// - Parameters:
    ///   - mode: the mode to run; the common token, a mode never used, or an empty mode returns
    ///     ``RunResult/finished`` at once with no observer calls.
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

    /// Runs the default mode until a run returns ``RunResult/stopped`` or ``RunResult/finished``.
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
        iteration &+= 1
        notifyObservers(.beforeTimers, frame)                                // 1
        notifyObservers(.beforeSources, frame)                               // 2
        doBlocks(frame)                                                      // 3
        var sourceHandled = doCustomSources(frame)                           // 4
        if sourceHandled { doBlocks(frame) }
        let poll = sourceHandled || frame.pollsOnly                          // 5
        if !poll {
            if let result = resultInsteadOfSleeping(frame) { return result }
            notifyObservers(.beforeWaiting, frame)                           // 6
        }
        waitForWakeUp(frame, poll: poll)                                     // 7
        if !poll { notifyObservers(.afterWaiting, frame) }                   // 8
        if handleWakeUp(frame) { sourceHandled = true }                      // 9
        return iterationResult(frame, sourceHandled: sourceHandled)          // 10
    }

    // ===== entry and exit =====

    /// Checks the mode and pushes a frame; nil when the run finishes at once.
    private func beginRun(mode: Mode, deadline: UInt64, pollsOnly: Bool, returnAfterSourceHandled: Bool) -> RunFrame? {
        lock.lock()
        defer { lock.unlock() }
        guard !isTornDown, mode != .common else { return nil }
        // A mode never used holds no item, but a block performed for it keeps it alive (and so creates it).
        let existing = modes[mode] ?? (blocks.hasBlock(for: mode, modeIsCommon: commonModeSet.contains(mode)) ? modeState(mode) : nil)
        guard let state = existing, !isEmpty(state) else { return nil }
        let frame = framePool.popLast() ?? RunFrame()
        frame.begin(state: state, deadline: deadline, pollsOnly: pollsOnly,
                    returnAfterSourceHandled: returnAfterSourceHandled, depth: UInt32(runStack.count + 1))
        runStack.append(frame)
        counters.runs += 1
        return frame
    }

    private func endRun(_ frame: RunFrame) {
        lock.withLock {
            let top = runStack.removeLast()
            precondition(top === frame, "BUG IN RunLoopCore (please report): runs ended out of order")
            publishCounters(frame)
            frame.end()
            framePool.append(frame)
        }
    }

    // ===== predicates =====

    /// A mode is empty when it holds no source, port or timer and no block pending for it (lock held).
    func isEmpty(_ state: ModeState) -> Bool {
        guard state.hasNoItems else { return false }
        return !blocks.hasBlock(for: state.mode, modeIsCommon: commonModeSet.contains(state.mode), countingJobs: !isRunningJob)
    }

    /// Better than CF: a mode that became empty during the iteration ends the run instead of sleeping until the
    /// timeout.
    private func resultInsteadOfSleeping(_ frame: RunFrame) -> RunResult? {
        guard lock.withLock({ isEmpty(frame.state) }) else { return nil }
        return iterationResult(frame, sourceHandled: false) ?? .finished
    }

    /// Step 10: the first that applies of handledSource, timedOut, stopped, finished; nil to go round again.
    private func iterationResult(_ frame: RunFrame, sourceHandled: Bool) -> RunResult? {
        if frame.returnAfterSourceHandled && sourceHandled { return .handledSource }
        if frame.pollsOnly || now() >= frame.deadline { return .timedOut }
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
        counters.iterations += delta.iterations
        frame.unpublished = RunFrame.CalloutCounts()
    }
}

import TraceModel

/// What a run knows about its current iteration while it watches for stalls (a tracer listens or the loop is
/// measured, and ``Loop/stallThreshold`` is set): when the iteration began, how much the loop had slept by then, and,
/// for a tracer, the longest callout so far. Loop thread only; a nested run watches its own iterations in its own
/// frame.
struct StallWatch {
    /// This iteration's threshold in ns; 0 while the run does not watch (neither tracer nor measurements, or no
    /// threshold).
    var threshold: UInt64 = 0
    /// Whether callouts are timed for the stall's culprit: only a tracer reports it (measurements count stalls).
    var timesCallouts = false
    /// The loop's iteration number when it began (a nested run advances the loop's counter meanwhile).
    var iteration: UInt64 = 0
    var start: UInt64 = 0
    /// ``Loop/sleptWhileTimed`` at the start: the sleeps of this iteration and of runs nested in it are not busy.
    var sleptAtStart: UInt64 = 0
    var culpritKind: LoopCalloutKind = .none
    var culpritID: UInt64 = 0
    var culpritDuration: UInt64 = 0
    var culpritLabel: String?

    var isWatching: Bool { threshold != 0 }
}

// Stall reports: begun at step 1, ended at step 10 with the clock read step 10 makes for the run's deadline,
// callouts timed between (Loop+Steps.swift and the other callout sites call calloutBegan/calloutEnded).
extension Loop {
    /// Step 1: watches the iteration when a tracer listens or the loop is measured, and a threshold is set.
    @inline(__always)
    func beginStallWatch(_ frame: RunFrame) {
        guard frame.sink != nil || measurements != nil else { return }
        let threshold = processStallThreshold.load(ordering: .relaxed)
        frame.stall.threshold = threshold
        guard threshold != 0 else { return }
        frame.stall.timesCallouts = frame.sink != nil
        startWatching(frame)
    }

    private func startWatching(_ frame: RunFrame) {
        // The previous iteration's step 10 read the clock just before this one began; a run's first iteration
        // reads it here (once per run).
        frame.stall.start = frame.lastClockRead != 0 ? frame.lastClockRead : now()
        frame.stall.iteration = iteration
        frame.stall.sleptAtStart = sleptWhileTimed
        frame.stall.culpritKind = .none
        frame.stall.culpritID = 0
        frame.stall.culpritDuration = 0
        frame.stall.culpritLabel = nil
    }

    /// A callout's first timestamp, taken after its begin event was traced (0 when the run times no callout).
    @inline(__always)
    func calloutBegan(_ frame: RunFrame) -> UInt64 {
        guard frame.stall.timesCallouts else { return 0 }
        return calloutStamp(frame)
    }

    /// A callout ended (after its end event was traced): it becomes the iteration's culprit if it ran longest.
    @inline(__always)
    func calloutEnded(_ frame: RunFrame, began: UInt64, _ kind: LoopCalloutKind, id: UInt64,
                      label: @autoclosure () -> String?) {
        guard frame.stall.timesCallouts else { return }
        let end = calloutStamp(frame)
        let duration = end > began ? end - began : 0
        guard frame.stall.culpritKind == .none || duration > frame.stall.culpritDuration else { return }
        frame.stall.culpritKind = kind
        frame.stall.culpritID = id
        frame.stall.culpritDuration = duration
        frame.stall.culpritLabel = label()
    }

    /// The tracer's timestamp of the event it just recorded on this thread, or the loop's clock when it cannot
    /// tell. The two may differ by the recorder's TSC lead (well under a microsecond), never more.
    @inline(__always)
    private func calloutStamp(_ frame: RunFrame) -> UInt64 {
        if let stamp = frame.sink?.lastEventTimestamp(), stamp != 0 { return stamp }
        return now()
    }

    /// Step 10: counts and reports the iteration if it was busy past the threshold. `end` is the clock read step 10
    /// made.
    func endStallWatch(_ frame: RunFrame, at end: UInt64) {
        frame.lastClockRead = end
        guard frame.stall.isWatching else { return }
        let watch = frame.stall
        let elapsed = end > watch.start ? end - watch.start : 0
        let slept = sleptWhileTimed &- watch.sleptAtStart
        let busy = elapsed > slept ? elapsed - slept : 0
        frame.stall.threshold = 0
        frame.stall.timesCallouts = false
        frame.stall.culpritLabel = nil
        guard busy > watch.threshold else { return }
        measurements?.countStall()
        guard let sink = frame.sink else { return }
        let context = LoopEventSink.Context(loopID: id, modeCString: frame.state.cName, depth: frame.depth,
                                            iteration: watch.iteration)
        sink.loopStall(context, start: watch.start, busy: busy, threshold: watch.threshold,
                       culprit: .init(kind: watch.culpritKind, id: watch.culpritID, duration: watch.culpritDuration,
                                      label: watch.culpritLabel ?? ""))
    }
}

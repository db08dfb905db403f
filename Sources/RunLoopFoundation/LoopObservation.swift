import CFoundationRunLoop
import Synchronization
import RunLoopCore
import TraceModel

/// The observer of one attached CFRunLoop and the loop's tracing state (depth, iteration, the modes of the runs
/// in progress, which sink it was announced to).
///
/// Everything but ``loopID``, ``name`` and the observer handle is touched only by the observer's callout, which
/// CF runs on the loop's thread (and by ``start(announceNow:)`` when that runs on the loop's thread too).
final class LoopObservation: @unchecked Sendable {
    let loopID: UInt64
    let name: String
    private let threadID: Int32
    private let loop: rlcf_run_loop_ref
    private let sinks: SinkSource
    private var observer: rlcf_observer_ref?
    private let stopped = Atomic<Bool>(false)

    private var announcedTo: ObjectIdentifier?
    private var depth: UInt32 = 0
    private var iteration: UInt64 = 0
    /// The interned mode name of each traced run in progress, innermost last; nil until a sink needs it (the
    /// mode is then the loop's current mode, since only the innermost run's name is ever resolved).
    private var runModes: [UnsafePointer<CChar>?] = []
    /// Mode names resolved on this loop (CF keeps one name object per mode for the loop's life), so a run's entry
    /// costs a pointer comparison, not a conversion.
    private var resolvedModes: [(name: UnsafeRawPointer, cString: UnsafePointer<CChar>)] = []
    /// The modes the observer was added to.
    private var observedModes: Set<UnsafeRawPointer> = []
    /// Each run's current iteration while stalls are watched (``Loop/stallThreshold`` set), innermost last.
    private var iterationWatches: [IterationWatch] = []
    /// The loop's time asleep so far (all runs), as the tracer's timestamps measured it.
    private var sleptWhileTraced: UInt64 = 0
    private var sleepingSince: UInt64 = 0

    /// A Foundation iteration, from its beforeTimers to the next beforeTimers or the run's exit.
    private struct IterationWatch {
        var iteration: UInt64 = 0
        /// 0 while no iteration of the run is watched.
        var start: UInt64 = 0
        var sleptAtStart: UInt64 = 0
    }

    init(loop: rlcf_run_loop_ref, name: String, threadID: Int32, sinks: SinkSource) {
        self.loopID = LoopEventSink.makeID()
        self.loop = loop
        self.name = name
        self.threadID = threadID
        self.sinks = sinks
        runModes.reserveCapacity(8)
    }

    // ===== lifetime =====

    func start(announceNow: Bool) {
        var context = rlcf_observer_context(
            version: 0,
            info: Unmanaged.passUnretained(self).toOpaque(),
            retain: { info in
                guard let info else { return nil }
                _ = Unmanaged<LoopObservation>.fromOpaque(info).retain()
                return UnsafeRawPointer(info)
            },
            release: { info in
                guard let info else { return }
                Unmanaged<LoopObservation>.fromOpaque(info).release()
            },
            copyDescription: nil
        )
        // kCFRunLoopAllActivities; order 0, as Foundation's own observers use, and repeating.
        observer = rlcf_observer_create(nil, 0x0FFF_FFFF, 1, 0, { _, activity, info in
            guard let info else { return }
            Unmanaged<LoopObservation>.fromOpaque(info).takeUnretainedValue().observe(activity)
        }, &context)
        guard let observer else { return }
        rlcf_run_loop_add_observer(loop, observer, rlcf_common_modes())
        observeNewModes()
        if announceNow, let sink = currentSink() { announce(to: sink) }
    }

    /// Invalidates the observer and releases the loop's claim (once; later calls do nothing).
    func stop() {
        let wasStopped = stopped.exchange(true, ordering: .acquiringAndReleasing)
        guard !wasStopped else { return }
        if let observer { rlcf_observer_invalidate(observer) }
        rlcf_unclaim_loop(loop)
    }

    deinit {
        if let observer { rlcf_release(UnsafeRawPointer(observer)) }
    }

    func observeNewModes() {
        guard let observer, let modes = rlcf_run_loop_copy_all_modes(loop) else { return }
        defer { rlcf_release(UnsafeRawPointer(modes)) }
        for index in 0..<rlcf_array_get_count(modes) {
            guard let mode = rlcf_array_get_value_at_index(modes, index),
                  observedModes.insert(mode).inserted else { continue }
            rlcf_run_loop_add_observer(loop, observer, OpaquePointer(mode))
        }
    }

    // ===== the observer's callout =====

    @inline(__always)
    private func currentSink() -> LoopEventSink? {
        switch sinks {
        case .installed: LoopEventSink.current
        case .provided(let sink): sink()
        }
    }

    private func observe(_ rawActivity: UInt) {
        let activity = Loop.Activity(rawValue: rawActivity)
        // Depth and iteration are kept with or without a sink: one installed mid-run must see the right ones.
        if activity == .entry {
            depth &+= 1
            runModes.append(nil)
        } else if depth == 0 {
            // Attached while a run was in progress: count that run from here on.
            depth = 1
            runModes.append(nil)
        }
        if activity == .beforeTimers { iteration &+= 1 }
        if let sink = currentSink() {
            emit(activity, to: sink)
            if Loop.stallThresholdNanoseconds != 0 { watchStalls(activity, sink: sink) }
        }
        if activity == .exit {
            depth &-= 1
            runModes.removeLast()
            if iterationWatches.count > runModes.count { iterationWatches.removeLast(iterationWatches.count - runModes.count) }
        }
    }

    private func emit(_ activity: Loop.Activity, to sink: LoopEventSink) {
        if announcedTo != ObjectIdentifier(sink) { announce(to: sink) }
        if activity == .beforeWaiting { observeNewModes() }
        let mode: UnsafePointer<CChar>
        if let resolved = runModes[runModes.count - 1] {
            mode = resolved
        } else {
            mode = resolveCurrentMode()
            runModes[runModes.count - 1] = mode
        }
        sink.activity(activity, LoopEventSink.Context(loopID: loopID, modeCString: mode, depth: depth, iteration: iteration))
    }

    /// Reports a Foundation iteration busy past ``Loop/stallThreshold`` (`loop_stall`, culprit none: an observer
    /// sees no callout) when it ends, timed by the tracer's own stamp of the activity just emitted (the clock when
    /// the tracer cannot tell).
    private func watchStalls(_ activity: Loop.Activity, sink: LoopEventSink) {
        let stamp = sink.lastEventTimestamp()
        let now = stamp != 0 ? stamp : Loop.Instant.now.nanoseconds
        while iterationWatches.count < runModes.count { iterationWatches.append(IterationWatch()) }
        let index = runModes.count - 1
        switch activity {
        case .beforeWaiting:
            sleepingSince = now
        case .afterWaiting:
            if sleepingSince != 0 && now > sleepingSince { sleptWhileTraced &+= now - sleepingSince }
            sleepingSince = 0
        case .beforeTimers, .exit:
            let watch = iterationWatches[index]
            if watch.start != 0 { reportIfStalled(watch, endingAt: now, sink: sink) }
            iterationWatches[index] = activity == .exit ? IterationWatch()
                : IterationWatch(iteration: iteration, start: now, sleptAtStart: sleptWhileTraced)
        default:
            break
        }
    }

    private func reportIfStalled(_ watch: IterationWatch, endingAt end: UInt64, sink: LoopEventSink) {
        let threshold = Loop.stallThresholdNanoseconds
        let elapsed = end > watch.start ? end - watch.start : 0
        let slept = sleptWhileTraced &- watch.sleptAtStart
        let busy = elapsed > slept ? elapsed - slept : 0
        guard threshold != 0, busy > threshold, let mode = runModes[runModes.count - 1] else { return }
        sink.loopStall(LoopEventSink.Context(loopID: loopID, modeCString: mode, depth: depth, iteration: watch.iteration),
                       start: watch.start, busy: busy, threshold: threshold, culprit: .none)
    }

    private func announce(to sink: LoopEventSink) {
        announcedTo = ObjectIdentifier(sink)
        sink.loopCreated(loopID: loopID, threadID: threadID, name: name)
        sink.loopAdapted(loopID: loopID, adapter: .foundation, groupID: 0)
    }

    /// The interned name of the mode the loop runs in now: inside an observer callout, the innermost run's.
    private func resolveCurrentMode() -> UnsafePointer<CChar> {
        guard let mode = rlcf_run_loop_copy_current_mode(loop) else { return rlcf_intern_mode_name(nil) }
        defer { rlcf_release(UnsafeRawPointer(mode)) }
        let key = UnsafeRawPointer(mode)
        if let known = resolvedModes.first(where: { $0.name == key }) { return known.cString }
        let cString = rlcf_intern_mode_name(mode)!
        resolvedModes.append((key, cString))
        return cString
    }
}

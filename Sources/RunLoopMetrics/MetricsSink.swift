import RunLoopCore

/// The event seam's sink that measures adapted loops (RunLoopNIO's SwiftNIO event loops, whose events come only
/// through the seam) into their meters, and passes every event on, unchanged, to the sink it was installed over (a
/// tracer: `rlctl record` of a program with metrics still traces everything). Installed only while an adapted group
/// is attached: a RunLoopCore loop measures itself (RunLoopCore's LoopMeasurements). Events of loops that are not
/// attached cost one thread-local lookup.
final class MetricsSink: LoopEventSink, @unchecked Sendable {
    /// The sink below, every event passed on to it.
    let next: LoopEventSink?
    private let registry: MeterRegistry

    init(next: LoopEventSink?, registry: MeterRegistry) {
        self.next = next
        self.registry = registry
    }

    override var layered: Bool { true }
    override var layeredOver: LoopEventSink? { next }

    override func lastEventTimestamp() -> UInt64 { next?.lastEventTimestamp() ?? 0 }

    // Adapted loops (RunLoopNIO's): announced, then adapted with their group; a tick is an iteration, NIO's sleep
    // time less the traced I/O before the tick its idle time, the lateness probe's runs their wake-up delay.

    override func loopCreated(loopID: UInt64, threadID: Int32, name: String) {
        next?.loopCreated(loopID: loopID, threadID: threadID, name: name)
        if registry.hasGroups.load(ordering: .relaxed) { registry.loopAnnounced(loopID, name: name, threadID: threadID) }
    }

    override func loopAdapted(loopID: UInt64, adapter: Adapter, groupID: UInt64) {
        next?.loopAdapted(loopID: loopID, adapter: adapter, groupID: groupID)
        if registry.hasGroups.load(ordering: .relaxed) { registry.loopAdapted(loopID, groupID: groupID) }
    }

    override func nioTick(loopID: UInt64, start: UInt64, end: UInt64, sleep: UInt64, tasks: UInt64) {
        next?.nioTick(loopID: loopID, start: start, end: end, sleep: sleep, tasks: tasks)
        registry.meter(for: loopID)?.tick(start: start, end: end, slept: sleep)
    }

    override func nioIO(loopID: UInt64, channelID: UInt64, event: NIOEvent, start: UInt64, end: UInt64) {
        next?.nioIO(loopID: loopID, channelID: channelID, event: event, start: start, end: end)
        registry.meter(for: loopID)?.addIO(end > start ? end - start : 0)
    }

    override func probeFire(loopID: UInt64, scheduled: UInt64, lateness: UInt64, cost: UInt64) {
        next?.probeFire(loopID: loopID, scheduled: scheduled, lateness: lateness, cost: cost)
        registry.meter(for: loopID)?.measurements.wokeLate(lateness, timer: true)
    }

    // ===== passed on only =====

    override func wakeUp(_ context: Context, reason: Loop.WakeReason, slept: UInt64) {
        next?.wakeUp(context, reason: reason, slept: slept)
    }
    override func timerFireBegin(_ context: Context, timerID: UInt64, scheduled: UInt64, tolerance: UInt64, interval: UInt64, missed: UInt64) {
        next?.timerFireBegin(context, timerID: timerID, scheduled: scheduled, tolerance: tolerance, interval: interval, missed: missed)
    }
    override func sourcePerformBegin(_ context: Context, sourceID: UInt64, kind: SourceKind, order: Int, signaled: UInt64) {
        next?.sourcePerformBegin(context, sourceID: sourceID, kind: kind, order: order, signaled: signaled)
    }
    override func blockBegin(_ context: Context, blockID: UInt64, enqueued: UInt64) {
        next?.blockBegin(context, blockID: blockID, enqueued: enqueued)
    }
    override func jobBegin(_ context: Context, jobID: UInt64, enqueued: UInt64, priority: UInt8) {
        next?.jobBegin(context, jobID: jobID, enqueued: enqueued, priority: priority)
    }
    override func loopStall(_ context: Context, start: UInt64, busy: UInt64, threshold: UInt64, culprit: Culprit) {
        next?.loopStall(context, start: start, busy: busy, threshold: threshold, culprit: culprit)
    }

    override func itemLabeled(id: UInt64, kind: ItemKind, label: String) { next?.itemLabeled(id: id, kind: kind, label: label) }
    override func activity(_ activity: Loop.Activity, _ context: Context) { next?.activity(activity, context) }
    override func runBegin(_ context: Context, timeoutNanoseconds: UInt64, returnAfterSourceHandled: Bool) {
        next?.runBegin(context, timeoutNanoseconds: timeoutNanoseconds, returnAfterSourceHandled: returnAfterSourceHandled)
    }
    override func runEnd(_ context: Context, result: Loop.RunResult) { next?.runEnd(context, result: result) }
    override func timerFireEnd(_ context: Context, timerID: UInt64) { next?.timerFireEnd(context, timerID: timerID) }
    override func sourceSignaled(sourceID: UInt64, at time: UInt64) { next?.sourceSignaled(sourceID: sourceID, at: time) }
    override func sourcePerformEnd(_ context: Context, sourceID: UInt64) { next?.sourcePerformEnd(context, sourceID: sourceID) }
    override func blockEnd(_ context: Context, blockID: UInt64) { next?.blockEnd(context, blockID: blockID) }
    override func observerBegin(_ context: Context, observerID: UInt64, activity: Loop.Activity) {
        next?.observerBegin(context, observerID: observerID, activity: activity)
    }
    override func observerEnd(_ context: Context, observerID: UInt64) { next?.observerEnd(context, observerID: observerID) }
    override func mainQueueBegin(_ context: Context) { next?.mainQueueBegin(context) }
    override func mainQueueEnd(_ context: Context) { next?.mainQueueEnd(context) }
    override func jobEnd(_ context: Context, jobID: UInt64) { next?.jobEnd(context, jobID: jobID) }
    override func loopHang(loopID: UInt64, iteration: UInt64, busy: UInt64, threshold: UInt64) {
        next?.loopHang(loopID: loopID, iteration: iteration, busy: busy, threshold: threshold)
    }
}

import CoreMetrics
import RunLoopCore
import Synchronization

/// One attached loop's instruments (docs/metrics.md), and the figures it reads from the loop's measurements.
///
/// A RunLoopCore loop measures itself into ``measurements`` (its sleeps, stalls and callouts' wake-up delays; see
/// RunLoopCore's LoopMeasurements); an adapted loop (a SwiftNIO event loop traced by RunLoopNIO) is measured into
/// them by the metrics' sink, from the ticks, I/O and probe runs its adapter reports. The updater turns them and the
/// loop's iterations into time, utilization, stalls and recorded delays once per interval, so neither a callout
/// nor a sleep costs the loop's thread a call into the backend.
final class LoopMeter: @unchecked Sendable {
    let loopID: UInt64
    /// A RunLoopCore loop's meter reads its iterations from the loop; an adapted loop's counts its ticks as they are
    /// reported, and lives until its group is detached.
    private weak var loop: Loop?
    /// The group an adapted loop belongs to; nil for a RunLoopCore loop.
    let adaptedGroup: UInt64?
    /// Ticks reported for an adapted loop: written by its thread only.
    private let ticks = Atomic<UInt64>(0)
    /// An adapted loop's I/O of traced channels since its last tick (RunLoopNIO's ChannelHandler): written and read
    /// by its thread only.
    private let ioSinceTick = Atomic<UInt64>(0)

    let iterations: Counter
    let activeTime: FloatingPointCounter
    let idleTime: FloatingPointCounter
    let utilization: Meter
    let wakeUpDelay: CoreMetrics.Timer
    let timerLateness: CoreMetrics.Timer
    let stalls: Counter

    /// What the loop's thread measures: sleeps, stalls, and wake-up delays kept for the updater, which records them
    /// into ``wakeUpDelay`` and ``timerLateness`` so that the loop's thread does not pay the backend's record per
    /// callout.
    let measurements: LoopMeasurements

    // The updater's own, guarded by the registry's lock.
    private var lastIterations: UInt64
    private var lastIdle: UInt64 = 0
    private var lastStalls: UInt64 = 0
    private var lastUpdate: UInt64

    /// A RunLoopCore loop's meter; the loop measures into it once ``start()`` is called.
    convenience init(loop: Loop, factory: any MetricsFactory, registry: MeterRegistry) {
        self.init(loopID: loop.id, name: loop.name, threadID: loop.threadID, adaptedGroup: nil, factory: factory,
                  registry: registry)
        self.loop = loop
        lastIterations = loop.statistics.iterations
    }

    init(loopID: UInt64, name: String, threadID: Int32, adaptedGroup: UInt64?, factory: any MetricsFactory,
         registry: MeterRegistry) {
        self.loopID = loopID
        self.adaptedGroup = adaptedGroup
        let dimensions = [("runloop.name", name), ("runloop.thread", String(threadID))]
        iterations = Counter(label: LoopMetrics.Name.iterations, dimensions: dimensions, factory: factory)
        activeTime = FloatingPointCounter(label: LoopMetrics.Name.time, dimensions: dimensions + [("runloop.state", "active")], factory: factory)
        idleTime = FloatingPointCounter(label: LoopMetrics.Name.time, dimensions: dimensions + [("runloop.state", "idle")], factory: factory)
        utilization = Meter(label: LoopMetrics.Name.utilization, dimensions: dimensions, factory: factory)
        let wakeUpDelay = CoreMetrics.Timer(label: LoopMetrics.Name.wakeUpDelay, dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory)
        let timerLateness = CoreMetrics.Timer(label: LoopMetrics.Name.timerLateness, dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory)
        self.wakeUpDelay = wakeUpDelay
        self.timerLateness = timerLateness
        stalls = Counter(label: LoopMetrics.Name.stalls, dimensions: dimensions, factory: factory)
        measurements = LoopMeasurements(
            halfFull: { [weak registry] in registry?.requestDrain() },
            // The updater was asked at half and has not come yet: this delay is recorded on the loop's thread.
            overflow: { delay, timer in Self.record(delay, timer: timer, wakeUpDelay, timerLateness) })
        lastIterations = 0
        lastUpdate = Loop.Instant.now.nanoseconds
    }

    /// A RunLoopCore loop measures into this meter from its next iteration (a loop that is asleep now, when it wakes).
    func start() { loop?.measure(into: measurements) }

    /// Whether the loop still exists (a loop deallocated while attached ends its series at the next update).
    var isAlive: Bool { adaptedGroup != nil || loop != nil }

    /// An adapted loop's thread: one tick ran from `start` to `end`, after `slept` ns of NIO's sleep time. The
    /// iteration is rlctl's summary's (NIOIteration): the traced I/O since the previous tick moves from NIO's sleep
    /// to busy, and an iteration whose I/O and tasks together ran past `Loop.stallThreshold` is a stall, so a slow
    /// `channelRead` counts as one, as it does in `rlctl`'s summary.
    @inline(__always)
    func tick(start: UInt64, end: UInt64, slept: UInt64) {
        ticks.store(ticks.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
        let io = min(ioSinceTick.load(ordering: .relaxed), slept)
        ioSinceTick.store(0, ordering: .relaxed)
        measurements.addSleep(slept - io)
        let busy = io &+ (end > start ? end - start : 0)
        let limit = Loop.stallThresholdNanoseconds
        if limit != 0 && busy > limit { measurements.countStall() }
    }

    /// An adapted loop's thread: a traced channel's I/O event took `nanoseconds`.
    @inline(__always)
    func addIO(_ nanoseconds: UInt64) {
        ioSinceTick.store(ioSinceTick.load(ordering: .relaxed) &+ nanoseconds, ordering: .relaxed)
    }

    private static func record(_ delay: UInt64, timer: Bool, _ wakeUpDelay: CoreMetrics.Timer,
                               _ timerLateness: CoreMetrics.Timer) {
        let nanoseconds = Int64(clamping: delay)
        wakeUpDelay.recordNanoseconds(nanoseconds)
        if timer { timerLateness.recordNanoseconds(nanoseconds) }
    }

    /// Updater (the registry's lock held, so one at a time): the delays the loop's thread kept, into the backend.
    func drainDelays() {
        measurements.drainDelays { delay, timer in Self.record(delay, timer: timer, wakeUpDelay, timerLateness) }
    }

    /// Updater: the iterations, time, utilization and stalls since the last update. A RunLoopCore loop's iterations
    /// are those it published at its last sleep (``Loop/statistics``), so a busy interval's iterations may show in
    /// the next.
    func update() {
        drainDelays()
        let stallTotal = measurements.stalls
        if stallTotal > lastStalls { stalls.increment(by: Int64(clamping: stallTotal - lastStalls)) }
        lastStalls = stallTotal
        let count: UInt64
        if adaptedGroup != nil {
            count = ticks.load(ordering: .relaxed)
        } else if let loop {
            count = loop.statistics.iterations
        } else {
            return
        }
        let now = Loop.Instant.now.nanoseconds
        // A RunLoopCore loop's sleep counts as idle while it lasts; an adapted loop's is reported when it ended, so
        // one that began in an earlier interval counts whole in this one, capped at the interval's length.
        let idleTotal = max(measurements.idle(at: now), lastIdle)
        let elapsed = now &- lastUpdate
        let idle = min(idleTotal &- lastIdle, elapsed)
        if count > lastIterations { iterations.increment(by: Int64(clamping: count - lastIterations)) }
        if elapsed > 0 {
            idleTime.increment(by: Double(idle) / 1e9)
            activeTime.increment(by: Double(elapsed - idle) / 1e9)
            utilization.set(Double(elapsed - idle) / Double(elapsed))
        }
        lastIterations = count
        lastIdle = idleTotal
        lastUpdate = now
    }

    /// Stops the loop measuring into this meter (a meter replaced by another attach leaves the loop measuring into
    /// its successor).
    func stop() {
        guard let loop else { return }
        loop.stopMeasuring(into: measurements)
    }

    /// Ends the loop's series in the backend, after recording what the loop measured since the last update (the
    /// meter is out of the registry, so nothing else reads it).
    func destroy() {
        update()
        iterations.destroy()
        stalls.destroy()
        activeTime.destroy()
        idleTime.destroy()
        utilization.destroy()
        wakeUpDelay.destroy()
        timerLateness.destroy()
    }
}

import CoreMetrics
import RunLoopCore
import Synchronization

/// One attached loop's instruments (docs/metrics.md), and what its thread adds up between two updates.
///
/// The loop's thread counts stalls straight into their instrument, keeps its wake-up delays in a ring and adds its
/// sleeps into ``slept``; the updater records the delays and turns the sleeps and the loop's own counters into
/// time, utilization and iterations once per interval, so neither a callout nor a sleep costs the loop's thread a
/// call into the backend.
final class LoopMeter: @unchecked Sendable {
    let loopID: UInt64
    /// A RunLoopCore loop's meter reads its iterations from the loop; an adapted loop's (a SwiftNIO event loop
    /// traced by RunLoopNIO) counts its ticks as they are reported, and lives until its group is detached.
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

    /// Nanoseconds asleep in the loop's waits since it was attached: written by the loop's thread only.
    private let slept = Atomic<UInt64>(0)
    /// Wake-up delays measured on the loop's thread, recorded into ``wakeUpDelay`` and ``timerLateness`` by the
    /// updater (``drainDelays()``), so that the loop's thread does not pay the backend's record per callout.
    private let delays = DelayRing()

    // The updater's own, guarded by the registry's lock.
    private var lastIterations: UInt64
    private var lastSlept: UInt64 = 0
    private var lastUpdate: UInt64

    convenience init(loop: Loop, factory: any MetricsFactory) {
        self.init(loopID: loop.id, name: loop.name, threadID: loop.threadID, adaptedGroup: nil, factory: factory)
        self.loop = loop
        lastIterations = loop.statistics.iterations
    }

    init(loopID: UInt64, name: String, threadID: Int32, adaptedGroup: UInt64?, factory: any MetricsFactory) {
        self.loopID = loopID
        self.adaptedGroup = adaptedGroup
        let dimensions = [("runloop.name", name), ("runloop.thread", String(threadID))]
        iterations = Counter(label: LoopMetrics.Name.iterations, dimensions: dimensions, factory: factory)
        activeTime = FloatingPointCounter(label: LoopMetrics.Name.time, dimensions: dimensions + [("runloop.state", "active")], factory: factory)
        idleTime = FloatingPointCounter(label: LoopMetrics.Name.time, dimensions: dimensions + [("runloop.state", "idle")], factory: factory)
        utilization = Meter(label: LoopMetrics.Name.utilization, dimensions: dimensions, factory: factory)
        wakeUpDelay = CoreMetrics.Timer(label: LoopMetrics.Name.wakeUpDelay, dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory)
        timerLateness = CoreMetrics.Timer(label: LoopMetrics.Name.timerLateness, dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory)
        stalls = Counter(label: LoopMetrics.Name.stalls, dimensions: dimensions, factory: factory)
        lastIterations = 0
        lastUpdate = Loop.Instant.now.nanoseconds
    }

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
        addSleep(slept - io)
        let busy = io &+ (end > start ? end - start : 0)
        let limit = Loop.stallThresholdNanoseconds
        if limit != 0 && busy > limit { stalls.increment() }
    }

    /// An adapted loop's thread: a traced channel's I/O event took `nanoseconds`.
    @inline(__always)
    func addIO(_ nanoseconds: UInt64) {
        ioSinceTick.store(ioSinceTick.load(ordering: .relaxed) &+ nanoseconds, ordering: .relaxed)
    }

    /// Loop thread: the wait just ended after `nanoseconds` asleep.
    @inline(__always)
    func addSleep(_ nanoseconds: UInt64) {
        slept.store(slept.load(ordering: .relaxed) &+ nanoseconds, ordering: .relaxed)
    }

    /// Loop thread: a callout began `delay` ns after what it serves was due or signalled. Kept for the updater;
    /// recorded here only when the updater has fallen a whole ring behind. True when the updater should come now
    /// (half the ring is waiting).
    @inline(__always)
    func wokeLate(_ delay: UInt64, timer: Bool) -> Bool {
        let value = min(delay, DelayRing.timerFlag - 1) | (timer ? DelayRing.timerFlag : 0)
        switch delays.push(value) {
        case .stored: return false
        case .storedHalfFull: return true
        case .full:   // the updater was asked at half and has not come yet
            record(value)
            return false
        }
    }

    private func record(_ value: UInt64) {
        let delay = Int64(value & (DelayRing.timerFlag - 1))
        wakeUpDelay.recordNanoseconds(delay)
        if value & DelayRing.timerFlag != 0 { timerLateness.recordNanoseconds(delay) }
    }

    /// Updater (the registry's lock held, so one at a time): the delays the loop's thread kept, into the backend.
    func drainDelays() {
        delays.drain(record)
    }

    /// Updater: the iterations, time and utilization since the last update. The loop's counters are those it
    /// published at its last sleep (``Loop/statistics``), so a busy interval's iterations may show in the next.
    func update() {
        drainDelays()
        let count: UInt64
        if adaptedGroup != nil {
            count = ticks.load(ordering: .relaxed)
        } else if let loop {
            count = loop.statistics.iterations
        } else {
            return
        }
        let now = Loop.Instant.now.nanoseconds
        let sleptTotal = slept.load(ordering: .relaxed)
        let elapsed = now &- lastUpdate
        // A sleep is added when it ends: one that began in an earlier interval counts whole in this one, and is
        // capped at the interval's length.
        let idle = min(sleptTotal &- lastSlept, elapsed)
        if count > lastIterations { iterations.increment(by: Int64(clamping: count - lastIterations)) }
        if elapsed > 0 {
            idleTime.increment(by: Double(idle) / 1e9)
            activeTime.increment(by: Double(elapsed - idle) / 1e9)
            utilization.set(Double(elapsed - idle) / Double(elapsed))
        }
        lastIterations = count
        lastSlept = sleptTotal
        lastUpdate = now
    }

    /// Ends the loop's series in the backend (after recording the delays still kept: the meter is out of the
    /// registry, so nothing else drains it).
    func destroy() {
        drainDelays()
        iterations.destroy()
        stalls.destroy()
        activeTime.destroy()
        idleTime.destroy()
        utilization.destroy()
        wakeUpDelay.destroy()
        timerLateness.destroy()
    }
}

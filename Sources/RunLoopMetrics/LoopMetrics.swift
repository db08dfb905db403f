import CoreMetrics
import RunLoopCore

/// A loop's metrics through swift-metrics, in one call: `LoopMetrics.attach(to: loop)`.
///
/// The instruments (named in OpenTelemetry's runtime style under `runloop.`, with the dimensions `runloop.name` and
/// `runloop.thread` only; docs/metrics.md has the table) go to the factory the application bootstrapped
/// (`MetricsSystem.bootstrap`: swift-prometheus, swift-otel, …); this library bootstraps none. The figures come
/// from the loop's own counters and what it measures of itself while attached (RunLoopCore's LoopMeasurements),
/// not from the event seam: a tracer keeps the seam to itself. The loop pays two clock reads per sleep, per
/// callout a clock read where neither a tracer nor the timer's due check lends one, and a store: the backend
/// records the wake-up delays on the library's updater thread, so they reach it at the next update
/// (``LoopMetricsHandle/update()`` makes them current).
///
/// A loop's events reach the metrics from its next iteration on (a loop that is asleep when attached adopts them
/// when it wakes).
public enum LoopMetrics {
    /// The instruments' names.
    public enum Name {
        /// Counter: iterations run.
        public static let iterations = "runloop.iterations"
        /// Floating-point counter in seconds, dimension `runloop.state` = `active` (not asleep in the wait) or `idle`.
        public static let time = "runloop.time"
        /// Meter (a gauge), unit 1: the active share of the last update interval.
        public static let utilization = "runloop.utilization"
        /// Timer: from due (a timer's fire date) or signalled (a source's signal, a block's or job's enqueue) to
        /// the callout's start.
        public static let wakeUpDelay = "runloop.wakeup.delay"
        /// Timer: a timer callout's start after its fire date.
        public static let timerLateness = "runloop.timer.lateness"
        /// Counter: iterations busy past `Loop.stallThreshold` (none while it is nil).
        public static let stalls = "runloop.stalls"
    }

    /// Histogram buckets for the delays (`runloop.wakeup.delay`, `runloop.timer.lateness`), 10 µs to 500 ms, for a
    /// backend that asks for them: backends' defaults are made for requests (swift-prometheus's start at 5 ms), and
    /// a loop's delays are microseconds. With swift-prometheus: `factory.durationHistogramBuckets[name] = …`.
    public static let delayBuckets: [Duration] = [
        .microseconds(10), .microseconds(50), .microseconds(100), .microseconds(500), .milliseconds(1),
        .milliseconds(5), .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(500),
    ]

    /// How often the attached loops' time, utilization and iterations are updated (timers and stalls are recorded
    /// as they happen). Default 1 s; set it before attaching.
    nonisolated(unsafe) public static var updateInterval: Duration = .seconds(1)

    /// Starts recording `loop`'s metrics into `factory` (the bootstrapped one by default), until
    /// ``LoopMetricsHandle/detach()`` or the loop is deallocated (its series end at the next update). Attaching a
    /// loop again replaces its instruments. With no backend (swift-metrics' no-op factory, what
    /// `MetricsSystem.factory` is before a bootstrap) it does nothing: the loop's path stays as it was.
    @discardableResult
    public static func attach(to loop: Loop, factory: any MetricsFactory = MetricsSystem.factory) -> LoopMetricsHandle {
        if factory is NOOPMetricsHandler { return LoopMetricsHandle(.nothing) }
        return LoopMetricsHandle(.loop(MeterRegistry.shared.attach(loop, factory: factory, interval: updateInterval)))
    }
}

extension LoopMetrics {
    /// Starts recording the metrics of every loop an adapter announces with `groupID`: the event loops of a
    /// SwiftNIO group traced by RunLoopNIO (its `NIOLoopTracing.makeEventLoopGroup(numberOfThreads:metrics:)`
    /// calls this). A tick counts as an iteration, NIO's sleep time between ticks as idle less the I/O of traced
    /// channels handled before the tick (RunLoopNIO's ChannelHandler), its lateness probe's runs as wake-up
    /// delays, and stalls are the iterations whose I/O and tasks together ran past `Loop.stallThreshold`, as
    /// rlctl's summary counts them. Call it before the group's loops first tick.
    @discardableResult
    public static func attach(adaptedGroup groupID: UInt64, factory: any MetricsFactory = MetricsSystem.factory) -> LoopMetricsHandle {
        if factory is NOOPMetricsHandler { return LoopMetricsHandle(.nothing) }
        MeterRegistry.shared.attach(adaptedGroup: groupID, factory: factory, interval: updateInterval)
        return LoopMetricsHandle(.group(groupID))
    }
}

/// One attached loop, or one adapted group's loops.
public final class LoopMetricsHandle: Sendable {
    enum Attached {
        case loop(LoopMeter)
        case group(UInt64)
        /// Attached to swift-metrics' no-op factory (no backend bootstrapped): nothing is installed, the loop's path
        /// is unchanged.
        case nothing
    }

    private let attached: Attached

    init(_ attached: Attached) {
        self.attached = attached
    }

    /// Updates the time, utilization and iterations now instead of at the next interval (before a scrape that
    /// must see the latest figures, or in tests).
    public func update() {
        switch attached {
        case .loop(let meter): MeterRegistry.shared.update(meter)
        case .group(let groupID): MeterRegistry.shared.update(adaptedGroup: groupID)
        case .nothing: break
        }
    }

    /// Stops recording and ends the series in the backend. Safe from any thread, more than once.
    public func detach() {
        switch attached {
        case .loop(let meter): MeterRegistry.shared.detach(meter)
        case .group(let groupID): MeterRegistry.shared.detach(adaptedGroup: groupID)
        case .nothing: break
        }
    }
}

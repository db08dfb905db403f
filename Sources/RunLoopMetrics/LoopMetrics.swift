import CoreMetrics
import RunLoopCore

/// A loop's metrics through swift-metrics, in one call: `LoopMetrics.attach(to: loop)`.
///
/// The instruments (named in OpenTelemetry's runtime style under `runloop.`, with the dimensions `runloop.name` and
/// `runloop.thread` only; docs/metrics.md has the table) go to the factory the application bootstrapped
/// (`MetricsSystem.bootstrap`: swift-prometheus, swift-otel, …); this library bootstraps none. The figures come
/// from the event seam and the loop's own counters: a tracer installed before or after keeps receiving every
/// event, and the loop pays nothing more than an installed sink costs it (two clock reads per sleep), plus one
/// clock read per callout where the tracer below cannot lend its timestamp.
///
/// A loop's events reach the metrics from its next run on (a run keeps the sink it started with): attach before
/// the loop runs, or expect the first figures after its current run returns.
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

    /// How often the attached loops' time, utilization and iterations are updated (timers and stalls are recorded
    /// as they happen). Default 1 s; set it before attaching.
    nonisolated(unsafe) public static var updateInterval: Duration = .seconds(1)

    /// Starts recording `loop`'s metrics into `factory` (the bootstrapped one by default), until
    /// ``LoopMetricsHandle/detach()`` or the loop is deallocated (its series end at the next update). Attaching a
    /// loop again replaces its instruments.
    @discardableResult
    public static func attach(to loop: Loop, factory: any MetricsFactory = MetricsSystem.factory) -> LoopMetricsHandle {
        precondition(updateInterval > .zero, "LoopMetrics.updateInterval must be longer than zero (got \(updateInterval))")
        return LoopMetricsHandle(meter: MeterRegistry.shared.attach(loop, factory: factory, interval: updateInterval))
    }
}

/// One attached loop.
public final class LoopMetricsHandle: Sendable {
    private let meter: LoopMeter

    init(meter: LoopMeter) {
        self.meter = meter
    }

    /// Updates the loop's time, utilization and iterations now instead of at the next interval (before a scrape
    /// that must see the latest figures, or in tests).
    public func update() {
        MeterRegistry.shared.update(meter)
    }

    /// Stops recording the loop and ends its series in the backend. Safe from any thread, more than once.
    public func detach() {
        MeterRegistry.shared.detach(meter)
    }
}

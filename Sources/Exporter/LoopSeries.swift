import Analysis
import Foundation
import Glibc
import Prometheus

/// `rlctl top --serve`: every loop the live view shows, as Prometheus series, rendered by swift-prometheus.
/// ``update(with:)`` takes each interval's rows and adds what the interval counted to the loop's counters (and
/// sets its gauges); a scrape renders the registry as it is (``exposition()``), at any time, from any thread.
///
/// The names are RunLoopMetrics' (docs/metrics.md), so one dashboard serves both a program that exports its own
/// loops and the loops rlctl sees; the kernel view adds two counters no runtime exports. One series per loop
/// and metric, labelled by host, process, program, thread, loop and kind: bounded by the loops, never by events.
/// A loop's series end ``goneAfter`` after its process is gone (this machine's loops: long enough for a scrape or
/// two to read its last figures), when it has not been seen for ``expireAfter``, and there are at most
/// ``loopLimit`` loops' series (the others are counted, not exported).
public final class LoopSeries: @unchecked Sendable {
    public let registry = PrometheusCollectorRegistry()
    public let loopLimit: Int
    public let expireAfter: Duration
    public let goneAfter: Duration

    /// The metric names, as a scrape shows them.
    public enum Name {
        public static let iterations = "runloop_iterations"
        public static let time = "runloop_time"
        public static let utilization = "runloop_utilization"
        public static let stalls = "runloop_stalls"
        public static let wakeUpDelayP99 = "runloop_wakeup_delay_p99"
        public static let runQueueTime = "runloop_runqueue_time"
        public static let throttledTime = "runloop_throttled_time"
        public static let lateTime = "runloop_late_time"
        public static let eventsLost = "rlctl_events_lost"
        public static let kernelRecordsLost = "rlctl_kernel_records_lost"
        public static let loops = "rlctl_loops"
        public static let loopsNotExported = "rlctl_loops_not_exported"
        public static let sessions = "rlctl_sessions"
        public static let kernelView = "rlctl_kernel_view"
    }

    private struct LoopKey: Hashable {
        var host: String
        var processID: Int32
        var threadID: Int32
        var loopID: UInt64
        var kind: String
    }

    /// One loop's series.
    private final class Loop {
        let local: Bool
        let processID: Int32
        var lastSeen: ContinuousClock.Instant
        /// When its process was first found gone.
        var goneSince: ContinuousClock.Instant?
        let iterations: Counter
        let active: Counter
        let idle: Counter
        let utilization: Gauge
        let stalls: Counter
        var wakeUpDelay: Gauge?
        var runQueue: Counter?
        var throttled: Counter?
        /// Late wake-ups' time, one counter per cause (made together, on the loop's first kernel-view figure).
        var lateTime: [(cause: String, counter: Counter)] = []
        let labels: [(String, String)]

        init(registry: PrometheusCollectorRegistry, labels: [(String, String)], local: Bool, processID: Int32, now: ContinuousClock.Instant) {
            self.labels = labels
            self.local = local
            self.processID = processID
            lastSeen = now
            iterations = registry.makeCounter(descriptor: LoopSeries.describe(Name.iterations, "Iterations the loop ran (NIO: ticks; a wait loop: waits)."), labels: labels)
            let time = LoopSeries.describe(Name.time, "Seconds the loop was active (not asleep in its wait) and idle (asleep), by runloop_state.")
            active = registry.makeCounter(descriptor: time, labels: labels + [("runloop_state", "active")])
            idle = registry.makeCounter(descriptor: time, labels: labels + [("runloop_state", "idle")])
            utilization = registry.makeGauge(descriptor: LoopSeries.describe(Name.utilization, "Active / (active + idle) over rlctl's last interval."), labels: labels)
            stalls = registry.makeCounter(descriptor: LoopSeries.describe(Name.stalls, "Iterations busier than rlctl's --stall threshold."), labels: labels)
        }

        func unregister(from registry: PrometheusCollectorRegistry) {
            registry.unregisterCounter(iterations)
            registry.unregisterCounter(active)
            registry.unregisterCounter(idle)
            registry.unregisterGauge(utilization)
            registry.unregisterCounter(stalls)
            wakeUpDelay.map(registry.unregisterGauge)
            runQueue.map(registry.unregisterCounter)
            throttled.map(registry.unregisterCounter)
            lateTime.forEach { registry.unregisterCounter($0.counter) }
        }
    }

    private let lock = NSLock()
    private var loops: [LoopKey: Loop] = [:]
    private var sessionsLost: [String: (counter: Counter, lastSeen: ContinuousClock.Instant)] = [:]
    private let kernelLost: Counter
    private let loopCount: Gauge
    private let notExported: Gauge
    private let sessions: Gauge
    private let kernelView: Gauge

    public init(loopLimit: Int = 1000, expireAfter: Duration = .seconds(300), goneAfter: Duration = .seconds(15)) {
        self.loopLimit = loopLimit
        self.expireAfter = expireAfter
        self.goneAfter = goneAfter
        kernelLost = registry.makeCounter(descriptor: Self.describe(Name.kernelRecordsLost, "Records the kernel recorder lost: the run-queue and throttled time of their windows undercounts."), labels: [])
        loopCount = registry.makeGauge(descriptor: Self.describe(Name.loops, "Loops exported now."), labels: [])
        notExported = registry.makeGauge(descriptor: Self.describe(Name.loopsNotExported, "Loops seen in the last interval and not exported: past the limit of loops (--serve-loops)."), labels: [])
        sessions = registry.makeGauge(descriptor: Self.describe(Name.sessions, "Recordings and live sessions rlctl follows."), labels: [])
        kernelView = registry.makeGauge(descriptor: Self.describe(Name.kernelView, "1 when the run-queue and throttled counters are measured (the kernel view is on), else 0."), labels: [])
    }

    static func describe(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// Adds one interval of the live view to the series. `now` decides what expired (a parameter for tests).
    public func update(with interval: LiveInterval, now: ContinuousClock.Instant = .now) {
        lock.lock()
        defer { lock.unlock() }
        var sessionLoss: [String: UInt64] = [:]
        var left = 0
        for row in interval.rows {
            let sessionKey = row.host + " " + row.session
            // Losses are per session: every row of one session carries the same figure.
            sessionLoss[sessionKey] = max(sessionLoss[sessionKey] ?? 0, row.lostEvents)
            let key = LoopKey(host: row.host, processID: row.processID, threadID: row.threadID, loopID: row.loopID, kind: row.kind)
            guard let loop = loops[key] ?? makeLoop(key, row, now: now) else {
                left += 1
                continue
            }
            loop.lastSeen = now
            loop.iterations.increment(by: Int64(clamping: row.iterations))
            loop.active.increment(by: Double(row.busyNanoseconds) / 1e9)
            loop.idle.increment(by: Double(row.coveredNanoseconds &- min(row.busyNanoseconds, row.coveredNanoseconds)) / 1e9)
            loop.utilization.set(to: row.utilization)
            loop.stalls.increment(by: Int64(clamping: row.stalls))
            if let p99 = row.wakeLatencyP99Nanoseconds {
                let gauge = loop.wakeUpDelay ?? registry.makeGauge(
                    descriptor: Self.describe(Name.wakeUpDelayP99, "Seconds: the worst p99 of the loop's wake-up delays over rlctl's last interval (RunLoopCore: due or signalled to callout; a wait loop: its waits past their timeouts)."),
                    labels: loop.labels)
                loop.wakeUpDelay = gauge
                gauge.set(to: Double(p99) / 1e9)
            } else {
                // No wake-up measured in the interval: no figure, not a zero.
                loop.wakeUpDelay?.set(to: .nan)
            }
            if let runQueue = row.runQueueNanoseconds {
                loop.runQueue = addSeconds(runQueue, to: loop.runQueue, loop: loop, Name.runQueueTime,
                                           "Seconds the loop's thread was runnable but not running (waiting for a CPU, or throttled), from the kernel view.")
            }
            if let throttled = row.throttledNanoseconds {
                loop.throttled = addSeconds(throttled, to: loop.throttled, loop: loop, Name.throttledTime,
                                            "Seconds of the run-queue time the thread's cgroup was out of CPU quota (throttled), from the kernel view.")
            }
            if let late = row.lateTime {
                let causes = late.byLabel
                if loop.lateTime.isEmpty {
                    let descriptor = Self.describe(Name.lateTime, "Seconds late wake-ups were late, by cause: slack (armed late, timer slack), wake_path (interrupt delivery, wake-up, return to user space), run_queue (waiting for a CPU), throttled (cgroup out of CPU quota), blocked and loop_work (the loop's own work before the callout, blocked and on the CPU); from the kernel view, late wake-ups it explained only.")
                    loop.lateTime = causes.map { ($0.cause, registry.makeCounter(descriptor: descriptor, labels: loop.labels + [("cause", $0.cause)])) }
                }
                for (index, cause) in causes.enumerated() where index < loop.lateTime.count {
                    loop.lateTime[index].counter.increment(by: Double(cause.nanoseconds) / 1e9)
                }
            }
        }
        for (session, lost) in sessionLoss {
            let counter = sessionsLost[session]?.counter ?? registry.makeCounter(
                descriptor: Self.describe(Name.eventsLost, "Events the tracer lost in a recording or live session: its loops' figures of those windows undercount."),
                labels: [("session", session)])
            sessionsLost[session] = (counter, now)
            counter.increment(by: Int64(clamping: lost))
        }
        kernelLost.increment(by: Int64(clamping: interval.kernelLostRecords))
        expire(now: now)
        loopCount.set(to: Double(loops.count))
        notExported.set(to: Double(left))
        sessions.set(to: Double(interval.sessions))
        kernelView.set(to: interval.kernel == .on ? 1 : 0)
    }

    /// Adds `nanoseconds` to a kernel-view counter of `loop`, made on its first figure (a loop seen without the
    /// kernel view has none, rather than a zero).
    private func addSeconds(_ nanoseconds: UInt64, to existing: Counter?, loop: Loop, _ name: String, _ help: String) -> Counter {
        let counter = existing ?? registry.makeCounter(descriptor: Self.describe(name, help), labels: loop.labels)
        counter.increment(by: Double(nanoseconds) / 1e9)
        return counter
    }

    private func makeLoop(_ key: LoopKey, _ row: LiveLoopRow, now: ContinuousClock.Instant) -> Loop? {
        guard loops.count < loopLimit else { return nil }
        let labels = [("host", row.host), ("pid", String(row.processID)), ("program", row.program ?? ""),
                      ("runloop_thread", String(row.threadID)), ("runloop_id", String(row.loopID)),
                      ("runloop_name", row.name ?? ""), ("runloop_kind", row.kind)]
        let loop = Loop(registry: registry, labels: labels, local: row.program != nil, processID: row.processID, now: now)
        loops[key] = loop
        return loop
    }

    /// Ends the series of loops whose process is gone (this machine's) since `goneAfter` or that were not seen
    /// for `expireAfter`, and the loss counters of sessions not seen for as long.
    private func expire(now: ContinuousClock.Instant) {
        for (key, loop) in loops {
            if loop.goneSince == nil, loop.local, loop.processID > 0, kill(loop.processID, 0) != 0, errno == ESRCH {
                loop.goneSince = now
            }
            let gone = loop.goneSince.map { now - $0 >= goneAfter } ?? false
            guard gone || now - loop.lastSeen >= expireAfter else { continue }
            loop.unregister(from: registry)
            loops[key] = nil
        }
        for (session, entry) in sessionsLost where now - entry.lastSeen >= expireAfter {
            registry.unregisterCounter(entry.counter)
            sessionsLost[session] = nil
        }
    }

    /// The registry in Prometheus's text exposition format.
    public func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(64 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }
}

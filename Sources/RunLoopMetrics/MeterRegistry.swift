import CoreMetrics
import Glibc
import RunLoopCore
import Synchronization

/// The attached loops' meters, the sink that feeds them, and the thread that updates them every interval.
///
/// The sink finds a loop's meter through a cache of the calling thread's (a loop's events come on its own
/// thread): one thread-local load and two compares per event, a lock only after an attach or a detach.
final class MeterRegistry: @unchecked Sendable {
    static let shared = MeterRegistry()

    private let lock = PThreadLock()
    // Guarded by lock.
    private var meters: [UInt64: LoopMeter] = [:]
    private var installed: MetricsSink?
    private var updaterRunning = false
    private var interval: Duration = .seconds(1)
    /// Bumped by every attach and detach: a thread's cached lookup made before is made again.
    private let generation = Atomic<UInt64>(1)

    // ===== the sink's side =====

    @inline(__always)
    func meter(for loopID: UInt64) -> LoopMeter? {
        let cache = ThreadMeterCache.current
        let now = generation.load(ordering: .acquiring)
        if cache.generation != now || cache.loopID != loopID {
            cache.meter = lock.withLock { meters[loopID] }
            cache.loopID = loopID
            cache.generation = now
        }
        return cache.meter
    }

    // ===== attach and detach =====

    func attach(_ loop: Loop, factory: any MetricsFactory, interval: Duration) -> LoopMeter {
        let meter = LoopMeter(loop: loop, factory: factory)
        let old: LoopMeter? = lock.withLock {
            let old = meters.updateValue(meter, forKey: loop.id)
            self.interval = interval
            installSinkIfReplaced()
            if !updaterRunning {
                updaterRunning = true
                startUpdater()
            }
            return old
        }
        generation.add(1, ordering: .releasing)
        old?.destroy()
        return meter
    }

    func detach(_ meter: LoopMeter) {
        let removed: Bool = lock.withLock {
            guard meters[meter.loopID] === meter else { return false }
            meters[meter.loopID] = nil
            if meters.isEmpty, let sink = installed, LoopEventSink.current === sink {
                // Nothing attached: the seam goes back to what it was (runs already started keep this sink).
                LoopEventSink.install(sink.next)
                installed = nil
            }
            lock.signal()
            return true
        }
        generation.add(1, ordering: .releasing)
        if removed { meter.destroy() }
    }

    /// Installs a metrics sink over the current one when there is none of ours on top (first attach, or a tracer
    /// installed since, which would otherwise have replaced it for every run started from then on). Lock held.
    private func installSinkIfReplaced() {
        let current = LoopEventSink.current
        guard installed == nil || current !== installed else { return }
        let sink = MetricsSink(next: current, registry: self)
        LoopEventSink.install(sink)
        installed = sink
    }

    // ===== updates =====

    func update(_ meter: LoopMeter) {
        lock.withLock { meter.update() }
    }

    /// One pass of the updater: every meter's figures, the meters of deallocated loops removed (their series
    /// end), and the sink put back on top if a tracer was installed over it. False once nothing is attached.
    private func updateAll() -> Bool {
        let (gone, more): ([LoopMeter], Bool) = lock.withLock {
            var gone: [LoopMeter] = []
            for (id, meter) in meters {
                if meter.isAlive {
                    meter.update()
                } else {
                    meters[id] = nil
                    gone.append(meter)
                }
            }
            if meters.isEmpty {
                updaterRunning = false
                if let sink = installed, LoopEventSink.current === sink { LoopEventSink.install(sink.next) }
                installed = nil
            } else {
                installSinkIfReplaced()
            }
            return (gone, !meters.isEmpty)
        }
        if !gone.isEmpty { generation.add(1, ordering: .releasing) }
        for meter in gone { meter.destroy() }
        return more
    }

    private func startUpdater() {
        let start = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            let registry = Unmanaged<MeterRegistry>.fromOpaque(argument!).takeRetainedValue()
            // Named, so that `top -H` shows whose thread it is (Glibc's module has no pthread_setname_np).
            let comm = open("/proc/thread-self/comm", O_WRONLY)
            if comm >= 0 {
                _ = "runloop-metrics".withCString { write(comm, $0, strlen($0)) }
                close(comm)
            }
            registry.runUpdater()
            return nil
        }, start)
        precondition(rc == 0, "RunLoopMetrics: could not start its update thread (pthread_create: \(rc))")
        pthread_detach(thread)
    }

    private func runUpdater() {
        while true {
            let interval = lock.withLock { self.interval }
            lock.withLock { lock.wait(for: interval) }
            if !updateAll() { return }
        }
    }
}

/// The calling thread's last meter lookup.
final class ThreadMeterCache {
    var generation: UInt64 = 0
    var loopID: UInt64 = 0
    var meter: LoopMeter?

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let rc = pthread_key_create(&key) { value in
            if let value { Unmanaged<ThreadMeterCache>.fromOpaque(value).release() }
        }
        precondition(rc == 0, "RunLoopMetrics: pthread_key_create failed (\(rc))")
        return key
    }()

    @inline(__always)
    static var current: ThreadMeterCache {
        if let value = pthread_getspecific(key) { return Unmanaged<ThreadMeterCache>.fromOpaque(value).takeUnretainedValue() }
        let cache = ThreadMeterCache()
        pthread_setspecific(key, Unmanaged.passRetained(cache).toOpaque())
        return cache
    }
}

import CoreMetrics
import Glibc
import RunLoopCore
import Synchronization

/// The attached loops' meters, the sink that feeds adapted loops' meters, and the thread that updates them every
/// interval.
///
/// A RunLoopCore loop measures itself into its meter; the sink, installed only while an adapted group is attached,
/// finds an adapted loop's meter through a cache of the calling thread's (a loop's events come on its own thread):
/// one thread-local load and two compares per event, a lock only after an attach or a detach.
final class MeterRegistry: @unchecked Sendable {
    static let shared = MeterRegistry()

    /// RunLoopCore's pthread lock, which ThreadSanitizer sees (Synchronization's `Mutex` it does not).
    private let lock = ConditionLock()
    // Guarded by lock.
    private var meters: [UInt64: LoopMeter] = [:]
    private var installed: MetricsSink?
    private var updaterRunning = false
    /// A loop's delay ring is half full: the updater records the waiting delays before its next update. Set by
    /// the loop's thread without the lock, which the updater may hold while it records.
    private let drainRequested = Atomic<Bool>(false)
    private var interval: Duration = .seconds(1)
    /// Bumped by every attach and detach: a thread's cached lookup made before is made again.
    private let generation = Atomic<UInt64>(1)
    /// Adapted groups attached (``LoopMetrics/attach(adaptedGroup:factory:)``), with their factories; guarded by
    /// lock. Their loops get meters as they are announced (`loopCreated`, then `loopAdapted` with the group).
    private var groups: [UInt64: any MetricsFactory] = [:]
    /// The names and threads of loops announced while a group is attached, until they are adapted (bounded: an
    /// announcement is followed by its `loopAdapted` at once, on the same thread). Guarded by lock.
    private var announced: [UInt64: (name: String, threadID: Int32)] = [:]
    /// Whether any group is attached: the sink's announcements cost nothing otherwise.
    let hasGroups = Atomic<Bool>(false)

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
        let meter = LoopMeter(loop: loop, factory: factory, registry: self)
        let old: LoopMeter? = lock.withLock {
            let old = meters.updateValue(meter, forKey: loop.id)
            startRecording(interval: interval)
            return old
        }
        generation.add(1, ordering: .releasing)
        // The loop measures into the new meter from its next iteration; the old one's series end.
        meter.start()
        old?.destroy()
        return meter
    }

    // ===== adapted groups =====

    func attach(adaptedGroup groupID: UInt64, factory: any MetricsFactory, interval: Duration) {
        lock.withLock {
            groups[groupID] = factory
            hasGroups.store(true, ordering: .releasing)
            installSinkIfReplaced()
            startRecording(interval: interval)
        }
    }

    /// After an attach: the updater running at `interval`. Lock held.
    private func startRecording(interval: Duration) {
        precondition(interval > .zero, "LoopMetrics.updateInterval must be longer than zero (got \(interval))")
        self.interval = interval
        guard !updaterRunning else { return }
        updaterRunning = true
        startUpdater()
    }

    /// A loop announced itself (any loop's thread).
    func loopAnnounced(_ loopID: UInt64, name: String, threadID: Int32) {
        lock.withLock {
            if announced.count >= 4_096 { announced.removeAll() }
            announced[loopID] = (name, threadID)
        }
    }

    /// A loop said which adapted group it belongs to: a meter for it when the group is attached.
    func loopAdapted(_ loopID: UInt64, groupID: UInt64) {
        let made: Bool = lock.withLock {
            guard let factory = groups[groupID], meters[loopID] == nil else { return false }
            let (name, threadID) = announced.removeValue(forKey: loopID) ?? ("", 0)
            meters[loopID] = LoopMeter(loopID: loopID, name: name, threadID: threadID, adaptedGroup: groupID, factory: factory,
                                       registry: self)
            return true
        }
        if made { generation.add(1, ordering: .releasing) }
    }

    func update(adaptedGroup groupID: UInt64) {
        lock.withLock {
            for meter in meters.values where meter.adaptedGroup == groupID { meter.update() }
        }
    }

    func detach(adaptedGroup groupID: UInt64) {
        let gone: [LoopMeter] = lock.withLock {
            groups[groupID] = nil
            hasGroups.store(!groups.isEmpty, ordering: .releasing)
            let gone = meters.values.filter { $0.adaptedGroup == groupID }
            for meter in gone { meters[meter.loopID] = nil }
            giveBackTheSeamIfIdle()
            lock.broadcast()
            return gone
        }
        generation.add(1, ordering: .releasing)
        for meter in gone { meter.destroy() }
    }

    /// With no adapted group attached, the seam goes back to what it was (runs already started keep the metrics'
    /// sink, which passes everything on). Lock held.
    private func giveBackTheSeamIfIdle() {
        guard groups.isEmpty else { return }
        if let sink = installed, LoopEventSink.current === sink { LoopEventSink.install(sink.next) }
        installed = nil
    }

    func detach(_ meter: LoopMeter) {
        let removed: Bool = lock.withLock {
            guard meters[meter.loopID] === meter else { return false }
            meters[meter.loopID] = nil
            giveBackTheSeamIfIdle()
            lock.broadcast()
            return true
        }
        generation.add(1, ordering: .releasing)
        guard removed else { return }
        meter.stop()
        meter.destroy()
    }

    /// Installs a metrics sink over the current one when there is none of ours on top (a group's attach, or a tracer
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
            if meters.isEmpty && groups.isEmpty {
                updaterRunning = false
            }
            if groups.isEmpty { giveBackTheSeamIfIdle() } else { installSinkIfReplaced() }
            return (gone, updaterRunning)
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

    /// A loop's thread: its meter's delay ring is half full. No lock: the updater may hold it for a while (it
    /// records into the backend under it). A request that comes just as the updater starts to wait is seen at its
    /// next wake-up; meanwhile a full ring is recorded by the loop's thread itself, so nothing is lost.
    func requestDrain() {
        drainRequested.store(true, ordering: .releasing)
        lock.broadcast()
    }

    /// Every interval an update; in between, the delays of a ring that filled up to half (the update's interval,
    /// which utilization is over, stays whole).
    private func runUpdater() {
        var next = Loop.Instant.now.advanced(by: interval).nanoseconds
        while true {
            let drained: Bool = lock.withLock {
                if !drainRequested.load(ordering: .acquiring) { _ = lock.wait(until: next) }
                let requested = drainRequested.exchange(false, ordering: .acquiringAndReleasing)
                let drainOnly = requested && Loop.Instant.now.nanoseconds < next
                if drainOnly { for meter in meters.values { meter.drainDelays() } }
                return drainOnly
            }
            if drained { continue }
            if !updateAll() { return }
            next = Loop.Instant.now.advanced(by: interval).nanoseconds
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

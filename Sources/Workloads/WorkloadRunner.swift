import Foundation
import Glibc
import RunLoopCore
import Synchronization

/// Runs a ``WorkloadSpec`` on the calling thread's loop, in the default mode, for its duration.
public final class WorkloadRunner: @unchecked Sendable {
    public let spec: WorkloadSpec
    private let cancelled = Atomic<Bool>(false)
    /// Guards `interrupter` (NSLock: ThreadSanitizer sees it).
    private let lock = NSLock()
    private var interrupter: LoopSource?

    /// Every `blocks` element's producers' backlog (read it while the run goes on, or after).
    public let blockBacklog: BlockBacklog

    /// `blocksInFlightPerProducer`: the most blocks one producer of a `blocks` element may have performed that the
    /// loop has not run yet. A flood (rate 0) outpaces any loop: without a limit its queue, and rlctl's memory, only
    /// grow.
    public init(spec: WorkloadSpec, blocksInFlightPerProducer: Int = 256) {
        precondition(blocksInFlightPerProducer > 0, "a producer needs room for one block")
        self.spec = spec
        blockBacklog = BlockBacklog(limitPerProducer: blocksInFlightPerProducer)
    }

    /// Ends the run early (from any thread, e.g. a SIGINT handler): producers stop and the loop returns. Before
    /// the run starts, it makes the run return at once.
    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        // Not Loop.stop(): a stop that comes while the loop is between two runs is ignored, and one that comes
        // during a nested run (the modes workload) ends only that one. A signalled source is performed by
        // whichever run comes next, and its handler stops every level (see run()).
        lock.lock()
        let source = interrupter
        lock.unlock()
        source?.signalAndWakeUp()
    }

    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// What a run did, counted by the workload itself (independent of any trace).
    public struct Outcome: Sendable {
        public var elapsed: Duration
        public var loopStatistics: Loop.Statistics
        public var produced: UInt64
        /// How far the loop fell behind the block producers; nil when the workload has none.
        public var blockBacklog: BlockBacklog.Figures?
    }

    /// Sets everything up, runs the loop until the duration has passed, then tears it all down.
    public func run() -> Outcome {
        let loop = Loop.current
        let interrupter = LoopSource(label: "rlctl-interrupt") { [unowned self] in
            loop.stop()
            // A nested run is ending: the run it returns to must stop too.
            if loop.runDepth > 1 { self.lock.lock(); _ = self.interrupter?.signal(); self.lock.unlock() }
        }
        loop.add(interrupter, forMode: .common)
        lock.lock()
        self.interrupter = interrupter
        lock.unlock()
        defer {
            lock.lock()
            self.interrupter = nil
            lock.unlock()
            interrupter.invalidate()
        }
        let deadline = Loop.Instant.now.advanced(by: spec.duration.duration)
        let produced = Counter()
        let stop: @Sendable () -> Bool = { [self] in self.isCancelled }
        var teardowns: [() -> Void] = []
        for (index, element) in spec.elements.enumerated() {
            teardowns.append(start(element, index: index, loop: loop, until: Deadline(at: deadline, cancelled: stop), produced: produced))
        }
        // A source that is never signalled keeps the default mode alive for the whole duration.
        let keepAlive = LoopSource(label: "workload-keepalive") {}
        loop.add(keepAlive, forMode: .default)
        let before = loop.statistics
        let start = Loop.Instant.now
        while Loop.Instant.now < deadline && !isCancelled {
            let remaining = Loop.Instant.now.duration(to: deadline)
            if loop.run(mode: .default, timeout: max(remaining, .zero)) == .finished { break }
        }
        let elapsed = start.duration(to: .now)
        for teardown in teardowns { teardown() }
        keepAlive.invalidate()
        // Let queued blocks and messages of the last moment drain, so producers never block on a full port.
        loop.run(mode: .default, timeout: .zero)
        var statistics = loop.statistics
        statistics.iterations -= before.iterations
        statistics.sleeps -= before.sleeps
        statistics.runs -= before.runs
        let hasBlocks = spec.elements.contains { if case .blocks = $0 { return true } else { return false } }
        return Outcome(elapsed: elapsed, loopStatistics: statistics, produced: produced.value,
                       blockBacklog: hasBlocks ? blockBacklog.figures : nil)
    }

    // ===== elements =====

    private func start(_ element: WorkloadSpec.Element, index: Int, loop: Loop, until deadline: Deadline,
                       produced: Counter) -> () -> Void {
        switch element {
        case .timers(let spec): return Self.startTimers(spec, index: index, loop: loop)
        case .jank(let spec): return Self.startJank(spec, index: index, loop: loop)
        case .modes(let spec): return Self.startModes(spec, index: index, loop: loop)
        case .sources(let spec): return Self.startSources(spec, index: index, loop: loop, until: deadline, produced: produced)
        case .blocks(let spec): return Self.startBlocks(spec, loop: loop, until: deadline, produced: produced, backlog: blockBacklog)
        case .ports(let spec): return Self.startPorts(spec, index: index, loop: loop, until: deadline, produced: produced)
        case .io(let spec): return Self.startIO(spec, index: index, loop: loop, until: deadline, produced: produced)
        }
    }

    private static func startTimers(_ spec: WorkloadSpec.Timers, index: Int, loop: Loop) -> () -> Void {
        let start = Loop.Instant.now.advanced(by: .milliseconds(2))
        let step = spec.interval.nanoseconds / Int64(spec.count)
        let cost = spec.handlerCost.duration
        let timers = (0..<spec.count).map { n in
            LoopTimer(fireAt: start.advanced(by: .nanoseconds(step * Int64(n))), interval: spec.interval.duration,
                      tolerance: spec.tolerance.duration, label: "timer-\(index + 1).\(n + 1)") { _ in burn(cost) }
        }
        for timer in timers { loop.add(timer, forMode: .default) }
        return { timers.forEach { $0.invalidate() } }
    }

    private static func startJank(_ spec: WorkloadSpec.Jank, index: Int, loop: Loop) -> () -> Void {
        let count = Counter()
        let every = UInt64(spec.every), cost = spec.cost.duration
        let timer = LoopTimer(after: spec.interval.duration, interval: spec.interval.duration, label: "jank-\(index + 1)") { _ in
            count.add()
            if count.value % every == 0 { burn(cost) }
        }
        loop.add(timer, forMode: .default)
        return { timer.invalidate() }
    }

    private static func startModes(_ spec: WorkloadSpec.Modes, index: Int, loop: Loop) -> () -> Void {
        let modal: Loop.Mode = "rlctl.modal"
        loop.addCommonMode(modal)
        let everywhere = LoopTimer(after: spec.interval.duration, interval: spec.interval.duration, label: "common-timer-\(index + 1)") { _ in }
        let defaultOnly = LoopTimer(after: spec.interval.duration, interval: spec.interval.duration, label: "default-timer-\(index + 1)") { _ in }
        let hold = spec.hold.duration
        let modalSource = LoopSource(label: "modal-keepalive-\(index + 1)") {}
        loop.add(modalSource, forMode: modal)
        let switcher = LoopTimer(after: spec.period.duration, interval: spec.period.duration, label: "mode-switch-\(index + 1)") { _ in
            // A modal session, as a menu tracking loop would run one: nested, in another mode.
            loop.run(mode: modal, timeout: hold)
        }
        loop.add(everywhere, forMode: .common)
        loop.add(defaultOnly, forMode: .default)
        loop.add(switcher, forMode: .default)
        return {
            everywhere.invalidate()
            defaultOnly.invalidate()
            switcher.invalidate()
            modalSource.invalidate()
        }
    }

    // A signalled source is a flag (signalling it again queues nothing), a port producer waits for each reply and an
    // io producer's write blocks on a full socket buffer: only block producers need a limit of their own.
    private static func startSources(_ spec: WorkloadSpec.Producers, index: Int, loop: Loop, until deadline: Deadline,
                                     produced: Counter) -> () -> Void {
        let cost = spec.handlerCost.duration
        let sources = (0..<spec.threads).map { n in LoopSource(label: "source-\(index + 1).\(n + 1)") { burn(cost) } }
        for source in sources { loop.add(source, forMode: .default) }
        let producers = sources.map { source in
            Producer(rate: spec.rate, until: deadline) {
                source.signalAndWakeUp()
                produced.add()
            }
        }
        return {
            producers.forEach { $0.join() }
            sources.forEach { $0.invalidate() }
        }
    }

    private static func startBlocks(_ spec: WorkloadSpec.Producers, loop: Loop, until deadline: Deadline,
                                    produced: Counter, backlog: BlockBacklog) -> () -> Void {
        let cost = spec.handlerCost.duration
        let producers = (0..<spec.threads).map { _ in
            let inFlight = InFlightBlocks(backlog)
            return Producer(rate: spec.rate, until: deadline) {
                guard inFlight.waitForRoom(until: deadline) else { return }
                inFlight.add()
                loop.perform {
                    burn(cost)
                    inFlight.ran()
                }
                produced.add()
            }
        }
        return { producers.forEach { $0.join() } }
    }

    private static func startPorts(_ spec: WorkloadSpec.Producers, index: Int, loop: Loop, until deadline: Deadline,
                                   produced: Counter) -> () -> Void {
        let cost = spec.handlerCost.duration
        let port = LoopPort(capacity: 4096, label: "port-\(index + 1)") { _, message in
            burn(cost)
            try? message.replyPort?.send(msgid: message.msgid, data: [])
        }
        loop.add(port, forMode: .default)
        let payload = [UInt8](repeating: 0x5A, count: spec.bytes)
        let producers = (0..<spec.threads).map { n in
            Producer(rate: spec.rate, until: deadline) {
                // Request/reply: the producer waits for the loop's answer, as a client of a service would.
                if (try? port.sendRequest(msgid: Int32(n), data: payload, sendTimeout: .seconds(1), receiveTimeout: .seconds(1))) != nil {
                    produced.add()
                }
            }
        }
        return {
            // Producers may be waiting for replies: keep serving the port until they are done.
            while producers.contains(where: { !$0.isDone }) { loop.run(mode: .default, timeout: .milliseconds(5)) }
            producers.forEach { $0.join() }
            port.invalidate()
        }
    }

    private static func startIO(_ spec: WorkloadSpec.Producers, index: Int, loop: Loop, until deadline: Deadline,
                                produced: Counter) -> () -> Void {
        var pairs: [(Int32, Int32)] = []
        var sources: [DescriptorSource] = []
        let cost = spec.handlerCost.duration
        for n in 0..<spec.threads {
            var fds: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { continue }
            _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
            pairs.append((fds[0], fds[1]))
            let source = DescriptorSource(fileDescriptor: fds[0], label: "socket-\(index + 1).\(n + 1)") { source, _ in
                var buffer = [UInt8](repeating: 0, count: 65536)
                while read(source.fileDescriptor, &buffer, buffer.count) > 0 {}
                burn(cost)
            }
            loop.add(source, forMode: .default)
            sources.append(source)
        }
        let payload = [UInt8](repeating: 0xA5, count: max(spec.bytes, 1))
        let producers = pairs.map { pair in
            Producer(rate: spec.rate, until: deadline) {
                if write(pair.1, payload, payload.count) > 0 { produced.add() }
            }
        }
        return {
            producers.forEach { $0.join() }
            sources.forEach { $0.invalidate() }
            for (a, b) in pairs { close(a); close(b) }
        }
    }
}

/// Spins until the calling thread has used `cost` of CPU time: a handler that needs that much work. On a busy CPU
/// it takes longer than `cost` on the clock, as a real handler would; the kernel view tells the two apart.
public func burn(_ cost: Duration) {
    guard cost > .zero else { return }
    let end = threadCPUTime() &+ UInt64(cost.components.seconds) &* 1_000_000_000 &+ UInt64(cost.components.attoseconds / 1_000_000_000)
    while threadCPUTime() < end {}
}

/// The calling thread's CPU time so far (CLOCK_THREAD_CPUTIME_ID), in nanoseconds.
private func threadCPUTime() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// A count shared by producer threads.
final class Counter: Sendable {
    private let storage = Atomic<UInt64>(0)
    func add() { storage.add(1, ordering: .relaxed) }
    var value: UInt64 { storage.load(ordering: .relaxed) }
}

/// A thread that calls `body` at `rate` per second (0: back to back) until the deadline.
final class Producer: @unchecked Sendable {
    private var thread = pthread_t()
    private let body: () -> Void
    private let rate: Double
    private let deadline: Deadline
    private let done = Atomic<Bool>(false)

    init(rate: Double, until deadline: Deadline, _ body: @escaping () -> Void) {
        self.body = body
        self.rate = rate
        self.deadline = deadline
        let rc = pthread_create(&thread, nil, { raw in
            let me = Unmanaged<Producer>.fromOpaque(raw!).takeRetainedValue()
            me.loop()
            return nil
        }, Unmanaged.passRetained(self).toOpaque())
        precondition(rc == 0, "rlctl: cannot start a producer thread (pthread_create: \(rc))")
    }

    var isDone: Bool { done.load(ordering: .acquiring) }

    private func loop() {
        defer { done.store(true, ordering: .releasing) }
        guard rate > 0 else {
            while !deadline.passed { for _ in 0..<64 { body() } }
            return
        }
        // Paced on a grid, so sleeping late does not lower the rate.
        let step = UInt64(1e9 / rate)
        var next = Loop.Instant.now.nanoseconds
        while !deadline.passed {
            let now = Loop.Instant.now.nanoseconds
            if next > now {
                // In slices: one sleep until the next event (1000 s at rate 0.001) outlasted the run and its Ctrl-C.
                var pause = timespec(tv_sec: 0, tv_nsec: Int(min(next - now, Self.longestPause)))
                nanosleep(&pause, nil)
                continue
            }
            body()
            next += step
            let after = Loop.Instant.now.nanoseconds
            if after > next && after - next > 100 * step {
                next = after   // far behind: do not try to catch up in a burst
            }
        }
    }

    private static let longestPause: UInt64 = 10_000_000

    func join() {
        pthread_join(thread, nil)
    }
}

/// How far the loop fell behind the block producers: blocks performed and not run yet, and the producers' waits.
public final class BlockBacklog: Sendable {
    public let limitPerProducer: Int
    private let queued = Atomic<Int>(0)
    private let mostQueued = Atomic<Int>(0)
    private let heldBack = Atomic<UInt64>(0)
    private let heldBackNanoseconds = Atomic<UInt64>(0)

    init(limitPerProducer: Int) {
        self.limitPerProducer = limitPerProducer
    }

    public struct Figures: Sendable, Equatable {
        /// The most blocks each producer may have performed and not seen run.
        public var limitPerProducer: Int
        /// The most blocks performed and not run yet at any moment, every producer's together.
        public var mostQueued: Int
        /// How many times a producer found its limit reached and waited for the loop, and how long in all.
        public var heldBack: UInt64
        public var heldBackNanoseconds: UInt64
    }

    public var figures: Figures {
        Figures(limitPerProducer: limitPerProducer, mostQueued: mostQueued.load(ordering: .relaxed),
                heldBack: heldBack.load(ordering: .relaxed), heldBackNanoseconds: heldBackNanoseconds.load(ordering: .relaxed))
    }

    fileprivate func added() {
        let now = queued.add(1, ordering: .relaxed).newValue
        var most = mostQueued.load(ordering: .relaxed)
        while now > most {
            let (exchanged, original) = mostQueued.compareExchange(expected: most, desired: now, ordering: .relaxed)
            if exchanged { break }
            most = original
        }
    }

    fileprivate func ran() { queued.subtract(1, ordering: .relaxed) }

    fileprivate func held(for nanoseconds: UInt64) {
        heldBack.add(1, ordering: .relaxed)
        heldBackNanoseconds.add(nanoseconds, ordering: .relaxed)
    }
}

/// One block producer's blocks performed and not run yet, up to the backlog's limit.
private final class InFlightBlocks: Sendable {
    private let backlog: BlockBacklog
    private let count = Atomic<Int>(0)
    /// A held-back producer resumes once this few of its blocks are left: waking it for every block that runs would
    /// cost the loop's thread a wake-up per block.
    private let resumeBelow: Int
    /// Set by the producer before it sleeps; the callout that brings the count below `resumeBelow` clears it and
    /// wakes the producer. Sleeping in short steps instead, hundreds of held-back producers' wake-ups took most of
    /// the CPU from the loop they wait for.
    private let producerSleeps = Atomic<Bool>(false)
    private let roomMade = DispatchSemaphore(value: 0)

    init(_ backlog: BlockBacklog) {
        self.backlog = backlog
        resumeBelow = max(1, backlog.limitPerProducer / 2)
    }

    func add() {
        count.add(1, ordering: .relaxed)
        backlog.added()
    }

    /// In the block's callout, on the loop's thread: atomics only, and a wake-up once per time the producer waited.
    func ran() {
        let left = count.subtract(1, ordering: .sequentiallyConsistent).newValue
        backlog.ran()
        if left < resumeBelow, producerSleeps.exchange(false, ordering: .sequentiallyConsistent) { roomMade.signal() }
    }

    /// Returns at once while the limit is not reached; otherwise waits until the loop has run half of the producer's
    /// blocks (true), or the run ends (false). Each sleep is bounded, so a run that ends is seen within 10 ms.
    func waitForRoom(until deadline: Deadline) -> Bool {
        guard count.load(ordering: .relaxed) >= backlog.limitPerProducer else { return true }
        let start = Loop.Instant.now.nanoseconds
        defer { backlog.held(for: Loop.Instant.now.nanoseconds - start) }
        while true {
            // Announced before the count is read again: either this read sees the callout's decrement, or that
            // callout sees the announcement and wakes the producer (a wake-up left over makes one more turn).
            producerSleeps.store(true, ordering: .sequentiallyConsistent)
            if count.load(ordering: .sequentiallyConsistent) < resumeBelow {
                producerSleeps.store(false, ordering: .relaxed)
                return true
            }
            if deadline.passed { return false }
            _ = roomMade.wait(timeout: .now() + .milliseconds(10))
        }
    }
}

/// When producers stop: at the run's end, or earlier when the run is cancelled.
struct Deadline {
    let at: Loop.Instant
    let cancelled: @Sendable () -> Bool
    var passed: Bool { Loop.Instant.now >= at || cancelled() }
}

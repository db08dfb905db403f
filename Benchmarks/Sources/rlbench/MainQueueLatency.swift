import CBenchSupport
import CoreFoundation
import Dispatch
import Foundation
import RunLoopCore
import Synchronization
#if canImport(MallocInterposerSwift)
import MallocInterposerSwift
#endif

// Benchmark 2b: main-queue wake-up latency (rule 38). The main thread sleeps in a loop that serves the main
// dispatch queue; a driver thread waits until it sleeps, pauses, stamps the time and calls
// `DispatchQueue.main.async`; the block stamps the time again first thing. Peers: RunLoopCore's `Loop.main`,
// Foundation's `RunLoop.main` (CFRunLoop), and two floors, a thread blocked in epoll_wait on an eventfd: the main
// thread itself, and a fresh thread of its own (as in benchmark 2). The main thread's floor is the like-for-like
// one: on this shared machine the scheduler wakes the two threads a few µs apart, one way or the other from run
// to run, and that difference is not the loops'.
//
// `Loop.main` and `RunLoop.main` both serve the one main queue and both run on the main thread, so they are
// measured in one process by taking turns: for each ping the main thread runs one of them until it has served
// that ping (`returnAfterSourceHandled`, which a servicing counts as), then the next peer's loop. Only the
// running loop waits on the queue's eventfd, so each ping is served by the peer it is meant for (the
// main-queue-fixture test shows the two loops sharing the queue). The floor's thread waits meanwhile.

enum MainQueueLatencyBenchmark {
    static let peers = [
        "RunLoopCore Loop.main",
        "Foundation RunLoop.main",
        "raw eventfd+epoll, main thread (floor)",
        "raw eventfd+epoll, own thread",
        "libdispatch alone: epoll+read+drain, main thread",
    ]

    static func run(_ configuration: WakeUpConfiguration) {
        precondition(Thread.isMainThread, "rlbench: the main-queue benchmark runs on the main thread")
        let total = configuration.pings + configuration.warmup
        var rounds = Array(repeating: [LatencyRound](), count: peers.count)
        let foundationAsleep = FoundationSleepWatch()
        let bareServicing = BareMainQueueServicing()
        for round in 0..<configuration.rounds {
            progress("main queue: round \(round + 1)/\(configuration.rounds), \(peers.count) peers round-robin")
            let logs = peers.map { _ in PingLog(capacity: total) }
            let mainFloor = MainThreadFloor(logs[2])
            let raw = Handoff(RawEventfdTarget(logs[3]))   // pinged from the driver only, finished after it joined
            let blocks: [@Sendable () -> Void] = logs.map { log in { log.arrive() } }
            // Both threads walk the same schedule: which peer each ping goes to.
            let schedule = (0..<total).flatMap { ping in (0..<peers.count).map { step in (step + ping) % peers.count } }
            let served = DispatchSemaphore(value: 0)
            let driver = BenchThread(name: "mq-driver") {
                for peer in schedule {
                    switch peer {
                    case 0: while !Loop.main.isWaiting { sleepNanoseconds(20_000) }
                    case 1: foundationAsleep.wait()
                    case 2: mainFloor.waitUntilAsleep()
                    case 4: bareServicing.waitUntilAsleep()
                    default: break
                    }
                    sleepNanoseconds(configuration.pauseNanoseconds)
                    logs[peer].sentAt.store(nowNanoseconds(), ordering: .releasing)
                    switch peer {
                    case 2: mainFloor.ping()
                    case 3: raw.value.ping()
                    default: DispatchQueue.main.async(execute: blocks[peer])
                    }
                    logs[peer].arrived.wait()
                    served.signal()
                }
            }
            for peer in schedule {
                switch peer {
                case 0: Loop.main.run(mode: .default, timeout: .seconds(60), returnAfterSourceHandled: true)
                case 1: _ = RunLoop.main.run(mode: .default, before: .distantFuture)
                case 2: mainFloor.waitForPing()
                case 4: bareServicing.serveOnce()
                default: break
                }
                served.wait()
            }
            driver.join()
            raw.value.finish()
            mainFloor.close()
            for peer in peers.indices {
                rounds[peer].append(LatencyRound(latencies: Array(logs[peer].latencies.dropFirst(configuration.warmup))))
            }
        }
        report(rounds.map(LatencySummary.init), configuration)
        #if canImport(MallocInterposerSwift)
        reportAllocations()
        #endif
    }

    static func report(_ summaries: [LatencySummary], _ configuration: WakeUpConfiguration) {
        var table = Table(latencies: "2b. Main-queue wake-up latency: DispatchQueue.main.async into a sleeping main loop, \(configuration.pings * configuration.rounds) pings per peer (\(configuration.rounds) rounds × \(configuration.pings)), loop asleep \(configuration.pauseNanoseconds / 1_000) µs before each",
                          peers: peers, summaries, ours: "Loop.main")
        table.notes = [
            "  Latency: from just before DispatchQueue.main.async (the floor: eventfd_write) until the first instruction of the block.",
            "  Loop.main and RunLoop.main take turns on the main thread, ping by ping (both serve the one main queue; only the running one waits on it);",
            "  each is pinged once it sleeps (Loop.main.isWaiting; a beforeWaiting observer for RunLoop.main), then after the pause.",
            "  p50/p99: median over rounds; 'rounds': lowest–highest round in µs. \(configuration.warmup) warm-up pings per peer and round dropped.",
            "  The main-thread floor is the like-for-like one (the loops' thread, woken the same way); the own-thread floor is benchmark 2's.",
            "  'libdispatch alone': the main thread in epoll_wait on the main queue's eventfd only, then read + _dispatch_main_queue_callback_4CF:",
            "  what serving the main queue costs whatever the loop (DispatchQueue.main.async and libdispatch's drain included).",
        ]
        table.print()
    }

    #if canImport(MallocInterposerSwift)
    /// Heap allocations of one servicing by Loop.main of a block queued beforehand (the queueing is not counted),
    /// next to libdispatch's own drain of the same block called directly, and Loop.main's idle iteration.
    static func reportAllocations() {
        let servicings = 1_000
        // One servicing first, so that one-time set-up (the main loop's first zero-timeout run) is not counted.
        DispatchQueue.main.async {}
        Loop.main.run(mode: .default, timeout: .zero)
        let loopMain = countedServicings(servicings) { Loop.main.run(mode: .default, timeout: .zero) }
        let handle = MainQueueHooks()
        let libdispatch = countedServicings(servicings) { handle.acknowledgeAndDrain() }
        let idle = AllocationBenchmark.counting(iterations: servicings) {
            for _ in 0..<servicings { Loop.main.run(mode: .default, timeout: .zero) }
        }
        var table = Table("2c. Allocations per main-queue servicing (\(servicings) servicings of one no-op block queued beforehand; every thread counted)",
                          headers: ["variant", "servicings", "mallocs", "mallocs/servicing", "bytes/servicing"])
        for (name, result) in [("Loop.main: run(timeout: .zero) serving it", loopMain),
                               ("libdispatch alone: eventfd read + _dispatch_main_queue_callback_4CF", libdispatch),
                               ("Loop.main: run(timeout: .zero), queue empty", idle)] {
            table.add([name, "\(result.iterations)", "\(result.mallocs)",
                       String(format1: Double(result.mallocs) / Double(result.iterations), digits: 3),
                       String(format1: Double(result.bytes) / Double(result.iterations), digits: 1)])
        }
        table.notes = ["  The first two rows equal: Loop.main's servicing allocates nothing beyond libdispatch's drain."]
        table.print()
    }

    /// Queues one block, then counts only `serve`, `count` times.
    static func countedServicings(_ count: Int, _ serve: () -> Void) -> AllocationResult {
        var total = AllocationResult(iterations: count, mallocs: 0, bytes: 0, frees: 0)
        let ran = Handoff(0)
        for _ in 0..<count {
            DispatchQueue.main.async { ran.value += 1 }
            let one = AllocationBenchmark.counting(iterations: 1, serve)
            total.mallocs += one.mallocs
            total.bytes += one.bytes
            total.frees += one.frees
        }
        precondition(ran.value == count, "rlbench: \(count - ran.value) main-queue blocks were not served")
        return total
    }
    #endif
}

/// Tells the driver when Foundation's main run loop is about to sleep: a beforeWaiting observer in its default
/// mode raises a flag the driver waits for (and lowers).
final class FoundationSleepWatch: @unchecked Sendable {
    private final class Announcement: Sendable {
        let raised = Atomic<Bool>(false)
    }

    private let asleep = Announcement()
    private var observer: CFRunLoopObserver?

    init() {
        let asleep = self.asleep
        observer = CFRunLoopObserverCreateWithHandler(kCFAllocatorDefault, CFRunLoopActivity.beforeWaiting.rawValue, true, 0) { _, _ in
            asleep.raised.store(true, ordering: .releasing)
        }
        CFRunLoopAddObserver(CFRunLoopGetMain(), observer, kCFRunLoopDefaultMode)
    }

    /// Waits until the main run loop announced its sleep, and consumes the announcement.
    func wait() {
        while !asleep.raised.compareExchange(expected: true, desired: false, ordering: .acquiringAndReleasing).exchanged {
            sleepNanoseconds(20_000)
        }
    }
}

/// The floor on the main thread: in its turn the main thread blocks in epoll_wait on an eventfd of its own, and
/// stamps the time as soon as it returns, as RawEventfdTarget's thread does.
final class MainThreadFloor: @unchecked Sendable {
    private let eventfd: Int32
    private let epoll: Int32
    private let log: PingLog
    private let asleep = Atomic<Bool>(false)

    init(_ log: PingLog) {
        self.log = log
        eventfd = cb_eventfd()
        precondition(eventfd >= 0, "rlbench: eventfd failed (errno \(-eventfd))")
        epoll = cb_epoll_watching(eventfd)
        precondition(epoll >= 0, "rlbench: epoll failed (errno \(-epoll))")
    }

    /// On the main thread: one ping.
    func waitForPing() {
        asleep.store(true, ordering: .releasing)
        _ = cb_epoll_wait_one(epoll, -1)
        let now = nowNanoseconds()
        _ = cb_read_counter(eventfd)
        log.arrive(at: now)
    }

    func waitUntilAsleep() {
        while !asleep.compareExchange(expected: true, desired: false, ordering: .acquiringAndReleasing).exchanged {
            sleepNanoseconds(20_000)
        }
    }

    func ping() { _ = cb_eventfd_signal(eventfd) }

    func close() {
        _ = cb_close(epoll)
        _ = cb_close(eventfd)
    }
}

/// The least a run loop can do to serve the main queue, on the main thread: block in epoll_wait on the queue's
/// eventfd alone, read it, call libdispatch's drain. What it costs beyond the main-thread floor is libdispatch's
/// (DispatchQueue.main.async and the drain); what Loop.main costs beyond it is the loop's.
final class BareMainQueueServicing: @unchecked Sendable {
    private let hooks = MainQueueHooks()
    private let epoll: Int32
    private let asleep = Atomic<Bool>(false)

    init() {
        epoll = cb_epoll_watching(hooks.descriptor)
        precondition(epoll >= 0, "rlbench: epoll failed (errno \(-epoll))")
    }

    /// On the main thread: sleeps until main-queue work arrives, then serves it.
    func serveOnce() {
        asleep.store(true, ordering: .releasing)
        _ = cb_epoll_wait_one(epoll, -1)
        hooks.acknowledgeAndDrain()
    }

    func waitUntilAsleep() {
        while !asleep.compareExchange(expected: true, desired: false, ordering: .acquiringAndReleasing).exchanged {
            sleepNanoseconds(20_000)
        }
    }
}

/// libdispatch's main-queue hooks called directly, as CFRunLoop and Loop.main call them.
struct MainQueueHooks {
    let descriptor: Int32
    private let drain: @convention(c) (UnsafeMutableRawPointer?) -> Void

    init() {
        typealias Handle = @convention(c) () -> Int32
        let handle = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "_dispatch_get_main_queue_handle_4CF")!, to: Handle.self)
        descriptor = handle()
        drain = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "_dispatch_main_queue_callback_4CF")!,
                              to: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self)
    }

    func acknowledgeAndDrain() {
        _ = cb_read_counter(descriptor)
        drain(nil)
    }
}

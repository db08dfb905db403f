import CBenchSupport
import Dispatch
import NIOCore
import NIOPosix
import Synchronization

// Benchmark 2: cross-thread wake-up latency. The driver thread waits until the loop sleeps, pauses, stamps
// the time, asks the loop to run something, and the loop stamps the time again first thing in that callout.
// One ping at a time, so every sample starts from a sleeping loop (the case the wake-up path exists for).
// Within a round the peers' pings alternate one by one (see run).

struct WakeUpConfiguration {
    var pings: Int
    var warmup: Int
    var rounds: Int
    /// How long the driver waits after the loop went to sleep, so that it is really blocked in the kernel.
    var pauseNanoseconds: UInt64
}

/// The two timestamps of each ping. The loop thread appends; the driver reads only after `arrived` fired.
final class PingLog: @unchecked Sendable {
    let sentAt = Atomic<UInt64>(0)
    let arrived = DispatchSemaphore(value: 0)
    private(set) var latencies: [Int64] = []

    init(capacity: Int) {
        latencies.reserveCapacity(capacity)
    }

    /// Called first thing in the loop's callout.
    @inline(__always)
    func arrive(at now: UInt64 = nowNanoseconds()) {
        latencies.append(Int64(bitPattern: now &- sentAt.load(ordering: .acquiring)))
        arrived.signal()
    }
}

enum WakeUpLatencyBenchmark {
    static let peers = [
        "RunLoopCore perform",
        "RunLoopCore source.signalAndWakeUp",
        "Foundation perform+CFRunLoopWakeUp",
        "NIO EventLoop.execute",
        "raw eventfd+epoll (floor)",
    ]

    static func run(_ configuration: WakeUpConfiguration) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let total = configuration.pings + configuration.warmup
        var rounds = Array(repeating: [LatencyRound](), count: peers.count)

        // Finer than the other benchmarks: within a round every peer's loop is alive (and asleep) at once, and
        // the pings go round-robin over the peers, so a burst of noise from another tenant lands on all of
        // them instead of on whichever peer happened to be measured at that moment.
        for round in 0..<configuration.rounds {
            progress("wake-up: round \(round + 1)/\(configuration.rounds), \(peers.count) peers round-robin")
            let logs = peers.map { _ in PingLog(capacity: total) }
            let targets: [Pinger] = [
                .block(LoopCoreHost(name: "rlc-wake"), { [log = logs[0]] in log.arrive() }),
                .source(LoopCoreHost(name: "rlc-wake-src", onSignal: { [log = logs[1]] in log.arrive() })),
                .block(FoundationHost(name: "fnd-wake"), { [log = logs[2]] in log.arrive() }),
                .block(NIOHost(eventLoop: group.next()), { [log = logs[3]] in log.arrive() }),
                .raw(RawEventfdTarget(logs[4])),
            ]
            for ping in 0..<total {
                for step in 0..<peers.count {
                    // Rotating the starting peer keeps any one peer from always following the same other one.
                    let peer = (step + ping) % peers.count
                    let target = targets[peer], log = logs[peer]
                    target.waitUntilAsleep()
                    sleepNanoseconds(configuration.pauseNanoseconds)
                    log.sentAt.store(nowNanoseconds(), ordering: .releasing)
                    target.ping()
                    log.arrived.wait()
                }
            }
            for target in targets { target.finish() }
            for peer in peers.indices {
                rounds[peer].append(LatencyRound(latencies: Array(logs[peer].latencies.dropFirst(configuration.warmup))))
            }
        }
        report(rounds.map(LatencySummary.init), configuration)
    }

    static func report(_ summaries: [LatencySummary], _ configuration: WakeUpConfiguration) {
        var table = Table(latencies: "2. Cross-thread wake-up latency: \(configuration.pings * configuration.rounds) pings per peer (\(configuration.rounds) rounds × \(configuration.pings)), loop asleep \(configuration.pauseNanoseconds / 1_000) µs before each",
                          peers: peers, summaries, ours: "RLC perform")
        table.notes = [
            "  Latency: from just before the cross-thread call until the first instruction of the callout on the loop thread.",
            "  Pings go round-robin over the peers (all loops alive and asleep at once); p50/p99: median over rounds;",
            "  'rounds': lowest–highest round in µs (the noise); max: worst round.",
            "  \(configuration.warmup) warm-up pings per peer and round dropped. RunLoopCore is pinged only once isWaiting is true, then after the pause.",
        ]
        table.print()
    }
}

// ===== peers =====

/// How a ping reaches each peer's loop. The block is built once per run, so no closure is allocated between
/// the two timestamps.
enum Pinger {
    /// RunLoopCore, NIO, Foundation: a block submitted from this thread.
    case block(any BlockTarget, @Sendable () -> Void)
    /// RunLoopCore: its custom source, signalled and woken.
    case source(LoopCoreHost)
    /// The floor.
    case raw(RawEventfdTarget)

    func waitUntilAsleep() {
        switch self {
        case .block(let target, _): target.waitUntilAsleep()
        case .source(let host): host.waitUntilAsleep()
        case .raw: break
        }
    }

    @inline(__always)
    func ping() {
        switch self {
        case .block(let target, let block): target.submit(block)
        case .source(let host): host.source.signalAndWakeUp()
        case .raw(let raw): raw.ping()
        }
    }

    func finish() {
        switch self {
        case .block(let target, _): target.finish()
        case .source(let host): host.finish()
        case .raw(let raw): raw.finish()
        }
    }
}

/// The floor: one thread blocked in epoll_wait on an eventfd, the driver writes the eventfd.
final class RawEventfdTarget {
    private let eventfd: Int32
    private let thread: BenchThread
    private let stopping = StopFlag()

    init(_ log: PingLog) {
        let eventfd = cb_eventfd()
        precondition(eventfd >= 0, "rlbench: eventfd failed (errno \(-eventfd))")
        self.eventfd = eventfd
        let stopping = self.stopping
        let ready = Published<Void>()
        thread = BenchThread(name: "raw-eventfd") {
            let epoll = cb_epoll_watching(eventfd)
            precondition(epoll >= 0, "rlbench: epoll failed (errno \(-epoll))")
            defer { _ = cb_close(epoll) }
            ready.publish(())
            while true {
                _ = cb_epoll_wait_one(epoll, -1)
                let now = nowNanoseconds()
                _ = cb_read_counter(eventfd)
                if stopping.isSet { break }
                log.arrive(at: now)
            }
        }
        ready.wait()
    }

    func ping() { _ = cb_eventfd_signal(eventfd) }

    func finish() {
        stopping.set()
        _ = cb_eventfd_signal(eventfd)
        thread.join()
        _ = cb_close(eventfd)
    }
}

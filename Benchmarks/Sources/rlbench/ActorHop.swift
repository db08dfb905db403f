import Dispatch
import Foundation
import Glibc
import RunLoopCore
import Synchronization
#if canImport(MallocInterposerSwift)
import MallocInterposerSwift
#endif

// Benchmark 5: actor hops (rule 39). The same actor three ways: its executor a RunLoopCore loop (a LoopThread),
// the default executor (the cooperative pool), and the main actor. A driver task on the cooperative pool calls
// the actor and waits for the answer.
//  (a) round trip: one call at a time, the peers interleaved call by call (as in benchmark 2), after a pause in
//      which the loop goes to sleep: from just before the call to just after it returned to the driver;
//  (b) jobs per second: 4 driver tasks calling without pause for a fixed window, per peer, rounds interleaved;
//  (c) heap allocations per call to the loop actor and to the default actor (the runtime's own included).
//
// The main actor on Linux enqueues on the main dispatch queue, which Loop.main serves in its common modes (rule
// 38): rlbench's main thread runs Loop.main for the main-actor peer; the driver runs on a thread of its own.

struct ActorHopConfiguration {
    var calls: Int
    var warmup: Int
    var rounds: Int
    var pauseNanoseconds: UInt64
    var windowNanoseconds: UInt64
    var allocationCalls = 10_000
}

/// The actor on a loop.
actor LoopHopActor {
    let loop: Loop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    private var calls = 0

    init(loop: Loop) {
        self.loop = loop
    }

    func call() -> Int {
        calls += 1
        return calls
    }
}

/// An actor on another loop that calls the loop actor in a loop: a hop there and back with no thread of the
/// cooperative pool involved, so its allocations are the two loops' executors' (and the runtime's).
actor LoopCaller {
    let loop: Loop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    init(loop: Loop) {
        self.loop = loop
    }

    func call(_ target: LoopHopActor, times: Int) async {
        for _ in 0..<times { _ = await target.call() }
    }
}

/// The same actor on the default executor.
actor DefaultHopActor {
    private var calls = 0

    func call() -> Int {
        calls += 1
        return calls
    }
}

/// The same state on the main actor.
@MainActor
final class MainHopTarget {
    static let shared = MainHopTarget()
    private var calls = 0

    func call() -> Int {
        calls += 1
        return calls
    }
}

enum ActorHopBenchmark {
    static let peers = ["actor on a RunLoopCore loop (LoopThread)", "actor on the default executor",
                        "MainActor (main queue served by Loop.main)"]

    struct Results {
        var latency: [[LatencyRound]] = Array(repeating: [], count: peers.count)
        var jobsPerSecond: [[Double]] = Array(repeating: [], count: peers.count)
        var allocations: [(String, Int, Int)] = []
    }

    static func run(_ configuration: ActorHopConfiguration) {
        let results = Handoff(Results())
        let finished = StopFlag()
        let driver = BenchThread(name: "hop-driver") {
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                results.value = await measure(configuration)
                done.signal()
            }
            done.wait()
            finished.set()
            Loop.main.wakeUp()
        }
        serveTheMainQueue(until: finished)
        driver.join()
        report(results.value, configuration)
    }

    /// Runs Loop.main in the default mode (common, so it serves the main dispatch queue and with it the main
    /// actor; never empty on the main loop) until `finished`.
    static func serveTheMainQueue(until finished: StopFlag) {
        while !finished.isSet { Loop.main.run(mode: .default, timeout: .milliseconds(100)) }
    }

    static func measure(_ configuration: ActorHopConfiguration) async -> Results {
        var results = Results()
        let thread = LoopThread(name: "hop-loop")
        defer { thread.close() }
        let onLoop = LoopHopActor(loop: thread.loop)
        let onDefault = DefaultHopActor()
        let main = await MainHopTarget.shared

        @Sendable func hop(_ peer: Int) async -> Int {
            switch peer {
            case 0: return await onLoop.call()
            case 1: return await onDefault.call()
            default: return await main.call()
            }
        }

        // (a) round trips, one peer after the other call by call.
        let total = configuration.calls + configuration.warmup
        for round in 0..<configuration.rounds {
            progress("actor hop: round \(round + 1)/\(configuration.rounds), round trips, \(peers.count) peers round-robin")
            var samples = Array(repeating: [Int64](), count: peers.count)
            for index in peers.indices { samples[index].reserveCapacity(total) }
            for call in 0..<total {
                for step in peers.indices {
                    let peer = (step + call) % peers.count
                    if peer == 0 { while !thread.loop.isWaiting { sleepNanoseconds(10_000) } }
                    if peer == 2 { while !Loop.main.isWaiting { sleepNanoseconds(10_000) } }
                    sleepNanoseconds(configuration.pauseNanoseconds)
                    let start = nowNanoseconds()
                    _ = await hop(peer)
                    samples[peer].append(Int64(bitPattern: nowNanoseconds() &- start))
                }
            }
            for peer in peers.indices {
                results.latency[peer].append(LatencyRound(latencies: Array(samples[peer].dropFirst(configuration.warmup))))
            }
        }

        // (b) jobs per second: 4 callers without pause.
        for round in 0..<configuration.rounds {
            for step in peers.indices {
                let peer = (step + round) % peers.count
                progress("actor hop: round \(round + 1)/\(configuration.rounds), jobs per second, \(peers[peer])")
                results.jobsPerSecond[peer].append(await callsPerSecond(window: configuration.windowNanoseconds) { await hop(peer) })
            }
        }

        // (c) allocations per call.
        #if canImport(MallocInterposerSwift)
        progress("actor hop: allocations per call")
        func count(_ name: String, _ calls: () async -> Void) async {
            MallocInterposerSwift.reset()
            MallocInterposerSwift.hook()
            await calls()
            MallocInterposerSwift.unhook()
            let statistics = MallocInterposerSwift.getStatistics()
            results.allocations.append((name, statistics.mallocCount, statistics.mallocBytesCount))
        }
        for (name, peer) in [("actor on a RunLoopCore loop, called from the pool", 0), ("actor on the default executor", 1)] {
            for _ in 0..<1_000 { _ = await hop(peer) }
            await count(name) { for _ in 0..<configuration.allocationCalls { _ = await hop(peer) } }
        }
        let callerThread = LoopThread(name: "hop-caller")
        let caller = LoopCaller(loop: callerThread.loop)
        await caller.call(onLoop, times: 1_000)
        await count("actor on a RunLoopCore loop, called from an actor on another loop") {
            await caller.call(onLoop, times: configuration.allocationCalls)
        }
        callerThread.close()
        #endif
        return results
    }

    /// Calls per second of 4 tasks calling `hop` back to back for `window` nanoseconds.
    static func callsPerSecond(window: UInt64, _ hop: @escaping @Sendable () async -> Int) async -> Double {
        let callers = 4
        let start = nowNanoseconds()
        let deadline = start + window
        let calls = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<callers {
                group.addTask {
                    var count = 0
                    while nowNanoseconds() < deadline {
                        _ = await hop()
                        count += 1
                    }
                    return count
                }
            }
            var total = 0
            for await count in group { total += count }
            return total
        }
        return Double(calls) / (Double(nowNanoseconds() - start) / 1e9)
    }

    static func report(_ results: Results, _ configuration: ActorHopConfiguration) {
        let latency = results.latency.map(LatencySummary.init)
        var table = Table("5. Actor hop: \(configuration.calls * configuration.rounds) round trips per peer (\(configuration.rounds) rounds × \(configuration.calls)), \(configuration.pauseNanoseconds / 1_000) µs pause before each; jobs/s from 4 callers over \(configuration.windowNanoseconds / 1_000_000) ms per round",
                          headers: ["peer", "p50", "p99", "max", "p50 rounds", "calls/s", "calls/s rounds", "loop/peer p50", "loop/peer calls/s"])
        let ours = latency[0]
        let oursRate = median(results.jobsPerSecond[0])
        for (index, name) in peers.enumerated() {
            let summary = latency[index]
            let rates = results.jobsPerSecond[index]
            table.add([name, formatMicroseconds(summary.p50), formatMicroseconds(summary.p99), formatMicroseconds(summary.max),
                       formatRange(summary.p50Range), formatCount(median(rates)),
                       formatCount(rates.min()!) + "–" + formatCount(rates.max()!),
                       index == 0 ? "—" : formatRatio(ours.p50 / summary.p50),
                       index == 0 ? "—" : formatRatio(oursRate / median(rates))])
        }
        table.notes = [
            "  Round trip: from just before `await actor.call()` in a task on the cooperative pool until it returned there.",
            "  The loop actor and the main actor are called only once their loop sleeps (isWaiting), then after the pause.",
            "  The MainActor peer is served by Loop.main on rlbench's main thread (rule 38);",
            "  p50/p99: median over rounds; calls/s: median over rounds, 4 callers.",
        ]
        for (name, mallocs, bytes) in results.allocations {
            table.notes.append("  Allocations, \(name): \(String(format1: Double(mallocs) / Double(configuration.allocationCalls), digits: 3)) mallocs and \(String(format1: Double(bytes) / Double(configuration.allocationCalls), digits: 1)) bytes per call (\(configuration.allocationCalls) calls, every thread counted).")
        }
        table.print()
    }
}

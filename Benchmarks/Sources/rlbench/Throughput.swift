import CBenchSupport
import CoreFoundation
import Dispatch
import Foundation
import Glibc
import NIOCore
import NIOPosix
import RunLoopCore
import Synchronization

// Benchmark 3: block throughput.
//  (a) sustained: one producer thread submits no-op blocks for a fixed time while the loop runs them;
//      the figure is blocks executed per second of that window.
//  (b) drain: blocks queued while the loop is not running, then timed from starting the loop to the last one.
//  (c) loaded: (a) with the loop's thread sharing its CPU with a thread that spins without sleeping (both pinned
//      to one CPU), as on a machine that other work keeps busy (issue 30).
// The block is the same for every peer and captures nothing, so it allocates no closure context.

struct ThroughputConfiguration {
    var rounds: Int
    var sustainedNanoseconds: UInt64
    var drainBlocks: Int
    /// The producer pauses while more than this many blocks wait, so that a producer faster than the loop
    /// measures the loop rather than a queue growing without bound (the same limit for every peer).
    var maximumBacklog = 65_536
}

enum Executed {
    /// Blocks run by the loop under test.
    static let count = Atomic<Int>(0)
}

/// The no-op block: counts itself and nothing else.
let countingBlock: @Sendable () -> Void = { Executed.count.wrappingAdd(1, ordering: .relaxed) }

struct SustainedRound {
    var blocksPerSecond: Double
    /// Share of the window the producer spent paused on the backlog limit: near 100% means the loop was the
    /// bottleneck, near 0% means the producer (the submit path) was.
    var throttledShare: Double
    /// Times the loop went to sleep per 1,000 blocks run (each sleep costs the producer an eventfd write to
    /// wake it again); nil where the peer does not tell.
    var sleepsPerThousand: Double?
    /// The producer's use of its CPU during the window (its context switches are printed).
    var producer: ThreadUsage
}

enum ThroughputBenchmark {
    static let peers = ["RunLoopCore perform", "Foundation perform+CFRunLoopWakeUp", "NIO EventLoop.execute"]

    static func run(_ configuration: ThroughputConfiguration) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let eventLoop = group.next()

        func target(_ peer: Int) -> any BlockTarget {
            switch peer {
            case 0: return LoopCoreHost(name: "rlc-tput")
            case 1: return FoundationHost(name: "fnd-tput")
            default: return NIOHost(eventLoop: eventLoop)
            }
        }
        let sustained = interleave(section: "throughput (sustained)", rounds: configuration.rounds, peers: peers) { peer in
            let target = target(peer)
            defer { target.finish() }
            return reported(produce(into: target, configuration))
        }
        let loaded = interleave(section: "throughput (sustained, beside a busy loop)", rounds: configuration.rounds,
                                peers: peers) { peer in
            let target = target(peer)
            defer { target.finish() }
            return reported(produceBesideABusyLoop(into: target, configuration))
        }
        let drain = interleave(section: "throughput (drain)", rounds: configuration.rounds, peers: peers) { peer in
            switch peer {
            case 0: return drainLoopCore(configuration.drainBlocks)
            case 1: return drainFoundation(configuration.drainBlocks)
            default: return drainNIO(configuration.drainBlocks, on: eventLoop)
            }
        }
        report(sustained: sustained, drain: drain, configuration)
        reportLoaded(loaded, configuration)
    }

    // ===== (a) sustained =====

    /// Each round's figure on the progress line: the medians hide a round that went another way.
    static func reported(_ round: SustainedRound) -> SustainedRound {
        let sleeps = round.sleepsPerThousand.map { ", \(formatCount($0)) sleeps/1k" } ?? ""
        progress("    = \(formatCount(round.blocksPerSecond)) blocks/s\(sleeps); producer: "
                 + "\(round.producer.voluntarySwitches) voluntary and \(round.producer.involuntarySwitches) involuntary context switches")
        return round
    }

    /// The driver thread is the producer.
    static func produce(into target: any BlockTarget, _ configuration: ThroughputConfiguration) -> SustainedRound {
        let batch = 64
        let sleepsBefore = target.sleeps
        let usageBefore = ThreadUsage.now()
        Executed.count.store(0, ordering: .relaxed)
        var submitted = 0
        var throttled: UInt64 = 0
        let start = nowNanoseconds()
        let end = start + configuration.sustainedNanoseconds
        var now = start
        while now < end {
            for _ in 0..<batch { target.submit(countingBlock) }
            submitted += batch
            if submitted - Executed.count.load(ordering: .relaxed) > configuration.maximumBacklog {
                let pausedAt = nowNanoseconds()
                // Resume at half the limit, so the producer does not flap around it.
                while submitted - Executed.count.load(ordering: .relaxed) > configuration.maximumBacklog / 2 {
                    sched_yield()
                }
                throttled += nowNanoseconds() - pausedAt
            }
            now = nowNanoseconds()
        }
        let executed = Executed.count.load(ordering: .relaxed)
        let producer = ThreadUsage.now() - usageBefore
        var sleeps: Double?
        if let before = sleepsBefore, let after = target.sleeps { sleeps = Double(after - before) }
        let elapsed = Double(now - start)
        // Let the backlog drain before the next peer starts, so that it starts on a quiet machine.
        while Executed.count.load(ordering: .relaxed) < submitted { sched_yield() }
        return SustainedRound(blocksPerSecond: Double(executed) * 1e9 / elapsed, throttledShare: Double(throttled) / elapsed,
                              sleepsPerThousand: sleeps.map { $0 * 1_000 / Double(executed) },
                              producer: producer)
    }

    // ===== (c) sustained beside a busy loop =====

    /// (a) with the loop's thread and a spinning thread pinned to one CPU (the last the process may use); the
    /// producer is left to the scheduler. The loop's thread gets its CPU set back afterwards (NIO's is reused).
    static func produceBesideABusyLoop(into target: any BlockTarget, _ configuration: ThroughputConfiguration) -> SustainedRound {
        let cpu = cb_last_allowed_cpu()
        precondition(cpu >= 0, "rlbench: sched_getaffinity failed")
        onLoopThread(of: target) { pinCurrentThread(to: cpu) }
        let busy = BusyThread(cpu: cpu)
        defer {
            busy.stop()
            onLoopThread(of: target) { pinCurrentThread(to: nil) }
        }
        return produce(into: target, configuration)
    }

    /// Runs `body` on the target's loop thread and returns once it ran (it does not count as a block).
    static func onLoopThread(of target: any BlockTarget, _ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        target.submit {
            body()
            done.signal()
        }
        done.wait()
    }

    // ===== (b) drain =====

    /// RunLoopCore: blocks performed on the loop's own thread before the run (no wake-up involved); the last
    /// one stops the run.
    static func drainLoopCore(_ blocks: Int) -> Double {
        let result = Handoff<Double>(0)
        BenchThread.run(name: "rlc-drain") {
            let loop = Loop.current
            // Pending blocks alone should keep the mode alive, but a fresh loop whose default mode never held
            // an item returns `finished` without running them (reported as a RunLoopCore bug), so a never
            // signalled source holds the mode, as the keep-alive timer does for Foundation below.
            let keepAlive = LoopSource(label: "rlbench.keepalive") {}
            loop.add(keepAlive, forMode: .default)
            defer { keepAlive.invalidate() }
            let finishedAt = Handoff<UInt64>(0)
            Executed.count.store(0, ordering: .relaxed)
            for _ in 0..<(blocks - 1) { loop.perform(countingBlock) }
            loop.perform {
                countingBlock()
                finishedAt.value = nowNanoseconds()
                loop.stop()
            }
            let start = nowNanoseconds()
            loop.run(mode: .default, timeout: .seconds(600))
            result.value = rate(blocks, from: start, to: finishedAt.value)
        }
        return result.value
    }

    /// Foundation: the same, with `RunLoop.perform` on the loop's own thread and `CFRunLoopStop` at the end.
    static func drainFoundation(_ blocks: Int) -> Double {
        let result = Handoff<Double>(0)
        BenchThread.run(name: "fnd-drain") {
            let runLoop = RunLoop.current
            let keepAlive = Timer(fire: .distantFuture, interval: 0, repeats: false) { _ in }
            runLoop.add(keepAlive, forMode: .default)
            let finishedAt = Handoff<UInt64>(0)
            Executed.count.store(0, ordering: .relaxed)
            for _ in 0..<(blocks - 1) { runLoop.perform(countingBlock) }
            runLoop.perform {
                countingBlock()
                finishedAt.value = nowNanoseconds()
                CFRunLoopStop(CFRunLoopGetCurrent())
            }
            let start = nowNanoseconds()
            _ = runLoop.run(mode: .default, before: .distantFuture)
            keepAlive.invalidate()
            result.value = rate(blocks, from: start, to: finishedAt.value)
        }
        return result.value
    }

    /// NIO's loop is always running, so the blocks are queued from inside one of its tasks (on its own thread,
    /// no wake-ups), and the clock starts when that task returns.
    static func drainNIO(_ blocks: Int, on eventLoop: any EventLoop) -> Double {
        let done = DispatchSemaphore(value: 0)
        let startedAt = Handoff<UInt64>(0)
        let finishedAt = Handoff<UInt64>(0)
        eventLoop.execute {
            Executed.count.store(0, ordering: .relaxed)
            for _ in 0..<(blocks - 1) { eventLoop.execute(countingBlock) }
            eventLoop.execute {
                countingBlock()
                finishedAt.value = nowNanoseconds()
                done.signal()
            }
            startedAt.value = nowNanoseconds()
        }
        done.wait()
        return rate(blocks, from: startedAt.value, to: finishedAt.value)
    }

    static func rate(_ blocks: Int, from start: UInt64, to end: UInt64) -> Double {
        let executed = Executed.count.load(ordering: .relaxed)
        precondition(executed == blocks, "rlbench: the drain ran \(executed) of \(blocks) blocks")
        return Double(blocks) * 1e9 / Double(end - start)
    }

    // ===== report =====

    static func report(sustained: [[SustainedRound]], drain: [[Double]], _ configuration: ThroughputConfiguration) {
        let sustainedRates = sustained.map { median($0.map(\.blocksPerSecond)) }
        let throttled = sustained.map { median($0.map(\.throttledShare)) }
        let sleeps = sustained.map { rounds in rounds.first?.sleepsPerThousand == nil ? nil : median(rounds.compactMap(\.sleepsPerThousand)) }
        let drainRates = drain.map { median($0) }
        var table = Table("3. Throughput: no-op blocks, \(configuration.rounds) rounds per peer (interleaved); higher is better",
                          headers: ["peer", "(a) sustained blocks/s", "producer throttled", "loop sleeps/1k blocks", "RLC/peer (a)",
                                    "(b) drain \(configuration.drainBlocks) blocks/s", "RLC/peer (b)"])
        for (index, name) in peers.enumerated() {
            table.add([name, formatCount(sustainedRates[index]), String(format1: throttled[index] * 100, digits: 0) + " %",
                       sleeps[index].map { String(format1: $0, digits: 1) } ?? "n/a",
                       index == 0 ? "—" : formatRatio(sustainedRates[0] / sustainedRates[index]),
                       formatCount(drainRates[index]),
                       index == 0 ? "—" : formatRatio(drainRates[0] / drainRates[index])])
        }
        table.notes = [
            "  (a) one producer thread for \(String(format1: Double(configuration.sustainedNanoseconds) / 1e9, digits: 1)) s, at most \(configuration.maximumBacklog) blocks waiting; 'throttled' ≈ 100 % means the loop, not the producer, was the limit.",
            "  (b) blocks queued on the loop's thread before it runs; timed from starting the run to the last block. Figures are medians over rounds.",
        ]
        table.notes.append(goal("RunLoopCore sustained throughput at least NIO's", met: sustainedRates[0] >= sustainedRates[2],
                                detail: "\(formatCount(sustainedRates[0])) vs \(formatCount(sustainedRates[2])) blocks/s = \(formatRatio(sustainedRates[0] / sustainedRates[2]))"))
        table.notes.append(goal("RunLoopCore drain rate at least NIO's", met: drainRates[0] >= drainRates[2],
                                detail: "\(formatCount(drainRates[0])) vs \(formatCount(drainRates[2])) blocks/s = \(formatRatio(drainRates[0] / drainRates[2]))"))
        table.print()
    }

    static func reportLoaded(_ loaded: [[SustainedRound]], _ configuration: ThroughputConfiguration) {
        let rates = loaded.map { median($0.map(\.blocksPerSecond)) }
        let throttled = loaded.map { median($0.map(\.throttledShare)) }
        var table = Table("3c. Throughput beside a busy loop: (a) with the loop's thread sharing its CPU with a spinning thread; higher is better",
                          headers: ["peer", "(c) sustained blocks/s", "producer throttled", "RLC/peer (c)"])
        for (index, name) in peers.enumerated() {
            table.add([name, formatCount(rates[index]), String(format1: throttled[index] * 100, digits: 0) + " %",
                       index == 0 ? "—" : formatRatio(rates[0] / rates[index])])
        }
        table.notes = ["  The loop's thread and a thread that never sleeps are pinned to one CPU; the producer runs where the scheduler puts it. Medians over rounds."]
        table.notes.append(goal("RunLoopCore beside a busy loop not below NIO", met: rates[0] >= rates[2],
                                detail: "\(formatCount(rates[0])) vs \(formatCount(rates[2])) blocks/s = \(formatRatio(rates[0] / rates[2]))"))
        table.print()
    }
}

/// Restricts the calling thread to `cpu`, or with nil gives it the process's CPUs back.
func pinCurrentThread(to cpu: Int32?) {
    let rc = cb_pin_to_cpu(cpu ?? -1)
    precondition(rc == 0, "rlbench: sched_setaffinity failed (errno \(-rc))")
}

/// A thread pinned to one CPU that spins until stopped, never sleeping: the other work of a loaded machine.
final class BusyThread: @unchecked Sendable {
    private let running = Atomic<Bool>(true)
    private var thread: BenchThread?

    init(cpu: Int32) {
        let started = DispatchSemaphore(value: 0)
        thread = BenchThread(name: "rlbench-busy") { [self] in
            pinCurrentThread(to: cpu)
            started.signal()
            while running.load(ordering: .relaxed) {}
        }
        started.wait()
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        thread?.join()
    }
}

import ArgumentParser
import CBenchSupport
import Foundation
import Glibc

/// Benchmarks RunLoopCore against Foundation's RunLoop, SwiftNIO and raw kernel primitives, interleaving
/// the peers round by round so that a noisy machine hurts them all alike.
@main
struct RLBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rlbench",
        abstract: "RunLoopCore vs Foundation RunLoop vs SwiftNIO vs raw epoll/timerfd/eventfd.",
        discussion: """
        Benchmarks: timers (1 ms timer lateness), wakeup (cross-thread wake-up latency), mainqueue \
        (DispatchQueue.main.async into a sleeping main loop), throughput \
        (blocks per second, sustained and drain), idle (CPU of a sleeping loop), allocations (mallocs per \
        empty iteration), actorhop (an actor on a loop vs the default executor vs the main actor). Explicit \
        options override --quick.
        """
    )

    @Flag(help: "Small counts for a smoke run (about 20 s instead of about 90 s).")
    var quick = false

    @Option(help: "Comma-separated benchmarks to run: timers,wakeup,mainqueue,throughput,idle,allocations,actorhop.")
    var only: String?

    @Option(help: "Interleaved rounds per peer (default 5, quick 2).")
    var rounds: Int?

    @Option(help: "Measured firings of the 1 ms timer per peer, split over the rounds (default 5000, quick 1000).")
    var firings: Int?

    @Option(help: "Cross-thread pings per peer, split over the rounds (default 2000, quick 400).")
    var pings: Int?

    @Option(help: "Microseconds the loop sleeps before each ping.")
    var pingPause: Int = 500

    @Option(help: "Seconds of the sustained-throughput window per peer and round (default 2, quick 0.5).")
    var throughputSeconds: Double?

    @Option(help: "Blocks queued for the drain measurement (default 200000, quick 50000).")
    var drainBlocks: Int?

    @Option(help: "Seconds the idle loops sleep (default 10, quick 2).")
    var idleSeconds: Double?

    @Option(help: "Empty iterations counted for allocations.")
    var allocationIterations: Int = 10_000

    static let allBenchmarks = ["timers", "wakeup", "mainqueue", "throughput", "idle", "allocations", "actorhop"]

    func validate() throws {
        for name in selected where !Self.allBenchmarks.contains(name) {
            throw ValidationError("unknown benchmark '\(name)'; choose from \(Self.allBenchmarks.joined(separator: ","))")
        }
        for (name, value) in [("rounds", rounds), ("firings", firings), ("pings", pings), ("drain-blocks", drainBlocks)] {
            if let value, value < 1 { throw ValidationError("--\(name) must be at least 1") }
        }
        if allocationIterations < 1 || pingPause < 0 { throw ValidationError("counts and pauses must be positive") }
        if let drainBlocks, drainBlocks < 2 { throw ValidationError("--drain-blocks must be at least 2") }
    }

    var selected: [String] {
        guard let only else { return Self.allBenchmarks }
        return only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }

    func run() throws {
        cb_line_buffer_stdout()
        let rounds = self.rounds ?? (quick ? 2 : 5)
        printHeader(rounds: rounds)
        let selected = Set(self.selected)

        if selected.contains("timers") {
            let perRound = Self.split(firings ?? (quick ? 1_000 : 5_000), over: rounds)
            TimerLatenessBenchmark.run(TimerConfiguration(firings: perRound, warmup: min(100, max(perRound / 10, 10)), rounds: rounds))
        }
        if selected.contains("wakeup") {
            let perRound = Self.split(pings ?? (quick ? 400 : 2_000), over: rounds)
            WakeUpLatencyBenchmark.run(WakeUpConfiguration(pings: perRound, warmup: min(50, max(perRound / 10, 5)), rounds: rounds,
                                                           pauseNanoseconds: UInt64(pingPause) * 1_000))
        }
        if selected.contains("mainqueue") {
            let perRound = Self.split(pings ?? (quick ? 400 : 2_000), over: rounds)
            MainQueueLatencyBenchmark.run(WakeUpConfiguration(pings: perRound, warmup: min(50, max(perRound / 10, 5)), rounds: rounds,
                                                              pauseNanoseconds: UInt64(pingPause) * 1_000))
        }
        if selected.contains("throughput") {
            let seconds = throughputSeconds ?? (quick ? 0.5 : 2)
            ThroughputBenchmark.run(ThroughputConfiguration(rounds: rounds, sustainedNanoseconds: UInt64(seconds * 1e9),
                                                            drainBlocks: drainBlocks ?? (quick ? 50_000 : 200_000)))
        }
        if selected.contains("idle") {
            IdleCPUBenchmark.run(IdleConfiguration(nanoseconds: UInt64((idleSeconds ?? (quick ? 2 : 10)) * 1e9)))
        }
        if selected.contains("allocations") {
            AllocationBenchmark.run(AllocationConfiguration(iterations: allocationIterations))
        }
        if selected.contains("actorhop") {
            let perRound = Self.split(pings ?? (quick ? 400 : 2_000), over: rounds)
            ActorHopBenchmark.run(ActorHopConfiguration(calls: perRound, warmup: min(50, max(perRound / 10, 5)), rounds: rounds,
                                                        pauseNanoseconds: UInt64(pingPause) * 1_000,
                                                        windowNanoseconds: UInt64((throughputSeconds ?? (quick ? 0.5 : 1)) * 1e9)))
        }
        print("")
    }

    /// A total count per peer as a count per round (rounding up): many short rounds interleave the peers
    /// more finely than a few long ones, for the same total.
    static func split(_ total: Int, over rounds: Int) -> Int {
        (total + rounds - 1) / rounds
    }

    /// What the figures were measured on: they mean little without it.
    func printHeader(rounds: Int) {
        var name = utsname()
        uname(&name)
        let kernel = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        #if DEBUG
        let build = "DEBUG build: figures are meaningless, use -c release"
        #else
        let build = "release build"
        #endif
        print("rlbench — RunLoopCore vs Foundation RunLoop vs SwiftNIO vs raw kernel primitives")
        print("\(ProcessInfo.processInfo.activeProcessorCount) CPUs (\(cpu)), Linux \(kernel), \(build); \(rounds) interleaved rounds\(quick ? ", --quick" : "")")
        print("All times on CLOCK_MONOTONIC. Ratios are RunLoopCore ÷ peer: below 1 is better for latencies, above 1 for rates.")
    }
}

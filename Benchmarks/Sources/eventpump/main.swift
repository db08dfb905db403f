// eventpump: a RunLoopCore loop that emits runloop events at a chosen rate, traced by whatever tracer rlctl chose
// (`LoopEventSink.installFromEnvironment()`): the load of the relay daemon benchmark (relay-fleet-bench.sh).
//
//   eventpump EVENTS_PER_SECOND SECONDS [BURN_AT_SECONDS]
//
// With BURN_AT_SECONDS, one timer callout at that time burns 300 ms of CPU and prints `burn-end NS` (its end on
// CLOCK_MONOTONIC) when done: the stall whose arrival on `rlctl top`'s screen top-bench.py times.
//
// A 1 ms repeating timer queues blocks on the loop: each block is two events (block_begin, block_end), and each
// millisecond's iteration adds about ten more (six activities, the timer's two, a wake-up, a run's share). The
// rate asked for is a target; what was emitted is what the trace counts, and the script reads that.
//
// EVENTPUMP_LOOPS=N adds N - 1 quiet loops, each on a thread of its own with a 10 ms timer: the many loops whose
// series `rlctl top --serve` exports (top-bench.py --serve times a scrape of them).
import Foundation
import RunLoopCore
import Tracing

let arguments = CommandLine.arguments.dropFirst()
let numbers = arguments.map { Double($0) ?? -1 }
guard numbers.count == 2 || numbers.count == 3, numbers.allSatisfy({ $0 > 0 }) else {
    FileHandle.standardError.write(Data("usage: eventpump EVENTS_PER_SECOND SECONDS [BURN_AT_SECONDS] (all > 0)\n".utf8))
    exit(2)
}
let (rate, seconds) = (numbers[0], numbers[1])
let burnAt = numbers.count == 3 ? Loop.Instant.now.nanoseconds + UInt64(numbers[2] * 1e9) : UInt64.max
nonisolated(unsafe) var burned = false
let tracer = LoopEventSink.installFromEnvironment()
let blocksPerTick = max(0, Int(((rate / 1000) - 10) / 2))
let loop = Loop.current
let timer = LoopTimer(after: .milliseconds(1), interval: .milliseconds(1), label: "pump") { _ in
    for _ in 0..<blocksPerTick { loop.perform {} }
    if !burned && Loop.Instant.now.nanoseconds >= burnAt {
        burned = true
        let end = Loop.Instant.now.nanoseconds + 300_000_000
        while Loop.Instant.now.nanoseconds < end {}
        print("burn-end \(Loop.Instant.now.nanoseconds)")
        fflush(nil)
    }
}
loop.add(timer, forMode: .default)
let quietLoops = max(1, Int(ProcessInfo.processInfo.environment["EVENTPUMP_LOOPS"] ?? "1") ?? 1) - 1
let quiet = (0..<quietLoops).map { index in
    let thread = LoopThread(name: "quiet-\(index)")
    thread.loop.perform {
        thread.loop.add(LoopTimer(after: .milliseconds(10), interval: .milliseconds(10), label: "tick") { _ in }, forMode: .default)
    }
    return thread
}
loop.run(mode: .default, timeout: .milliseconds(Int64(seconds * 1000)))
withExtendedLifetime(quiet) {}
print("eventpump: \(blocksPerTick) blocks per 1 ms tick for \(seconds) s (tracer: \(tracer))")

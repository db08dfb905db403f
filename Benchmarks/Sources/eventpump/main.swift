// eventpump: a RunLoopCore loop that emits runloop events at a chosen rate, traced by whatever tracer rlctl chose
// (`LoopEventSink.installFromEnvironment()`): the load of the relay daemon benchmark (relay-fleet-bench.sh).
//
//   eventpump EVENTS_PER_SECOND SECONDS
//
// A 1 ms repeating timer queues blocks on the loop: each block is two events (block_begin, block_end), and each
// millisecond's iteration adds about ten more (six activities, the timer's two, a wake-up, a run's share). The
// rate asked for is a target; what was emitted is what the trace counts, and the script reads that.
import Foundation
import RunLoopCore
import Tracing

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, let rate = Double(arguments.first!), rate > 0, let seconds = Double(arguments.last!), seconds > 0 else {
    FileHandle.standardError.write(Data("usage: eventpump EVENTS_PER_SECOND SECONDS (both > 0)\n".utf8))
    exit(2)
}
let tracer = LoopEventSink.installFromEnvironment()
let blocksPerTick = max(0, Int(((rate / 1000) - 10) / 2))
let loop = Loop.current
let timer = LoopTimer(after: .milliseconds(1), interval: .milliseconds(1), label: "pump") { _ in
    for _ in 0..<blocksPerTick { loop.perform {} }
}
loop.add(timer, forMode: .default)
loop.run(mode: .default, timeout: .milliseconds(Int64(seconds * 1000)))
print("eventpump: \(blocksPerTick) blocks per 1 ms tick for \(seconds) s (tracer: \(tracer))")

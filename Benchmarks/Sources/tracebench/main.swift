// tracebench: what tracing costs per event, and how fast traces are read back.
//
//   swift run -c release --package-path Benchmarks tracebench [--events N] [--reader-events N]
//
// Per event: the loop's own call path (a LoopEventSink method with a Context), side by side in one run,
// interleaved over rounds: no sink installed (the branch the loop takes), the embedded recorder, and the LTTng
// sink when this build has it (see lttng.swift). Reader: a trace of --reader-events events written by the
// recorder, read by EmbeddedTraceReader and by the libbabeltrace2-based CTFTraceReader, against
// `babeltrace2 TRACE > /dev/null`.
import Foundation
import Glibc
import RunLoopCore
import Tracing

var eventsPerRound = 2_000_000
var readerEvents = 10_000_000
var rounds = 5
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--events": eventsPerRound = Int(arguments.next() ?? "") ?? eventsPerRound
    case "--reader-events": readerEvents = Int(arguments.next() ?? "") ?? readerEvents
    case "--rounds": rounds = Int(arguments.next() ?? "") ?? rounds
    default:
        FileHandle.standardError.write(Data("usage: tracebench [--events N] [--reader-events N] [--rounds R]\n".utf8))
        exit(2)
    }
}

nonisolated func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

nonisolated(unsafe) let modeName = strdup(Loop.Mode.default.name)!
nonisolated func context(_ iteration: UInt64) -> LoopEventSink.Context {
    LoopEventSink.Context(loopID: 1, modeCString: modeName, depth: 1, iteration: iteration)
}

/// Nanoseconds per event of `emit`, called the way a loop calls its sink.
@inline(never)
nonisolated func measure(_ count: Int, _ emit: (UInt64) -> Void) -> Double {
    let start = Loop.Instant.now
    for i in 0..<count { emit(UInt64(i)) }
    return Double(start.duration(to: .now).components.attoseconds / 1_000_000_000 + start.duration(to: .now).components.seconds * 1_000_000_000) / Double(count)
}

// ===== per-event cost =====

struct Peer {
    let name: String
    let run: (Int) -> Double
}

let folder = NSTemporaryDirectory() + "tracebench-\(getpid())"
var recorderOptions = EmbeddedRecorder.Options()
recorderOptions.packetSize = 1 << 20
recorderOptions.packetsPerThread = 64
var recordedTotal: UInt64 = 0, lostTotal: UInt64 = 0

var peers: [Peer] = [
    Peer(name: "no sink installed (the loop's branch)") { count in
        measure(count) { i in
            if let sink = LoopEventSink.current { sink.activity(.beforeTimers, context(i)) }
        }
    },
    Peer(name: "embedded recorder, recording") { count in
        let dir = folder + "-\(UInt32.random(in: 0...UInt32.max))"
        let recorder = try! EmbeddedRecorder(directory: dir, options: recorderOptions)
        try! recorder.start()
        let ns = measure(count) { i in recorder.activity(.beforeTimers, context(i)) }
        let summary = try! recorder.stop()
        recordedTotal += summary.eventsRecorded
        lostTotal += summary.eventsLost
        try? FileManager.default.removeItem(atPath: dir)
        return ns
    },
]
peers += lttngPeers(context: context, measure: measure)

print("tracebench — per-event cost, \(rounds) interleaved rounds × \(eventsPerRound) events per peer (release build)")
var results = Array(repeating: [Double](), count: peers.count)
for round in 0..<rounds {
    for offset in 0..<peers.count {
        let index = (offset + round) % peers.count
        results[index].append(peers[index].run(eventsPerRound))
    }
}
for (peer, values) in zip(peers, results) {
    let text = String(format: "%8.2f ns/event (rounds %.2f–%.2f)", median(values), values.min()!, values.max()!)
    print("  " + peer.name.padding(toLength: 52, withPad: " ", startingAt: 0) + text)
}
print("  embedded recorder: \(recordedTotal) events recorded, \(lostTotal) lost")
printLTTngNotes()

// ===== reader throughput =====

print("\nreader throughput on a \(readerEvents)-event trace written by the embedded recorder")
let traceDir = folder + "-reader"
do {
    var options = EmbeddedRecorder.Options()
    options.packetSize = 1 << 20
    options.packetsPerThread = 256
    let recorder = try EmbeddedRecorder(directory: traceDir, options: options)
    try recorder.start()
    let payloads: [(LoopEventSink.Context, Int)] = []
    _ = payloads
    for i in 0..<UInt64(readerEvents / 4) {
        recorder.activity(.beforeTimers, context(i))
        recorder.timerFireBegin(context(i), timerID: 7, scheduled: i, tolerance: 0, interval: 1_000_000, missed: 0)
        recorder.timerFireEnd(context(i), timerID: 7)
        recorder.wakeUp(context(i), reason: .timer, slept: 1000)
    }
    let summary = try recorder.stop()
    print("  written: \(summary.eventsRecorded) events, \(summary.eventsLost) lost, \(summary.bytesWritten / 1_000_000) MB")
}

func timeReader(_ name: String, _ open: () throws -> any TraceEventReader) {
    do {
        var reader = try open()
        let start = Loop.Instant.now
        var count = 0
        while try reader.next() != nil { count += 1 }
        let seconds = Double(start.duration(to: .now).components.attoseconds) / 1e18 + Double(start.duration(to: .now).components.seconds)
        print("  " + name.padding(toLength: 52, withPad: " ", startingAt: 0) + String(format: "%8.2f M events/s (%d events in %.2f s)", Double(count) / seconds / 1e6, count, seconds))
    } catch {
        print("  \(name): \(error)")
    }
}

timeReader("EmbeddedTraceReader") { try EmbeddedTraceReader(path: traceDir) }
timeReader("CTFTraceReader (libbabeltrace2)") { try CTFTraceReader(path: traceDir) }
if access("/usr/bin/babeltrace2", X_OK) == 0 {
    let start = Loop.Instant.now
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/babeltrace2")
    process.arguments = [traceDir]
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    try? process.run()
    process.waitUntilExit()
    let seconds = Double(start.duration(to: .now).components.attoseconds) / 1e18 + Double(start.duration(to: .now).components.seconds)
    print("  " + "babeltrace2 TRACE > /dev/null (text)".padding(toLength: 52, withPad: " ", startingAt: 0) + String(format: "%8.2f M events/s (%.2f s)", Double(readerEvents) / seconds / 1e6, seconds))
} else {
    print("  babeltrace2 is not installed: no CLI comparison")
}
try? FileManager.default.removeItem(atPath: traceDir)

// tracebench: what tracing costs per event, and how fast traces are read back.
//
//   swift run -c release --package-path Benchmarks tracebench [--events N] [--rounds R] [--reader-events N]
//                                                              [--no-reader]
//
// Per event: the loop's own call path (a LoopEventSink method with a Context, dispatched through the
// LoopEventSink class as the loop dispatches it), side by side in one run, interleaved over rounds: an empty
// sink (the floor: loop and dispatch only), no sink installed (the branch the loop takes), the embedded recorder,
// and, when this build has the LTTng provider, the LTTng sink next to a C baseline calling the same `runloop`
// tracepoints directly, each without and with a session enabling them (see lttng.swift). Reader: a trace of
// --reader-events events written by the recorder, read by EmbeddedTraceReader and by the libbabeltrace2-based
// CTFTraceReader, against `babeltrace2 TRACE > /dev/null`.
import Foundation
import Glibc
import RunLoopCore
import TraceReading
import Tracing

var eventsPerRound = 2_000_000
var readerEvents = 10_000_000
var rounds = 5
var runReader = true
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--events": eventsPerRound = Int(arguments.next() ?? "") ?? eventsPerRound
    case "--reader-events": readerEvents = Int(arguments.next() ?? "") ?? readerEvents
    case "--rounds": rounds = Int(arguments.next() ?? "") ?? rounds
    case "--no-reader": runReader = false
    default:
        FileHandle.standardError.write(Data("usage: tracebench [--events N] [--rounds R] [--reader-events N] [--no-reader]\n".utf8))
        exit(2)
    }
}

nonisolated func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

nonisolated(unsafe) let modeName = strdup(Loop.Mode.default.name)!
@inline(__always)
nonisolated func context(_ iteration: UInt64, loopID: UInt64 = 1) -> LoopEventSink.Context {
    LoopEventSink.Context(loopID: loopID, modeCString: modeName, depth: 1, iteration: iteration)
}

/// Nanoseconds per event of `body`, which emits `count` events.
nonisolated func nanosecondsPerEvent(_ count: Int, _ body: () -> Void) -> Double {
    let start = Loop.Instant.now.nanoseconds
    body()
    return Double(Loop.Instant.now.nanoseconds &- start) / Double(count)
}

/// `count` before_timers events sent to `sink` the way a loop sends them: a dynamic call through the
/// LoopEventSink class with a fresh Context (never inlined, so the sink's concrete type stays unknown here).
@inline(never)
nonisolated func emitActivities(_ sink: LoopEventSink, _ count: Int, loopID: UInt64 = 1, from first: UInt64 = 0) {
    for i in first..<first + UInt64(count) { sink.activity(.beforeTimers, context(i, loopID: loopID)) }
}

/// What a loop pays per event with no sink installed: its `if let sink` branch.
@inline(never)
nonisolated func emitWithoutSink(_ count: Int) {
    for i in 0..<UInt64(count) {
        if let sink = LoopEventSink.current { sink.activity(.beforeTimers, context(i)) }
    }
}

// ===== per-event cost =====

/// One or more rows measured together: `run` returns nanoseconds per event for each of `rows`.
struct Peer {
    let rows: [PeerID]
    let run: (Int) -> [Double]

    /// `scale` multiplies the events of a round: rows of a few nanoseconds per event get ten times as many, so
    /// that a round lasts tens of milliseconds, like the others, rather than a few.
    init(_ row: PeerID, scale: Int = 1, run: @escaping (Int) -> Double) {
        rows = [row]
        self.run = { [run($0 * scale)] }
    }

    init(rows: [PeerID], run: @escaping (Int) -> [Double]) {
        self.rows = rows
        self.run = run
    }
}

/// The rows, in print order.
enum PeerID: String, CaseIterable {
    case emptySink = "empty LoopEventSink (loop + dispatch floor)"
    case noSink = "no sink installed (the loop's branch)"
    case recorder = "embedded recorder, recording"
    case swiftDisabled = "LTTng sink (Swift), no session enabled"
    case cDisabled = "C lttng_ust_tracepoint, no session enabled"
    case swiftEnabled = "LTTng sink (Swift), session enabled"
    case cEnabled = "C lttng_ust_tracepoint, session enabled"
}

let folder = NSTemporaryDirectory() + "tracebench-\(getpid())"
var recorderOptions = EmbeddedRecorder.Options()
recorderOptions.packetSize = 1 << 20
recorderOptions.packetsPerThread = 64
var recordedTotal: UInt64 = 0, lostTotal: UInt64 = 0
var firstEventTimes: [Double] = []
var clockReports: [EmbeddedRecorder.ClockReport] = []

var peers: [Peer] = [
    Peer(.emptySink, scale: 10) { count in
        let sink = LoopEventSink()
        return nanosecondsPerEvent(count) { emitActivities(sink, count) }
    },
    Peer(.noSink, scale: 10) { count in
        nanosecondsPerEvent(count) { emitWithoutSink(count) }
    },
    Peer(.recorder) { count in
        let dir = folder + "-\(UInt32.random(in: 0...UInt32.max))"
        let recorder = try! EmbeddedRecorder(directory: dir, options: recorderOptions)
        try! recorder.start()
        // A thread's first event allocates and populates its buffer (so that no later event takes a page
        // fault): a one-time cost per thread and recording, timed on its own, like the LTTng rows' session
        // set-up, which happens before their timing starts.
        firstEventTimes.append(nanosecondsPerEvent(1) { emitActivities(recorder, 1) })
        let ns = nanosecondsPerEvent(count) { emitActivities(recorder, count) }
        let summary = try! recorder.stop()
        recordedTotal += summary.eventsRecorded
        lostTotal += summary.eventsLost
        clockReports.append(recorder.clockReport)
        try? FileManager.default.removeItem(atPath: dir)
        return ns
    },
]
peers += lttngPeers()

print("tracebench — per-event cost, \(rounds) interleaved rounds × \(eventsPerRound) events per row (× 10 for the rows of a few ns) (release build)")
print("  every row emits runloop:before_timers (loop_id 1, 2 from C; mode \"\(String(cString: modeName))\"; iteration i; depth 1)")
var results: [PeerID: [Double]] = [:]
for round in 0..<rounds {
    for offset in 0..<peers.count {
        let peer = peers[(offset + round) % peers.count]
        for (row, ns) in zip(peer.rows, peer.run(eventsPerRound)) { results[row, default: []].append(ns) }
    }
}
var medians: [PeerID: Double] = [:]
for row in PeerID.allCases {
    guard let values = results[row] else { continue }
    medians[row] = median(values)
    let text = String(format: "%8.2f ns/event (rounds %@)", median(values),
                      values.map { String(format: "%.2f", $0) }.joined(separator: " "))
    print("  " + row.rawValue.padding(toLength: 46, withPad: " ", startingAt: 0) + text)
}
print("  embedded recorder: \(recordedTotal) events recorded, \(lostTotal) lost (expected \(rounds * (eventsPerRound + 1)), 0)")
print(String(format: "  embedded recorder: first event of a round (allocates and populates the thread's %d MiB buffer): median %.2f ms",
             (recorderOptions.packetSize * recorderOptions.packetsPerThread) >> 20, median(firstEventTimes) / 1e6))
if let tsc = clockReports.first?.usesTSC {
    let fallbacks = clockReports.reduce(0) { $0 + $1.fallbacks }
    print("  embedded recorder clock: " + (tsc || fallbacks > 0
        ? "TSC, \(fallbacks) fallbacks; drift at anchor renewals: max \(clockReports.map(\.maxLeadNanoseconds).max()!) ns ahead, \(clockReports.map(\.maxLagNanoseconds).max()!) ns behind CLOCK_MONOTONIC"
        : "clock_gettime per event (TSC not eligible here, or RLCTL_RECORDER_CLOCK=clock_gettime)"))
}
printLTTngReport(medians: medians, results: results)

// ===== reader throughput =====

guard runReader else { exit(0) }
print("\nreader throughput on a \(readerEvents)-event trace written by the embedded recorder")
let traceDir = folder + "-reader"
do {
    var options = EmbeddedRecorder.Options()
    options.packetSize = 1 << 20
    options.packetsPerThread = 256
    let recorder = try EmbeddedRecorder(directory: traceDir, options: options)
    try recorder.start()
    for i in 0..<UInt64(readerEvents / 4) {
        recorder.activity(.beforeTimers, context(i))
        recorder.timerFireBegin(context(i), timerID: 7, scheduled: i, tolerance: 0, interval: 1_000_000, missed: 0)
        recorder.timerFireEnd(context(i), timerID: 7)
        recorder.wakeUp(context(i), reason: .timer, slept: 1000)
    }
    let summary = try recorder.stop()
    print("  written: \(summary.eventsRecorded) events, \(summary.eventsLost) lost, \(summary.bytesWritten / 1_000_000) MB")
}

func seconds(since start: UInt64) -> Double { Double(Loop.Instant.now.nanoseconds &- start) / 1e9 }

func timeReader(_ name: String, _ open: () throws -> any TraceEventReader) {
    do {
        var reader = try open()
        let start = Loop.Instant.now.nanoseconds
        var count = 0
        while try reader.next() != nil { count += 1 }
        let elapsed = seconds(since: start)
        print("  " + name.padding(toLength: 46, withPad: " ", startingAt: 0) + String(format: "%8.2f M events/s (%d events in %.2f s)", Double(count) / elapsed / 1e6, count, elapsed))
    } catch {
        print("  \(name): \(error)")
    }
}

timeReader("EmbeddedTraceReader") { try EmbeddedTraceReader(path: traceDir) }
timeReader("CTFTraceReader (libbabeltrace2)") { try CTFTraceReader(path: traceDir) }
if let babeltrace2 = LTTngTools.path(of: "babeltrace2") {
    let start = Loop.Instant.now.nanoseconds
    let process = Process()
    process.executableURL = URL(fileURLWithPath: babeltrace2)
    process.arguments = [traceDir]
    process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
    try? process.run()
    process.waitUntilExit()
    let elapsed = seconds(since: start)
    print("  " + "babeltrace2 TRACE > /dev/null (text)".padding(toLength: 46, withPad: " ", startingAt: 0) + String(format: "%8.2f M events/s (%.2f s)", Double(readerEvents) / elapsed / 1e6, elapsed))
} else {
    print("  babeltrace2 is not installed: no CLI comparison")
}
try? FileManager.default.removeItem(atPath: traceDir)

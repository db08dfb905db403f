// stallbench: what watching for stalls (Loop.stallThreshold, `loop_stall`) costs a loop, per iteration.
//
//   swift run -c release --package-path Benchmarks stallbench [--iterations N] [--rounds R]
//
// One RunLoopCore loop whose only source re-signals itself from its perform: every iteration is one callout and
// a poll, the busiest a loop gets, so the watch's share is as large as it ever is. Variants, interleaved over
// rounds (the order rotating each round), medians reported:
//   - no tracer, no threshold / no tracer, a threshold: the claim that a threshold costs nothing untraced;
//   - embedded recorder, without / with a threshold (1 s: never passed, so what is measured is the watch, not
//     the reports): the recorder's own timestamps time the callout;
//   - an empty sink (LoopEventSink's default: it cannot tell its timestamps, as LTTng cannot), without / with a
//     threshold: the loop reads the clock around the callout itself, what LTTng adds to its own cost.
import Foundation
import Glibc
import RunLoopCore
import Tracing

var iterations = 1_000_000
var rounds = 7
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--iterations": iterations = Int(arguments.next() ?? "") ?? -1
    case "--rounds": rounds = Int(arguments.next() ?? "") ?? -1
    default: iterations = -1
    }
}
guard iterations > 0, rounds > 0 else {
    FileHandle.standardError.write(Data("usage: stallbench [--iterations N > 0] [--rounds R > 0]\n".utf8))
    exit(2)
}

enum Tracer: String { case none = "no tracer", recorder = "embedded recorder", empty = "empty sink (no timestamps)" }

struct Variant: Hashable {
    let tracer: Tracer
    let watches: Bool
    var name: String { "\(tracer.rawValue), \(watches ? "threshold 1s" : "no threshold")" }
}

/// Nanoseconds per iteration of `count` iterations of a loop whose source re-signals itself.
func measure(_ variant: Variant, _ count: Int) -> Double {
    var recorder: EmbeddedRecorder?
    let folder = NSTemporaryDirectory() + "stallbench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    switch variant.tracer {
    case .none: LoopEventSink.install(nil)
    case .empty: LoopEventSink.install(LoopEventSink())
    case .recorder:
        var options = EmbeddedRecorder.Options()
        options.packetSize = 1 << 20
        options.packetsPerThread = 64
        options.mode = .overwrite   // a ring: no writer thread competing for the 2 cores, nothing dropped
        recorder = try! EmbeddedRecorder(directory: folder, options: options)
        try! recorder!.start()
        LoopEventSink.install(recorder)
    }
    Loop.stallThreshold = variant.watches ? .seconds(1) : nil
    let loop = Loop.current
    let remaining = Counter(count)
    let source = LoopSource(label: "resignal") {
        if remaining.decrement() > 0 { remaining.source?.signal() } else { loop.stop() }
    }
    remaining.source = source
    loop.add(source, forMode: .default)
    source.signal()
    let start = Loop.Instant.now.nanoseconds
    loop.run(mode: .default, timeout: .seconds(600))
    let ns = Double(Loop.Instant.now.nanoseconds &- start) / Double(count)
    loop.remove(source, forMode: .default)
    LoopEventSink.install(nil)
    Loop.stallThreshold = nil
    if let recorder {
        _ = try? recorder.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }
    return ns
}

final class Counter: @unchecked Sendable {
    var value: Int
    weak var source: LoopSource?
    init(_ value: Int) { self.value = value }
    func decrement() -> Int { value -= 1; return value }
}

let variants = [Tracer.none, .recorder, .empty].flatMap { [Variant(tracer: $0, watches: false), Variant(tracer: $0, watches: true)] }
_ = measure(variants[2], 10_000)   // warm-up: the recorder's first buffer, the loop's first allocations
var results: [Variant: [Double]] = [:]
for round in 0..<rounds {
    for offset in 0..<variants.count {
        let variant = variants[(offset + round) % variants.count]
        results[variant, default: []].append(measure(variant, iterations))
    }
}
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
print("stallbench — ns per loop iteration (one custom-source callout, a poll), \(rounds) interleaved rounds × \(iterations) iterations (release build)")
for variant in variants {
    let values = results[variant]!
    print("  " + variant.name.padding(toLength: 54, withPad: " ", startingAt: 0)
          + String(format: "%8.1f ns (rounds %@)", median(values), values.map { String(format: "%.1f", $0) }.joined(separator: " ")))
}
print("  added by a threshold (median of per-round differences, ns per iteration; per-round ratio median):")
for tracer in [Tracer.none, .recorder, .empty] {
    let off = results[Variant(tracer: tracer, watches: false)]!, on = results[Variant(tracer: tracer, watches: true)]!
    let differences = zip(on, off).map { $0 - $1 }, ratios = zip(on, off).map { $0 / $1 }
    print("  " + tracer.rawValue.padding(toLength: 54, withPad: " ", startingAt: 0)
          + String(format: "%+8.1f ns  ×%.3f", median(differences), median(ratios)))
}

// metricsbench: what RunLoopMetrics costs a loop, per iteration, and whether it allocates.
//
//   swift run -c release --package-path Benchmarks metricsbench [--iterations N] [--rounds R] [--only VARIANT]
//
// One RunLoopCore loop whose only source re-signals itself from its perform (stallbench's loop): every iteration
// is one callout and a poll, the busiest a loop gets, so the metrics' share is as large as it ever is (each
// callout records a wake-up delay). Variants, interleaved over rounds (the order rotating each round), medians:
//   - no sink: the loop alone;
//   - an empty sink: what any installed sink costs the loop (the seam's calls, a signal's timestamp);
//   - metrics, no backend: attached with swift-metrics' no-op factory (an application that never bootstrapped);
//   - metrics on swift-prometheus: attached with a PrometheusMetricsFactory of its own registry;
//   - metrics on a summing backend (each instrument one atomic sum): RunLoopMetrics' own share, without a real
//     backend's record;
//   - the embedded recorder (a flight recorder: nothing written while the loop runs), and the same with metrics on
//     swift-prometheus over it: what metrics add to a loop that is traced already (they take the recorder's
//     timestamps instead of reading the clock).
// Each variant's wall time per iteration (the loop's thread) and the process's CPU time per iteration (every thread's:
// the metrics' updater records the delays the loop's thread kept). With the malloc interposer built in (the
// default), each variant's mallocs per iteration over a whole round.
import CoreMetrics
import Foundation
import Glibc
#if canImport(MallocInterposerSwift)
import MallocInterposerSwift
#endif
import Prometheus
import RunLoopCore
import RunLoopMetrics
import Synchronization
import Tracing

var iterations = 1_000_000
var rounds = 7
var exposition = false
var only: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--iterations": iterations = Int(arguments.next() ?? "") ?? -1
    case "--rounds": rounds = Int(arguments.next() ?? "") ?? -1
    case "--exposition": exposition = true
    case "--only": only = arguments.next() ?? ""   // one variant (Variant.names), for a profiler
    default: iterations = -1
    }
}

// --exposition: what Prometheus scrapes from one attached loop (a few timer callouts, one 60 ms stall), as
// docs/metrics.md shows it.
if exposition {
    let registry = PrometheusCollectorRegistry()
    Loop.stallThreshold = .milliseconds(50)
    let loop = Loop.current
    let handle = LoopMetrics.attach(to: loop, factory: PrometheusMetricsFactory(registry: registry))
    let fired = Countdown(5)
    let timer = LoopTimer(after: .milliseconds(1), interval: .milliseconds(2), label: "tick") { timer in
        if fired.decrement() == 2 { usleep(60_000) }
        if fired.value == 0 { timer.invalidate() }
    }
    loop.add(timer, forMode: .default)
    _ = loop.run(mode: .default, timeout: .milliseconds(200))
    handle.update()
    var buffer: [UInt8] = []
    registry.emit(into: &buffer)
    print(String(decoding: buffer, as: UTF8.self), terminator: "")
    handle.detach()
    exit(0)
}
guard iterations > 0, rounds > 0 else {
    FileHandle.standardError.write(Data("usage: metricsbench [--iterations N > 0] [--rounds R > 0]\n".utf8))
    exit(2)
}

enum Variant: String, CaseIterable {
    static var names: [String: Variant] {
        ["none": .none, "empty": .empty, "noop": .noop, "summing": .summing, "prometheus": .prometheus, "traced": .traced,
         "traced-prometheus": .tracedPrometheus]
    }

    case none = "no sink"
    case empty = "an empty sink"
    case noop = "metrics, no backend"
    case summing = "metrics on a summing backend"
    case prometheus = "metrics on swift-prometheus"
    case traced = "embedded recorder"
    case tracedPrometheus = "embedded recorder + metrics"
}

/// The least a backend can do: every instrument one atomic sum (what RunLoopMetrics costs without a real backend's
/// record).
final class SummingMetrics: MetricsFactory, CounterHandler, FloatingPointCounterHandler, MeterHandler, RecorderHandler,
    TimerHandler, @unchecked Sendable {
    let total = Atomic<Int64>(0)
    func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler { self }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> FloatingPointCounterHandler { self }
    func makeMeter(label: String, dimensions: [(String, String)]) -> MeterHandler { self }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler { self }
    func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler { self }
    func destroyCounter(_ handler: CounterHandler) {}
    func destroyMeter(_ handler: MeterHandler) {}
    func destroyFloatingPointCounter(_ handler: FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: RecorderHandler) {}
    func destroyTimer(_ handler: TimerHandler) {}
    func increment(by amount: Int64) { total.add(amount, ordering: .relaxed) }
    func increment(by amount: Double) { total.add(Int64(amount), ordering: .relaxed) }
    func decrement(by amount: Double) { total.subtract(Int64(amount), ordering: .relaxed) }
    func reset() {}
    func set(_ value: Int64) { total.add(value, ordering: .relaxed) }
    func set(_ value: Double) { total.add(Int64(value), ordering: .relaxed) }
    func record(_ value: Int64) { total.add(value, ordering: .relaxed) }
    func record(_ value: Double) { total.add(Int64(value), ordering: .relaxed) }
    func recordNanoseconds(_ duration: Int64) { total.add(duration, ordering: .relaxed) }
}

/// A flight-recorder recording's folder, removed when the bench ends.
nonisolated let traceFolder = NSTemporaryDirectory() + "metricsbench-\(getpid())"
atexit { try? FileManager.default.removeItem(atPath: traceFolder) }
nonisolated var flightRecorder: EmbeddedRecorder.Options {
    var options = EmbeddedRecorder.Options()
    options.mode = .overwrite
    return options
}

final class Countdown: @unchecked Sendable {
    var value: Int
    weak var source: LoopSource?
    init(_ value: Int) { self.value = value }
    func decrement() -> Int { value -= 1; return value }
}

/// The process's CPU time so far (every thread's: the metrics' updater records the loop's delays on its own).
func processCPUNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

struct Measurement {
    /// Wall time per iteration: what the loop's thread spends.
    var nanoseconds: Double
    /// The process's CPU time per iteration, every thread's.
    var cpuNanoseconds: Double
    var mallocs: Double?
}

/// Nanoseconds and mallocs per iteration of `count` iterations of a loop whose source re-signals itself.
func measure(_ variant: Variant, _ count: Int) -> Measurement {
    let loop = Loop.current
    var handle: LoopMetricsHandle?
    var recording: Recording?
    if variant == .traced || variant == .tracedPrometheus {
        try? FileManager.default.removeItem(atPath: traceFolder)
        do { recording = try Recording.start(.embedded(flightRecorder), into: traceFolder) } catch {
            FileHandle.standardError.write(Data("metricsbench: cannot record: \(error)\n".utf8))
            exit(1)
        }
    }
    switch variant {
    case .none: LoopEventSink.install(nil)
    case .empty: LoopEventSink.install(LoopEventSink())
    case .noop: handle = LoopMetrics.attach(to: loop, factory: NOOPMetricsHandler.instance)
    case .summing: handle = LoopMetrics.attach(to: loop, factory: SummingMetrics())
    case .prometheus, .tracedPrometheus:
        handle = LoopMetrics.attach(to: loop, factory: PrometheusMetricsFactory(registry: PrometheusCollectorRegistry()))
    case .traced: break
    }
    let remaining = Countdown(count)
    let source = LoopSource(label: "resignal") {
        if remaining.decrement() > 0 { remaining.source?.signal() } else { loop.stop() }
    }
    remaining.source = source
    loop.add(source, forMode: .default)
    source.signal()
    #if canImport(MallocInterposerSwift)
    MallocInterposerSwift.reset()
    MallocInterposerSwift.hook()
    #endif
    let start = Loop.Instant.now.nanoseconds
    let cpuStart = processCPUNanoseconds()
    loop.run(mode: .default, timeout: .seconds(600))
    let ns = Double(Loop.Instant.now.nanoseconds &- start) / Double(count)
    // The updater's share of this round: what it still holds is recorded now, on the clock.
    handle?.update()
    let cpu = Double(processCPUNanoseconds() &- cpuStart) / Double(count)
    var mallocs: Double?
    #if canImport(MallocInterposerSwift)
    MallocInterposerSwift.unhook()
    mallocs = Double(MallocInterposerSwift.getStatistics().mallocCount) / Double(count)
    #endif
    loop.remove(source, forMode: .default)
    handle?.detach()
    if let recording { _ = try? recording.stop() }
    LoopEventSink.install(nil)
    return Measurement(nanoseconds: ns, cpuNanoseconds: cpu, mallocs: mallocs)
}

if let only {
    guard let variant = Variant.names[only] else {
        FileHandle.standardError.write(Data("metricsbench: --only none|empty|noop|summing|prometheus|traced|traced-prometheus\n".utf8))
        exit(2)
    }
    _ = measure(variant, 10_000)
    let result = (0..<rounds).map { _ in measure(variant, iterations).nanoseconds }
    print("\(variant.rawValue): " + result.map { String(format: "%.1f ns", $0) }.joined(separator: " "))
    exit(0)
}
for variant in Variant.allCases { _ = measure(variant, 10_000) }   // warm-up: first allocations of each path
var results: [Variant: [Measurement]] = [:]
for round in 0..<rounds {
    for offset in 0..<Variant.allCases.count {
        let variant = Variant.allCases[(offset + round) % Variant.allCases.count]
        results[variant, default: []].append(measure(variant, iterations))
    }
}
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
print("metricsbench — ns per loop iteration (one custom-source callout, a poll), \(rounds) interleaved rounds × \(iterations) iterations (release build)")
for variant in Variant.allCases {
    let values = results[variant]!
    let mallocs = values.compactMap(\.mallocs)
    print("  " + variant.rawValue.padding(toLength: 30, withPad: " ", startingAt: 0)
          + String(format: "%8.1f ns  %8.1f CPU ns", median(values.map(\.nanoseconds)), median(values.map(\.cpuNanoseconds)))
          + (mallocs.isEmpty ? "" : String(format: "  %6.3f mallocs", median(mallocs)))
          + "  (rounds " + values.map { String(format: "%.1f", $0.nanoseconds) }.joined(separator: " ") + ")")
}
print("  added per iteration (median of per-round differences):")
for (variant, base) in [(Variant.noop, Variant.none), (.noop, .empty), (.summing, .none), (.prometheus, .none), (.prometheus, .empty), (.traced, .none),
                        (.tracedPrometheus, .traced)] {
    let differences = zip(results[variant]!, results[base]!).map { $0.nanoseconds - $1.nanoseconds }
    let cpu = zip(results[variant]!, results[base]!).map { $0.cpuNanoseconds - $1.cpuNanoseconds }
    print("  " + "\(variant.rawValue) − \(base.rawValue)".padding(toLength: 50, withPad: " ", startingAt: 0)
          + String(format: "%+8.1f ns  %+8.1f CPU ns", median(differences), median(cpu)))
}

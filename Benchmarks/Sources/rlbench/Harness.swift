import CBenchSupport
import Dispatch
import Glibc
import Synchronization

// Shared plumbing: threads, the clock, percentiles, interleaved rounds and table printing.

// ===== clock =====

/// CLOCK_MONOTONIC in nanoseconds. Every peer is timed on this one clock (RunLoopCore's `Loop.Instant`, NIO's
/// `NIODeadline` and timerfd all use it), so differences between peers are never clock artefacts.
@inline(__always)
func nowNanoseconds() -> UInt64 { cb_now_ns() }

func sleepNanoseconds(_ nanoseconds: UInt64) { cb_sleep_ns(nanoseconds) }

// ===== threads =====

private final class ThreadStart {
    let name: String
    let body: () -> Void
    init(name: String, body: @escaping () -> Void) {
        self.name = name
        self.body = body
    }
}

/// A plain pthread, so that each peer's loop lives on a fresh thread of its own (RunLoopCore and Foundation
/// both create the thread's loop on first use and tear it down when the thread exits).
struct BenchThread: @unchecked Sendable {
    private let handle: pthread_t

    /// Starts `body` on a new thread named `name` (truncated to the kernel's 15 characters).
    init(name: String, _ body: @escaping @Sendable () -> Void) {
        let start = Unmanaged.passRetained(ThreadStart(name: name, body: body)).toOpaque()
        var handle = pthread_t()
        let rc = pthread_create(&handle, nil, { argument in
            let start = Unmanaged<ThreadStart>.fromOpaque(argument!).takeRetainedValue()
            cb_set_thread_name(start.name)
            start.body()
            return nil
        }, start)
        precondition(rc == 0, "rlbench: pthread_create failed (\(rc))")
        self.handle = handle
    }

    func join() {
        pthread_join(handle, nil)
    }

    /// Runs `body` on a new thread and waits for it to finish.
    static func run(name: String, _ body: @escaping @Sendable () -> Void) {
        BenchThread(name: name, body).join()
    }
}

/// Hands a value that is not `Sendable` to another thread when the benchmark's own protocol (a semaphore, a
/// join) already orders the accesses.
final class Handoff<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// A flag one thread raises and another polls.
final class StopFlag: Sendable {
    private let raised = Atomic<Bool>(false)
    func set() { raised.store(true, ordering: .releasing) }
    var isSet: Bool { raised.load(ordering: .acquiring) }
}

/// A one-time "the thread has set itself up" signal carrying a value.
final class Published<Value>: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private var stored: Value?

    func publish(_ value: Value) {
        stored = value
        semaphore.signal()
    }

    func wait() -> Value {
        semaphore.wait()
        return stored!
    }
}

// ===== statistics =====

/// Nearest-rank percentile of an ascending array (`p` in 0...1).
func percentile<T: BinaryInteger>(_ sorted: [T], _ p: Double) -> T {
    precondition(!sorted.isEmpty, "rlbench: percentile of no samples")
    let rank = Int((p * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank, 1), sorted.count) - 1]
}

func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty, "rlbench: median of no values")
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// The latency figures of one peer in one round, in nanoseconds.
struct LatencyRound {
    var p50: Double
    var p99: Double
    var max: Double

    init(latencies: [Int64]) {
        let sorted = latencies.sorted()
        p50 = Double(percentile(sorted, 0.50))
        p99 = Double(percentile(sorted, 0.99))
        max = Double(sorted.last!)
    }
}

/// Rounds of one peer, summarised as the median of the per-round figures (the worst round for the maximum),
/// which keeps one noisy round on a shared machine from deciding the result.
struct LatencySummary {
    var p50: Double
    var p99: Double
    var max: Double
    /// The lowest and highest per-round figures: how much of a difference between peers is noise.
    var p50Range: ClosedRange<Double>
    var p99Range: ClosedRange<Double>

    init(_ rounds: [LatencyRound]) {
        p50 = median(rounds.map(\.p50))
        p99 = median(rounds.map(\.p99))
        max = rounds.map(\.max).max()!
        p50Range = rounds.map(\.p50).min()!...rounds.map(\.p50).max()!
        p99Range = rounds.map(\.p99).min()!...rounds.map(\.p99).max()!
    }
}

// ===== interleaving =====

/// Runs every peer once per round, rotating the order each round, so that slow drifts of a noisy machine
/// (other tenants, frequency changes) spread over all peers instead of landing on whichever ran last.
func interleave<Result>(section: String, rounds: Int, peers: [String],
                        _ measure: (_ peer: Int) -> Result) -> [[Result]] {
    var results = Array(repeating: [Result](), count: peers.count)
    for round in 0..<rounds {
        for step in 0..<peers.count {
            let peer = (step + round) % peers.count
            progress("\(section): round \(round + 1)/\(rounds), \(peers[peer])")
            results[peer].append(measure(peer))
        }
    }
    return results
}

/// Progress goes to stderr so that stdout holds only the report.
func progress(_ message: String) {
    var line = "  … " + message + "\n"
    line.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}

// ===== formatting =====

func formatMicroseconds(_ nanoseconds: Double) -> String {
    String(format1: nanoseconds / 1_000, digits: nanoseconds < 10_000 ? 2 : 1) + " µs"
}

/// A per-round spread in microseconds, "12–34".
func formatRange(_ range: ClosedRange<Double>) -> String {
    func short(_ nanoseconds: Double) -> String {
        String(format1: nanoseconds / 1_000, digits: nanoseconds < 10_000 ? 1 : 0)
    }
    return short(range.lowerBound) + "–" + short(range.upperBound)
}

func formatRatio(_ ratio: Double) -> String {
    ratio.isFinite ? String(format1: ratio, digits: 2) + "x" : "n/a"
}

func formatCount(_ value: Double) -> String {
    if value >= 1_000_000 { return String(format1: value / 1_000_000, digits: 2) + " M" }
    if value >= 1_000 { return String(format1: value / 1_000, digits: 1) + " k" }
    return String(format1: value, digits: 0)
}

extension String {
    /// A fixed-point rendering without Foundation's `String(format:)`.
    init(format1 value: Double, digits: Int) {
        guard value.isFinite else {
            self = "n/a"
            return
        }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        let whole = Int(scaled / scale)
        let fraction = Int(scaled - Double(whole) * scale)
        var text = (value < 0 && scaled != 0 ? "-" : "") + String(whole)
        if digits > 0 {
            let fractionText = String(fraction)
            text += "." + String(repeating: "0", count: digits - fractionText.count) + fractionText
        }
        self = text
    }
}

/// A plain-text table: the first column left-aligned (names), the others right-aligned (figures).
struct Table {
    let title: String
    let headers: [String]
    var rows: [[String]] = []
    var notes: [String] = []

    init(_ title: String, headers: [String]) {
        self.title = title
        self.headers = headers
    }

    /// Latency peers side by side: p50, p99, max, the per-round ranges, and the first peer's ratios to each other
    /// (`ours` names it in the ratio columns).
    init(latencies title: String, peers: [String], _ summaries: [LatencySummary], ours: String) {
        self.init(title, headers: ["peer", "p50", "p99", "max", "p50 rounds", "p99 rounds", "\(ours)/peer p50", "\(ours)/peer p99"])
        let first = summaries[0]
        for (index, name) in peers.enumerated() {
            let summary = summaries[index]
            add([name, formatMicroseconds(summary.p50), formatMicroseconds(summary.p99), formatMicroseconds(summary.max),
                 formatRange(summary.p50Range), formatRange(summary.p99Range),
                 index == 0 ? "—" : formatRatio(first.p50 / summary.p50),
                 index == 0 ? "—" : formatRatio(first.p99 / summary.p99)])
        }
    }

    mutating func add(_ row: [String]) {
        precondition(row.count == headers.count, "rlbench: table row has \(row.count) cells, expected \(headers.count)")
        rows.append(row)
    }

    func print() {
        var widths = headers.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = Swift.max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                let pad = String(repeating: " ", count: widths[index] - cell.count)
                return index == 0 ? cell + pad : pad + cell
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
        Swift.print("")
        Swift.print(title)
        Swift.print(String(repeating: "=", count: title.count))
        Swift.print(line(headers))
        Swift.print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        for row in rows { Swift.print(line(row)) }
        for note in notes { Swift.print(note) }
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}

/// A goal line: what was asked, the figures, and whether it was met.
func goal(_ text: String, met: Bool, detail: String) -> String {
    "  goal \(met ? "MET    " : "NOT MET") \(text): \(detail)"
}

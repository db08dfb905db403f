import RunLoopCore
import Synchronization

/// Measures, live and in-process, how late timer callouts start and how long blocks wait in the queue.
///
/// A `LoopEventSink` for one loop thread at a time: `timerFireBegin` and `blockBegin` run on the loop's thread,
/// and `report` is called on the same thread after the run.
public final class CalloutLatencyRecorder: LoopEventSink, @unchecked Sendable {
    private var timerLateness: [UInt64] = []
    private var blockWait: [UInt64] = []
    private var missed: UInt64 = 0

    public override init() {
        timerLateness.reserveCapacity(1 << 16)
        blockWait.reserveCapacity(1 << 16)
    }

    public override func timerFireBegin(_ context: Context, timerID: UInt64, scheduled: UInt64, tolerance: UInt64,
                                        interval: UInt64, missed: UInt64) {
        timerLateness.append(Loop.Instant.now.nanoseconds &- scheduled)
        self.missed += missed
    }

    public override func blockBegin(_ context: Context, blockID: UInt64, enqueued: UInt64) {
        if enqueued != 0 { blockWait.append(Loop.Instant.now.nanoseconds &- enqueued) }
    }

    /// A text report of what was measured.
    public func report(title: String, wakeUps: UInt64, iterations: UInt64) -> String {
        var lines = [title, "  iterations: \(iterations), sleeps: \(wakeUps)"]
        if !timerLateness.isEmpty {
            lines.append("  timer firings: \(timerLateness.count), missed grid slots: \(missed)")
            lines.append("  timer lateness: " + Self.percentiles(timerLateness))
        }
        if !blockWait.isEmpty {
            lines.append("  blocks run: \(blockWait.count)")
            lines.append("  block queue wait: " + Self.percentiles(blockWait))
        }
        return lines.joined(separator: "\n")
    }

    static func percentiles(_ values: [UInt64]) -> String {
        let sorted = values.sorted()
        func at(_ q: Double) -> String {
            formatNanoseconds(sorted[min(sorted.count - 1, Int((Double(sorted.count) * q).rounded(.down)))])
        }
        return "min \(formatNanoseconds(sorted[0]))  p50 \(at(0.5))  p90 \(at(0.9))  p99 \(at(0.99))  max \(formatNanoseconds(sorted[sorted.count - 1]))"
    }
}

/// A nanosecond count in the largest unit that keeps it readable (`850ns`, `12.3us`, `4.56ms`, `1.20s`).
public func formatNanoseconds(_ value: UInt64) -> String {
    let v = Double(value)
    if value < 1_000 { return "\(value)ns" }
    if value < 1_000_000 { return String(format3(v / 1e3)) + "us" }
    if value < 1_000_000_000 { return String(format3(v / 1e6)) + "ms" }
    return String(format3(v / 1e9)) + "s"
}

private func format3(_ value: Double) -> String {
    let digits = value >= 100 ? 0 : (value >= 10 ? 1 : 2)
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    return digits == 0 ? String(Int(rounded)) : String(rounded)
}

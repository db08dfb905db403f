import Foundation

/// `rlctl top`'s table: a status line, then one row per loop in the chosen order.
public enum LiveTopTable {
    public static func text(_ interval: LiveInterval, order: LiveLoopOrder, relay: String, interval length: String,
                            width: Int = 132) -> String {
        var out = ["rlctl top — \(relay), \(interval.sessions) session(s), \(interval.rows.count) loop(s), every \(length), sorted by \(order.rawValue)"
                   + (interval.problem.map { " — \($0)" } ?? "") + kernelStatus(interval)]
        let headers = ["host", "pid", "program", "thread", "loop", "kind", "util", "run queue", "throttled", "iter/s", "wake p99", "late",
                       "worst stall", "lost"]
        let rows = order.sorted(interval.rows).map { row -> [String] in
            [row.host, row.processID == 0 ? "-" : String(row.processID), row.program ?? "-", String(row.threadID),
             "\(row.loopID)" + (row.name.map { " \($0)" } ?? ""), row.kind,
             String(format: "%.1f%%", row.utilization * 100),
             row.runQueueShare.map { String(format: "%.1f%%", $0 * 100) } ?? "-",
             row.throttledShare.map { String(format: "%.1f%%", $0 * 100) } ?? "-",
             String(format: "%.0f", row.iterationsPerSecond),
             row.wakeLatencyP99Nanoseconds.map { formatNanoseconds(Double($0)) } ?? "-", late(row),
             row.worstStallNanoseconds.map { formatNanoseconds(Double($0)) } ?? "-", lost(row)]
        }
        let table = [headers] + rows
        let widths = headers.indices.map { column in table.map { $0[column].count }.max()! + 2 }
        // Too wide for the screen: the least important columns go first, never the loop and its utilization.
        var shown = Array(headers.indices)
        for dropped in columnsByImportance.dropFirst(3).reversed() where shown.map({ widths[$0] }).reduce(0, +) > width {
            if let column = headers.firstIndex(of: dropped) { shown.removeAll { $0 == column } }
        }
        let leftAligned = Set(["host", "pid", "program", "thread", "loop", "kind"])
        out += table.map { cells in
            String(shown.map { column in
                leftAligned.contains(headers[column]) ? cells[column].padded(widths[column]) : cells[column].leftPad(widths[column])
            }.joined().prefix(width))
        }
        if rows.isEmpty && interval.notShown.isEmpty {
            out.append(interval.sessions == 0 ? "(\(interval.nothingToWatch))" : "(no loop ran in the last interval)")
        }
        out += interval.notShown.map { "not shown: \($0)" }
        return out.joined(separator: "\n")
    }

    /// The columns, most important first: on a narrow screen the last ones are left out first (the host when there
    /// is one, the throttled share, which the run queue includes, …) and the loop, its program and its
    /// utilization stay.
    static let columnsByImportance = ["loop", "util", "program", "pid", "worst stall", "run queue", "lost", "wake p99", "late",
                                      "iter/s", "kind", "thread", "throttled", "host"]

    /// What the columns mean, under the table on the interactive screen.
    public static let legend = [
        "util: busy share of the interval · run queue: runnable, waiting for a CPU (kernel view) · throttled: of that, held by a CPU quota",
        "wake p99: worst wake-up latency p99 · late: late wake-ups' time and its largest cause (kernel view) · worst stall: busiest iteration over --stall",
        "lost: events the tracer lost (+ kernel records)",
        "sessions: the recordings followed (embedded recordings' folders, LTTng live sessions) · keys: q quit, u r i l s x sort",
    ]

    /// The late wake-ups' time the kernel view explained in the interval and its largest cause ("12.0ms throttled"),
    /// "0" when none was late, "-" without a kernel view of the loop.
    private static func late(_ row: LiveLoopRow) -> String {
        guard let late = row.lateTime else { return "-" }
        guard late.totalNanoseconds > 0, let largest = late.byLabel.max(by: { $0.nanoseconds < $1.nanoseconds }) else { return "0" }
        return "\(formatNanoseconds(Double(late.totalNanoseconds))) \(largest.cause.replacingOccurrences(of: "_", with: " "))"
    }

    /// The tracer's losses, and the kernel recorder's beside them when it lost any: "12", "12 +3 kernel".
    private static func lost(_ row: LiveLoopRow) -> String {
        guard let kernel = row.kernelLostRecords, kernel > 0 else { return String(row.lostEvents) }
        return "\(row.lostEvents) +\(kernel) kernel"
    }

    /// Said once for every row: why the run-queue column is empty, or the kernel recorder's losses.
    private static func kernelStatus(_ interval: LiveInterval) -> String {
        switch interval.kernel {
        case .notAvailable(let reason): return " — run queue: not available (\(reason))"
        case .on where interval.kernelLostRecords > 0: return " — kernel view lost \(interval.kernelLostRecords) record(s): its shares are lower bounds"
        case .on: return ""
        }
    }

    /// One line of JSON: the status and the rows in the chosen order. The kernel columns are null on every row
    /// when the kernel view is not on, and `kernel.unavailableReason` says why, once.
    public static func json(_ interval: LiveInterval, order: LiveLoopOrder) throws -> String {
        struct Kernel: Encodable {
            var status: String
            var unavailableReason: String?
            var lostRecords: UInt64?
        }
        struct Row: Encodable {
            var row: LiveLoopRow
            enum Keys: String, CodingKey { case runQueueShare, throttledShare, kernelLostRecords, lateTime }
            func encode(to encoder: any Encoder) throws {
                try row.encode(to: encoder)
                // Written as null, not left out, so that a script finds the column on every row.
                var kernel = encoder.container(keyedBy: Keys.self)
                try kernel.encode(JSONNumber(row.runQueueShare), forKey: .runQueueShare)
                try kernel.encode(JSONNumber(row.throttledShare), forKey: .throttledShare)
                try kernel.encode(row.kernelLostRecords, forKey: .kernelLostRecords)
                try kernel.encode(row.lateTime, forKey: .lateTime)
            }
        }
        struct Document: Encodable {
            var sessions: Int
            var problem: String?
            var kernel: Kernel
            var loops: [Row]
            var notShown: [String]
        }
        let kernel: Kernel
        switch interval.kernel {
        case .on: kernel = Kernel(status: "on", lostRecords: interval.kernelLostRecords)
        case .notAvailable(let reason): kernel = Kernel(status: "not available", unavailableReason: reason)
        }
        return ReportJSON.line(Document(sessions: interval.sessions, problem: interval.problem, kernel: kernel,
                                        loops: order.sorted(interval.rows).map { Row(row: $0) }, notShown: interval.notShown))
    }
}

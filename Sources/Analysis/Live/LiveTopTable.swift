import Foundation

/// `rlctl top`'s table: a status line, then one row per loop in the chosen order.
public enum LiveTopTable {
    public static func text(_ interval: LiveInterval, order: LiveLoopOrder, relay: String, interval length: String,
                            width: Int = 132) -> String {
        var out = ["rlctl top — \(relay), \(interval.sessions) session(s), \(interval.rows.count) loop(s), every \(length), sorted by \(order.rawValue)"
                   + (interval.problem.map { " — \($0)" } ?? "") + kernelStatus(interval)]
        let headers = ["host", "pid", "thread", "loop", "kind", "util", "run queue", "throttled", "iter/s", "wake p99", "worst stall", "lost"]
        let rows = order.sorted(interval.rows).map { row -> [String] in
            [row.host, row.processID == 0 ? "-" : String(row.processID), String(row.threadID),
             "\(row.loopID)" + (row.name.map { " \($0)" } ?? ""), row.kind,
             String(format: "%.1f%%", row.utilization * 100),
             row.runQueueShare.map { String(format: "%.1f%%", $0 * 100) } ?? "-",
             row.throttledShare.map { String(format: "%.1f%%", $0 * 100) } ?? "-",
             String(format: "%.0f", row.iterationsPerSecond),
             row.wakeLatencyP99Nanoseconds.map { formatNanoseconds(Double($0)) } ?? "-",
             row.worstStallNanoseconds.map { formatNanoseconds(Double($0)) } ?? "-", lost(row)]
        }
        let table = [headers] + rows
        let widths = headers.indices.map { column in table.map { $0[column].count }.max()! + 2 }
        out += table.map { cells in
            String(cells.enumerated().map { $0.offset < 5 ? $0.element.padded(widths[$0.offset]) : $0.element.leftPad(widths[$0.offset]) }.joined().prefix(width))
        }
        if rows.isEmpty && interval.notShown.isEmpty {
            out.append(interval.sessions == 0 ? "(\(interval.nothingToWatch))" : "(no loop ran in the last interval)")
        }
        out += interval.notShown.map { "not shown: \($0)" }
        return out.joined(separator: "\n")
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
            enum Keys: String, CodingKey { case runQueueShare, throttledShare, kernelLostRecords }
            func encode(to encoder: any Encoder) throws {
                try row.encode(to: encoder)
                // Written as null, not left out, so that a script finds the column on every row.
                var kernel = encoder.container(keyedBy: Keys.self)
                try kernel.encode(JSONNumber(row.runQueueShare), forKey: .runQueueShare)
                try kernel.encode(JSONNumber(row.throttledShare), forKey: .throttledShare)
                try kernel.encode(row.kernelLostRecords, forKey: .kernelLostRecords)
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

import Foundation

/// `rlctl top`'s table: a status line, then one row per loop in the chosen order.
public enum LiveTopTable {
    public static func text(_ interval: LiveInterval, order: LiveLoopOrder, relay: String, interval length: String,
                            width: Int = 132) -> String {
        var out = ["rlctl top — \(relay), \(interval.sessions) session(s), \(interval.rows.count) loop(s), every \(length), sorted by \(order.rawValue)"
                   + (interval.problem.map { " — \($0)" } ?? "")]
        let headers = ["host", "pid", "thread", "loop", "kind", "util", "iter/s", "wake p99", "worst stall", "lost"]
        let rows = order.sorted(interval.rows).map { row -> [String] in
            [row.host, row.processID == 0 ? "-" : String(row.processID), String(row.threadID),
             "\(row.loopID)" + (row.name.map { " \($0)" } ?? ""), row.kind,
             String(format: "%.1f%%", row.utilization * 100), String(format: "%.0f", row.iterationsPerSecond),
             row.wakeLatencyP99Nanoseconds.map { formatNanoseconds(Double($0)) } ?? "-",
             row.worstStallNanoseconds.map { formatNanoseconds(Double($0)) } ?? "-", String(row.lostEvents)]
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

    /// One line of JSON: the status and the rows in the chosen order.
    public static func json(_ interval: LiveInterval, order: LiveLoopOrder) throws -> String {
        struct Document: Encodable {
            var sessions: Int
            var problem: String?
            var loops: [LiveLoopRow]
            var notShown: [String]
        }
        return ReportJSON.line(Document(sessions: interval.sessions, problem: interval.problem, loops: order.sorted(interval.rows),
                                        notShown: interval.notShown))
    }
}

import Foundation
import TraceModel

/// Writes a ``FleetSummary``: an overview of every host, then each host's own summary as `summarize` writes it.
public enum FleetReport {
    /// The overview's columns, each a metric `check` knows (so a gate and the table never disagree).
    static let columns: [(title: String, metric: String)] = [
        ("iterations", "loop.iterations"),
        ("utilization", "loop.utilization"),
        ("busy p99", "loop.busy_per_iteration.p99"),
        ("stalls", "stalls.count"),
        ("reported", "reported.stalls.count"),
        ("lost", "trace.lost"),
    ]

    /// Every loop the summary has, whatever traced it (RunLoopCore and Foundation loops, NIO loops, wait loops).
    static func loopCount(_ summary: TraceSummary) -> Int {
        summary.loops.count + (summary.nio?.loops.count ?? 0) + (summary.waits?.loops.count ?? 0)
    }

    static func cells(_ summary: TraceSummary) -> [String] {
        [String(loopCount(summary)), String(summary.health.eventsRead)] + columns.map { column in
            let metric = Metric.named(column.metric)!
            return metric.isMeasured(in: summary) ? formatMetric(metric.value(in: summary), unit: metric.unit) : "—"
        } + [summary.health.complete && !summary.health.runsIncomplete ? "complete" : "INCOMPLETE"]
    }

    static let headers = ["host", "loops", "events"] + columns.map(\.title) + ["trace"]

    /// What one origin is called: a host (or a host's session), or a snapshot in a folder of snapshots.
    static func kind(_ host: FleetSummary.Host) -> String { host.snapshot == true ? "snapshot" : "host" }

    /// The overview's headers: the first column names what the rows are.
    static func headers(_ fleet: FleetSummary) -> [String] {
        fleet.hosts.allSatisfy { $0.snapshot == true } ? ["snapshot"] + headers.dropFirst() : headers
    }

    /// "3 hosts", or "1 host (2 sessions)" when a host sent several; "2 snapshots" for a folder of snapshots.
    static func extent(_ fleet: FleetSummary) -> String {
        if fleet.hosts.allSatisfy({ $0.snapshot == true }) { return "\(fleet.hosts.count) snapshot\(fleet.hosts.count == 1 ? "" : "s")" }
        let hosts = Set(fleet.hosts.map { $0.name.split(separator: "/", maxSplits: 1).first.map(String.init) ?? $0.name }).count
        let hostText = hosts == 1 ? "1 host" : "\(hosts) hosts"
        return hosts == fleet.hosts.count ? hostText : hostText + " (\(fleet.hosts.count) sessions)"
    }

    static func overviewRows(_ fleet: FleetSummary) -> [[String]] {
        fleet.hosts.map { host in
            guard let summary = host.summary else { return [host.name, "unreadable"] + Array(repeating: "", count: headers.count - 2) }
            return [host.name] + cells(summary)
        }
    }

    public static func text(_ fleet: FleetSummary, title: String) -> String {
        var out = ["\(title): traces of \(extent(fleet)), each summarized on its own", ""]
        let headers = headers(fleet)
        let rows = [headers] + overviewRows(fleet)
        let widths = headers.indices.map { column in rows.map { $0[column].count }.max()! + 2 }
        out += rows.map { row in
            row.enumerated().map { $0.offset == 0 ? $0.element.padded(widths[0]) : $0.element.leftPad(widths[$0.offset]) }.joined()
        }
        out.append("(busy p99, stalls: RunLoopCore and Foundation loops; reported: loop_stall events; lost: events the tracer lost; INCOMPLETE: below, why)")
        for host in fleet.hosts {
            out.append("")
            out.append("== \(kind(host)) \(host.name) ==")
            if let summary = host.summary {
                out.append(SummaryReport.text(summary, title: host.traceFolders.count == 1 ? host.traceFolders[0] : nil))
            } else {
                out.append("UNREADABLE: \(host.error ?? "cannot read the trace")")
            }
        }
        return out.joined(separator: "\n")
    }

    public static func markdown(_ fleet: FleetSummary, title: String) -> String {
        var out = ["## \(title.markdownEscaped): \(extent(fleet))", ""]
        let headers = headers(fleet)
        out.append("| " + headers.joined(separator: " | ") + " |")
        out.append("| " + headers.map { _ in "---" }.joined(separator: " | ") + " |")
        out += overviewRows(fleet).map { "| " + $0.map(\.markdownEscaped).joined(separator: " | ") + " |" }
        for host in fleet.hosts {
            out.append("")
            if let summary = host.summary {
                out.append(SummaryReport.markdown(summary, title: "\(kind(host)) \(host.name)"))
            } else {
                out.append("### \(kind(host)) \(host.name.markdownEscaped)")
                out.append("")
                out.append("⚠️ Unreadable: \((host.error ?? "cannot read the trace").markdownEscaped)")
            }
        }
        return out.joined(separator: "\n")
    }

    /// Pretty-printed, keys sorted (throws for a figure JSON cannot hold, as ``SummaryReport/json(_:)``).
    public static func json(_ fleet: FleetSummary) throws -> String {
        try ReportJSON.pretty(fleet)
    }
}

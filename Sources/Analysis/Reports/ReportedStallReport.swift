import TraceModel

// The stalls and hangs the loops reported themselves (`loop_stall`, `loop_hang`), in the text and Markdown
// summaries.
extension SummaryReport {
    /// "loop 1 (main)".
    static func loopName(_ loopID: UInt64, _ name: String?) -> String {
        "loop \(loopID)" + (name.map { " (\($0))" } ?? "")
    }

    /// One line per kept stall and hang, after a heading line; empty when the loops reported none.
    static func reportedLines(_ r: TraceSummary.ReportedStalls?, health: TraceSummary.Health, bullet: String) -> [String] {
        guard let r else { return [] }
        var out: [String] = []
        if r.stalls > 0 {
            let thresholds = r.thresholdsNanoseconds.map(formatNanoseconds).joined(separator: ", ")
            out.append("stalls the loops reported (busier than \(thresholds)): \(r.stalls)\(r.worst.count < r.stalls ? ", the \(r.worst.count) longest:" : ":")")
            for stall in r.worst {
                out.append("\(bullet)\(formatNanoseconds(stall.busyNanoseconds)) busy in \(loopName(stall.loopID, stall.loopName)), iteration \(stall.iteration), mode \(stall.mode), at \(offset(stall.startNanoseconds, in: health)): longest callout \(stall.culpritDescription)")
            }
        }
        if r.hangs > 0 {
            out.append("hangs the watchdog reported (loops still busy when it looked): \(r.hangs)")
            for hang in r.hangReports {
                out.append("\(bullet)\(loopName(hang.loopID, hang.loopName)) busy for at least \(formatNanoseconds(hang.busyAtLeastNanoseconds)) in iteration \(hang.iteration), at \(offset(hang.reportedAtNanoseconds, in: health))")
            }
        }
        return out
    }
}

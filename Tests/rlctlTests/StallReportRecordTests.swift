import Foundation
import Testing
import TestSupport

/// Issue 15, item 1, from a user's side: a program recorded with `RLCTL_STALL_THRESHOLD` reports its own stalls
/// (`loop_stall`), with `RLCTL_WATCHDOG` its hangs while they last (`loop_hang`), and `summarize` shows both.
@Suite(.serialized)
struct StallReportRecordTests {
    /// runloop-demo burns 24 ms every 20th frame. The loop's own reports (at 20 ms) are the iterations the summary
    /// finds from the activities at `--stall 20ms`: the same iterations, measured twice.
    @Test func theLoopsReportsAreTheStallsTheSummaryFindsAndTheWatchdogSeesThemWhileTheyLast() throws {
        let output = temporaryPath("stall-report-record")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["record", "--tracer", "embedded", "--output", output, "--stall", "20ms", "--format", "json", "--",
                                  CLI.sibling("runloop-demo"), "1"],
                                 environment: ["RLCTL_STALL_THRESHOLD": "20ms", "RLCTL_WATCHDOG": "15ms"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let line = result.stdout.split(separator: "\n", maxSplits: 1).last ?? ""
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let reported = try #require(json["reported"] as? [String: Any], "the loop reported no stall: \(line.prefix(400))")
        let overall = try #require(json["overall"] as? [String: Any])
        let computed = (overall["worstStalls"] as? [[String: Any]] ?? []).compactMap { $0["iteration"] as? Int }
        let worst = reported["worst"] as? [[String: Any]] ?? []
        #expect(reported["stalls"] as? Int == overall["stalls"] as? Int, "\(reported) vs \(overall["stalls"] ?? "")")
        #expect((reported["stalls"] as? Int ?? 0) >= 2, "about one slow frame in 20 of 62 a second")
        #expect(Set(worst.compactMap { $0["iteration"] as? Int }) == Set(computed))
        for stall in worst {
            #expect(stall["culpritKind"] as? String == "timer")
            #expect(stall["culpritLabel"] as? String == "frame")
            #expect(stall["thresholdNanoseconds"] as? Int == 20_000_000)
            #expect(stall["loopName"] as? String == "main")
        }
        // The watchdog looks every 3.75 ms: each 24 ms burn is seen past 15 ms before it ends (a thread descheduled
        // on a busy machine may miss one, so at least one, and each in a stalled iteration).
        let hangs = reported["hangReports"] as? [[String: Any]] ?? []
        #expect(!hangs.isEmpty)
        let stalledIterations = Set(worst.compactMap { $0["iteration"] as? Int })
        for hang in hangs {
            #expect(stalledIterations.contains(hang["iteration"] as? Int ?? -1), "\(hang)")
            #expect((hang["busyAtLeastNanoseconds"] as? Int ?? 0) >= 15_000_000)
        }

        let text = try CLI.run(["summarize", output])
        #expect(text.status == 0)
        #expect(text.stdout.contains("stalls the loops reported (busier than 20.0ms): "), "\(text.stdout.suffix(1200))")
        #expect(text.stdout.contains("longest callout timer 'frame' (24."), "\(text.stdout.suffix(1200))")
        #expect(text.stdout.contains("hangs the watchdog reported (loops still busy when it looked): "))
        let budget = output + ".budget"
        defer { try? FileManager.default.removeItem(atPath: budget) }
        try "reported.stalls.count == 0\n".write(toFile: budget, atomically: true, encoding: .utf8)
        let check = try CLI.run(["check", output, "--budget", budget])
        #expect(check.status == 1, "a reported stall fails the budget: \(check.stdout) \(check.stderr)")
    }

    /// Bad values are one line on stderr each, and the program runs on untraced for stalls (never ended by them).
    @Test func badThresholdsAreReportedAndIgnored() throws {
        let output = temporaryPath("stall-report-bad")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["record", "--tracer", "embedded", "--output", output, "--format", "json", "--",
                                  CLI.sibling("runloop-demo"), "0.3"],
                                 environment: ["RLCTL_STALL_THRESHOLD": "-1ms", "RLCTL_WATCHDOG": "0"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("RunLoopCore: RLCTL_STALL_THRESHOLD=-1ms is ignored: "), "\(result.stderr)")
        #expect(result.stderr.contains("rlctl tracing: RLCTL_WATCHDOG=0 is ignored: the threshold must be longer than zero; no watchdog runs"), "\(result.stderr)")
        let line = result.stdout.split(separator: "\n", maxSplits: 1).last ?? ""
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(json["reported"] == nil)
    }
}

import Foundation
import Testing
import TestSupport

/// `check` and `compare` as a CI user meets them: no pass on a figure the trace does not have, changes of
/// utilization in points, and a warning when the two sides are different workloads.
@Suite struct AnalysisCLITests {
    @Test func checkNeverPassesOnAFigureNothingMeasured() throws {
        // The shared `mixed` trace has no observers: there is no observer callout duration to be within a limit.
        let budget = temporaryPath("nodata.budget")
        defer { try? FileManager.default.removeItem(atPath: budget) }
        try "loop.utilization <= 100%\ncallout.observer.p99 <= 1ms\n".write(toFile: budget, atomically: true, encoding: .utf8)
        let result = try CLI.run(["check", sharedTrace, "--budget", budget])
        #expect(result.status == 3, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("  ?  callout.observer.p99") && result.stdout.contains("no data"), "\(result.stdout)")
        #expect(result.stdout.contains("no data for callout.observer.p99"), "\(result.stdout)")
        let json = try CLI.run(["check", sharedTrace, "--budget", budget, "--format", "json"])
        #expect(json.stdout.contains("\"value\":null") && json.stdout.contains("\"passed\":false"), "\(json.stdout)")
    }

    @Test func aTraceWithNoEventsIsNeverCompleteNorAPass() throws {
        // What a SIGKILL leaves when it comes before the recorder wrote its first packet: the metadata alone.
        let trace = temporaryPath("empty.rltrace")
        let budget = temporaryPath("lost.budget")
        defer {
            try? FileManager.default.removeItem(atPath: trace)
            try? FileManager.default.removeItem(atPath: budget)
        }
        #expect(try CLI.run(["run", "timers", "--duration", "100ms", "--trace", trace]).status == 0)
        for file in try FileManager.default.contentsOfDirectory(atPath: trace) where file.hasPrefix("stream-") {
            try FileManager.default.removeItem(atPath: trace + "/" + file)
        }
        let summary = try CLI.run(["summarize", trace])
        #expect(summary.status == 0, "\(summary.stderr)")
        #expect(summary.stdout.contains("trace: 0 events — INCOMPLETE:") && summary.stdout.contains("the trace holds no events"),
                "\(summary.stdout)")
        // A budget on losses alone holds on an empty trace, and must still not pass it.
        try "trace.lost == 0\n".write(toFile: budget, atomically: true, encoding: .utf8)
        let check = try CLI.run(["check", trace, "--budget", budget])
        #expect(check.status == 3, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("the trace holds no events"), "\(check.stdout)")
    }

    @Test func compareWarnsAboutDifferentWorkloadsAndShowsUtilizationInPoints() throws {
        let timers = temporaryPath("timers.json")
        let jank = temporaryPath("jank.rltrace")
        defer {
            try? FileManager.default.removeItem(atPath: timers)
            try? FileManager.default.removeItem(atPath: jank)
        }
        #expect(try CLI.run(["run", "timers", "--duration", "200ms", "--output", timers, "--format", "json"]).status == 0)
        #expect(try CLI.run(["run", "jank", "--duration", "200ms", "--trace", jank, "--format", "json"]).status == 0)

        let mixed = try CLI.run(["compare", timers, jank, "--metrics", "loop.utilization"])
        #expect(mixed.stderr.contains("warning: these may be different workloads: their timers differ"), "\(mixed.stderr)")
        #expect(mixed.stdout.contains(" pts") && !mixed.stdout.contains("%  95% CI"), "\(mixed.stdout)")

        let same = try CLI.run(["compare", timers, timers, "--metrics", "loop.utilization"])
        #expect(same.status == 0 && same.stderr.isEmpty, "\(same.stderr)")
        #expect(same.stdout.contains("+0.00 pts"), "\(same.stdout)")
    }

    /// A run's JSON lists its loop in `allLoops` with its kind; a baseline written before `allLoops` existed (the
    /// same report without it) still compares and checks against a new one.
    @Test func aBaselineOfTheOldShapeStillCompares() throws {
        let new = temporaryPath("new.json"), old = temporaryPath("old.json")
        defer {
            try? FileManager.default.removeItem(atPath: new)
            try? FileManager.default.removeItem(atPath: old)
        }
        #expect(try CLI.run(["run", "timers", "--duration", "200ms", "--output", new, "--kernel", "off"]).status == 0)
        var report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: new))) as? [String: Any])
        var repetitions = try #require(report["repetitions"] as? [[String: Any]])
        let loop = try #require((repetitions.first?["allLoops"] as? [[String: Any]])?.first, "no allLoops in \(new)")
        #expect(loop["kind"] as? String == "RunLoopCore" && (loop["iterations"] as? Int ?? 0) > 0, "\(loop)")
        // An embedded trace does not name its process per event: said once, for the kind.
        let reasons = repetitions.first?["allLoopsNotAvailable"] as? [String: [String: String]]
        #expect(loop["processID"] is NSNull && reasons?["processID"]?["RunLoopCore"]?.contains("embedded recorder's trace") == true, "\(loop) \(reasons ?? [:])")
        for index in repetitions.indices {
            repetitions[index]["allLoops"] = nil
            repetitions[index]["allLoopsNotAvailable"] = nil
        }
        report["repetitions"] = repetitions
        try JSONSerialization.data(withJSONObject: report).write(to: URL(fileURLWithPath: old))

        let compared = try CLI.run(["compare", old, new, "--metrics", "loop.utilization"])
        #expect(compared.status == 0 && compared.stderr.isEmpty, "\(compared.stdout)\(compared.stderr)")
        #expect(compared.stdout.contains("+0.00 pts"), "\(compared.stdout)")
    }
}

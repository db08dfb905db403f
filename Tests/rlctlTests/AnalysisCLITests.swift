import Foundation
import Testing

/// `check` and `compare` as a CI user meets them: no pass on a figure the trace does not have, changes of
/// utilization in points, and a warning when the two sides are different workloads.
@Suite struct AnalysisCLITests {
    @Test func checkNeverPassesOnAFigureNothingMeasured() throws {
        // The shared `mixed` trace has no observers: there is no observer callout duration to be within a limit.
        let budget = CLI.temporary("nodata.budget")
        defer { try? FileManager.default.removeItem(atPath: budget) }
        try "loop.utilization <= 100%\ncallout.observer.p99 <= 1ms\n".write(toFile: budget, atomically: true, encoding: .utf8)
        let result = try CLI.run(["check", sharedTrace, "--budget", budget])
        #expect(result.status == 3, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("  ?  callout.observer.p99") && result.stdout.contains("no data"), "\(result.stdout)")
        #expect(result.stdout.contains("no data for callout.observer.p99"), "\(result.stdout)")
        let json = try CLI.run(["check", sharedTrace, "--budget", budget, "--format", "json"])
        #expect(json.stdout.contains("\"value\":null") && json.stdout.contains("\"passed\":false"), "\(json.stdout)")
    }

    @Test func compareWarnsAboutDifferentWorkloadsAndShowsUtilizationInPoints() throws {
        let timers = CLI.temporary("timers.json")
        let jank = CLI.temporary("jank.rltrace")
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
}

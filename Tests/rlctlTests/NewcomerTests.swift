import Foundation
import Testing
import TestSupport

/// The first minutes of someone new to rlctl: the likely mistakes get help in rlctl's own words, no work is lost to
/// a typo in an output path, and the first screen of a summary is its verdict.
@Suite struct NewcomerTests {
    static let commands = "run, record, summarize, export, report, check, compare, list, top, doctor"

    @Test func aMistypedCommandGetsTheCommandItWasMeantToBe() throws {
        try expectUsageError(["summarise", "t"], "unknown command \"summarise\": did you mean summarize? (the commands: \(Self.commands))")
        try expectUsageError(["rn", "jank"], "unknown command \"rn\": did you mean run? (the commands: \(Self.commands))")
        try expectUsageError(["rnu", "jank"], "unknown command \"rnu\": did you mean run? (the commands: \(Self.commands))")
        try expectUsageError(["help", "summarise"], "no help topic \"summarise\": did you mean summarize? (the commands: \(Self.commands))")
        try expectUsageError(["xyzzy"], "unknown command \"xyzzy\" (the commands: \(Self.commands))")
    }

    @Test func versionSaysTheToolAndItsTraceFormat() throws {
        try assertCommand(["--version"], stdout: "rlctl 0.9.0 (trace format 1)\n", status: 0)
    }

    @Test func aMistypedComparisonIsSaidToBeTheComparison() throws {
        let summary = try CLI.file("summary.json", try CLI.run(["summarize", sharedTrace, "--format", "json"]).stdout)
        defer { try? FileManager.default.removeItem(atPath: summary) }
        let budget = try CLI.file("operator.budget", "timer.lateness.p90 =< 2ms\n")
        defer { try? FileManager.default.removeItem(atPath: budget) }
        try expectUsageError(["check", summary, "--budget", budget], "\(budget):1: unknown comparison \"=<\" (use <=, <, >=, >, == or !=)")
        let metric = try CLI.file("metric.budget", "timer.latenes.p90 <= 2ms\n")
        defer { try? FileManager.default.removeItem(atPath: metric) }
        try expectUsageError(["check", summary, "--budget", metric],
                             "\(metric):1: unknown metric \"timer.latenes.p90\" (did you mean timer.lateness.p90?) (rlctl check --list-metrics lists them)")
    }

    @Test func comparingTwoDifferentWorkloadsIsAUsageErrorUnlessAllowed() throws {
        let timers = temporaryPath("timers.json"), jank = temporaryPath("jank.json")
        defer { for path in [timers, jank] { try? FileManager.default.removeItem(atPath: path) } }
        try #require(try CLI.run(["run", "timers", "--duration", "200ms", "--output", timers, "--quiet"]).status == 0)
        try #require(try CLI.run(["run", "jank", "--duration", "200ms", "--output", jank, "--quiet"]).status == 0)
        try expectUsageError(["compare", timers, jank],
                             "the baseline ran workload \"timers\" and the current run \"jank\": different workloads (--allow-different-workloads compares them anyway)")
        try expectUsageError(["report", "--baseline", timers, "--current", jank, "-o", temporaryPath("cmp.html")],
                             "the baseline ran workload \"timers\" and the current run \"jank\": different workloads (--allow-different-workloads compares them anyway)")
        let forced = try CLI.run(["compare", timers, jank, "--allow-different-workloads"])
        #expect(forced.status == 0 || forced.status == 1, "\(forced.termination): \(forced.stderr)")
        #expect(forced.stderr.contains("warning: these may be different workloads"))
    }

    /// A folder that exists but takes no file (root passes access() on /proc) is refused before the work, in
    /// rlctl's words, not after it in Foundation's.
    @Test func anOutputIntoAVirtualFileSystemIsRefusedBeforeTheWork() throws {
        try expectUsageError(["run", "jank", "--duration", "5s", "--report", "/proc/x.html"],
                             "cannot write /proc/x.html: /proc takes no new files (a virtual file system?)")
        try expectUsageError(["report", sharedTrace, "-o", "/proc/x.html"], "cannot write /proc/x.html: /proc takes no new files (a virtual file system?)")
    }

    /// `record --report` into a folder that does not exist used to run the program first and delete its recording.
    @Test func recordRefusesAMistypedReportPathBeforeTheProgramRuns() throws {
        let marker = temporaryPath("ran")
        defer { try? FileManager.default.removeItem(atPath: marker) }
        try expectUsageError(["record", "--tracer", "embedded", "--report", "no-such-folder/r.html", "--", "/usr/bin/touch", marker],
                             "cannot write no-such-folder/r.html: no folder no-such-folder")
        #expect(!FileManager.default.fileExists(atPath: marker), "the program ran")
    }

    /// A result file that cannot be written once the program has run (its folder went away meanwhile) fails the
    /// command, but never takes the recording with it: it is kept where no later rlctl removes it, and said.
    @Test func aRecordingOutlivesAFileThatCouldNotBeWrittenAfterIt() throws {
        let folder = temporaryPath("goes-away")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let demo = CLI.sibling("runloop-demo")
        let result = try CLI.run(["record", "--tracer", "embedded", "--summary", folder + "/s.txt", "--",
                                  "/bin/sh", "-c", "rmdir '\(folder)' && exec '\(demo)' 0.3"])
        #expect(result.status == 2, "\(result.termination): \(result.stderr)")
        let prefix = "rlctl: cannot write \(folder)/s.txt: no folder \(folder); the recording is kept in "
        let line = try #require(result.stderr.split(separator: "\n").first { $0.hasPrefix(prefix) }, "\(result.stderr)")
        let kept = String(line.dropFirst(prefix.count).prefix { $0 != " " })
        defer { try? FileManager.default.removeItem(atPath: kept) }
        #expect(kept.contains("/rlctl-kept-") && line.hasSuffix("(rlctl summarize \(kept))"), "\(line)")
        let summary = try CLI.run(["summarize", kept, "--brief"])
        #expect(summary.status == 0 && summary.stdout.contains("trace: "), "\(summary.stdout)\(summary.stderr)")
        // The next rlctl that makes a temporary folder leaves it alone (its owner is gone, but it is no temporary one).
        try #require(try CLI.run(["run", "timers", "--duration", "100ms", "--quiet"]).status == 0)
        #expect(FileManager.default.fileExists(atPath: kept))
    }

    /// One place says what was written (stderr, so stdout stays the results); --quiet says nothing but errors.
    @Test func whatWasWrittenIsSaidOnceAndQuietSaysNothing() throws {
        let output = temporaryPath("run.json")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let loud = try CLI.run(["run", "timers", "--duration", "200ms", "--repeat", "2", "--output", output])
        #expect(loud.status == 0, "\(loud.stderr)")
        #expect(loud.stderr.hasSuffix("rlctl: wrote the run report \(output) (2 repetitions)\n"), "\(loud.stderr)")
        #expect(loud.stdout.contains("repetition 2/2"))
        try FileManager.default.removeItem(atPath: output)
        try assertCommand(["run", "timers", "--duration", "200ms", "--repeat", "2", "--output", output, "--quiet"], status: 0)
        #expect(FileManager.default.fileExists(atPath: output))
    }

    /// The summary's first screen is its verdict; --brief stops after it and the trace's health.
    @Test func theSummaryOpensWithItsVerdict() throws {
        let result = try CLI.run(["run", "jank", "--duration", "1s", "--every", "10", "--cost", "30ms", "--brief", "--kernel", "off"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count >= 3, "\(result.stdout)")
        #expect(lines[0].hasPrefix("jank — 1 element for 1s"))
        #expect(lines[1] == "verdict:")
        #expect(lines[2].hasPrefix("  ") && lines[2].contains("stall") && lines[2].contains("in timer jank-1 on loop 1 (main)"), "\(lines[2])")
        #expect(lines.contains { $0.hasPrefix("trace: ") })
        #expect(!result.stdout.contains("busy per iteration"), "--brief printed the detail")
    }
}

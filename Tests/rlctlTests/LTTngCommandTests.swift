import Foundation
import Glibc
import Testing

/// Whether the LTTng commands can be tested here: `rlctl doctor --start-daemon` (itself under test) must pass.
/// Outside CI a failing doctor skips these tests with its own report; with `CI=true` (CI installs LTTng through
/// scripts/install-deps.sh) they run and fail instead.
enum LTTngCLIEnvironment {
    static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

    static let doctor: CLI.Result? = try? CLI.run(["doctor", "--start-daemon"])

    static var usable: Bool { doctor?.status == 0 }
    static var shouldRun: Bool { usable || isCI }
    static var skipComment: Comment {
        Comment(rawValue: "LTTng is not usable here (rlctl doctor --start-daemon: \(doctor?.stdout ?? "did not run")); with CI=true this fails instead")
    }
}

@Suite(.serialized, .enabled(if: LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
struct LTTngCommandTests {
    @Test func doctorPassesEveryCheckWhereLTTngWorks() throws {
        let result = try #require(LTTngCLIEnvironment.doctor)
        #expect(result.status == 0, "doctor: \(result.stdout)\(result.stderr)")
        for check in ["LTTng provider", "liblttng-ust", "libbabeltrace2", "lttng-tools", "session daemon", "round trip"] {
            #expect(result.stdout.split(separator: "\n").contains { $0.contains("ok    \(check)") },
                    "\(check) did not pass: \(result.stdout)")
        }
        #expect(result.stdout.contains("0 lost"))
    }

    @Test func recordTracesAProgramThroughLTTngAndSummarizesIt() throws {
        let output = CLI.temporary("record-trace")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["record", "--output", output, "--format", "json", "--", CLI.sibling("runloop-demo"), "0.6"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        // The program's own output comes first, then the summary.
        let lines = result.stdout.split(separator: "\n", maxSplits: 1)
        #expect(lines.first?.hasPrefix("runloop-demo: ") == true, "stdout: \(result.stdout.prefix(300))")
        let json = try #require(try JSONSerialization.jsonObject(with: Data((lines.last ?? "").utf8)) as? [String: Any])
        let health = json["health"] as? [String: Any]
        #expect((health?["eventsRead"] as? Int ?? 0) > 100)
        #expect(health?["eventsLost"] as? Int == 0)
        let loops = json["loops"] as? [[String: Any]] ?? []
        #expect(loops.count == 1, "only the demo's one loop: \(loops.count)")
        #expect(loops.first?["name"] as? String == "main")
        let timers = json["timers"] as? [[String: Any]] ?? []
        #expect(timers.contains { $0["label"] as? String == "frame" && ($0["firings"] as? Int ?? 0) >= 20 }, "\(timers)")
        #expect((json["overall"] as? [String: Any])?["stalls"] as? Int ?? 0 >= 1, "every 20th frame stalls")

        // The kept folder is an ordinary LTTng trace that summarize reads again.
        #expect(FileManager.default.fileExists(atPath: output + "/ust"))
        let again = try CLI.run(["summarize", output])
        #expect(again.status == 0 && again.stdout.contains("frame"), "\(again.stderr)")
    }

    @Test func recordPassesSIGTERMOnAndReportsTheProgramsEnd() throws {
        let result = try CLI.run(["record", "--", CLI.sibling("runloop-demo"), "30"]) { process in
            usleep(1_500_000)
            kill(process.processIdentifier, SIGTERM)
        }
        #expect(result.status == 1, "stderr: \(result.stderr)")
        #expect(result.stderr == "rlctl: runloop-demo was killed by signal 15 (Terminated)\n" || result.stderr.hasSuffix("was killed by signal 15 (Terminated)\n"),
                "stderr: \(result.stderr)")
        #expect(result.stdout.contains("loop 1"), "the events before the signal are summarized: \(result.stdout.prefix(200))")
    }

    @Test func recordOfAProgramWithoutTheSinkSaysWhatIsMissing() throws {
        let result = try CLI.run(["record", "--", "/bin/true"])
        #expect(result.status == 3)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("no runloop events") && result.stderr.contains("LoopEventSink.install(LTTngSink())"), "\(result.stderr)")
    }

    @Test func runWithTheLTTngTracer() throws {
        let trace = CLI.temporary("run-lttng")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let result = try CLI.run(["run", "timers", "--tracer", "lttng", "--count", "5", "--interval", "2ms",
                                  "--duration", "500ms", "--trace", trace, "--format", "json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(((json?["overall"] as? [String: Any])?["timerFirings"] as? Int ?? 0) > 500)
        #expect((json?["health"] as? [String: Any])?["eventsLost"] as? Int == 0)
        #expect(FileManager.default.fileExists(atPath: trace + "/ust"), "the LTTng trace is kept")
    }

    /// The loop announced itself to the first repetition's sink only: from the second on, LTTng traces had its
    /// events but not its name.
    @Test func everyLTTngRepetitionNamesItsLoop() throws {
        let report = CLI.temporary("run-lttng-repeat.json")
        defer { try? FileManager.default.removeItem(atPath: report) }
        let result = try CLI.run(["run", "timers", "--tracer", "lttng", "--count", "2", "--duration", "200ms",
                                  "--repeat", "2", "--output", report, "--format", "json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any]
        let repetitions = json?["repetitions"] as? [[String: Any]] ?? []
        #expect(repetitions.count == 2)
        for (index, repetition) in repetitions.enumerated() {
            let names = (repetition["loops"] as? [[String: Any]] ?? []).map { $0["name"] as? String }
            #expect(names == ["main"], "repetition \(index + 1): \(names)")
        }
    }
}

/// LTTng set-up problems, each reported with what to do; these need no LTTng at all.
@Suite struct LTTngSetUpErrorTests {
    private let noTools = ["PATH": "/nonexistent-rlctl-test"]

    @Test func doctorSaysWhatToInstall() throws {
        let result = try CLI.run(["doctor"], environment: noTools)
        #expect(result.status == 1)
        #expect(result.stdout.contains("FAIL  lttng-tools"), "\(result.stdout)")
        #expect(result.stdout.contains("fix: install lttng-tools"))
        #expect(result.stdout.contains("skip  round trip"))
        #expect(result.stderr == "rlctl: 1 check failed; each says what to do\n" || !LTTngCLIEnvironment.isCI, "\(result.stderr)")
    }

    private func expectOneLineError(_ arguments: [String], status: Int32 = 2, environment: [String: String] = [:],
                                    mentions: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try CLI.run(arguments, environment: environment)
        #expect(result.status == status, "exit \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.hasPrefix("rlctl: "), "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(mentions), "\(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test func recordAndRunWithoutLTTngTools() throws {
        try expectOneLineError(["record", "--", "/bin/true"], environment: noTools, mentions: "needs lttng-tools")
        try expectOneLineError(["run", "timers", "--tracer", "lttng", "--duration", "100ms"], environment: noTools, mentions: "needs lttng-tools")
    }

    @Test func recordBadInputs() throws {
        try expectOneLineError(["record"], mentions: "give the program to record after --")
        try expectOneLineError(["record", "--"], mentions: "give the program to record after --")
        try expectOneLineError(["record", "--", "/nonexistent/program"], mentions: "no such program")
        try expectOneLineError(["record", "--num-subbuf", "1", "--", "/bin/true"], mentions: "--num-subbuf")
        try expectOneLineError(["record", "--output", NSTemporaryDirectory(), "--", "/bin/true"], mentions: "already exists")
        try expectOneLineError(["run", "timers", "--tracer", "perf"], mentions: "perf")
    }
}

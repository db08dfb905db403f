import Foundation
import Glibc
import Testing
import TestSupport
import Tracing

/// Whether the LTTng commands can be tested here: `rlctl doctor --start-daemon` (itself under test) must pass.
/// Outside CI a failing doctor skips these tests with its own report; with `CI=true` (CI installs LTTng through
/// scripts/install-deps.sh) they run and fail instead.
enum LTTngCLIEnvironment {
    static let doctor: ProcessOutput? = {
        let running = LTTngSessionDaemon.runningPID() != nil
        let doctor = try? CLI.run(["doctor", "--start-daemon"])
        // The doctor starts one to keep (what --start-daemon is for): the tests stop it when they end.
        if !running, LTTngSessionDaemon.runningPID() != nil {
            LTTngSessionDaemon.stopWhenThisProcessExits()
        }
        return doctor
    }()

    static var usable: Bool { doctor?.status == 0 }
    static let requirement = TestRequirement(
        missing: usable ? nil : "rlctl doctor --start-daemon: \(doctor.map { $0.stdout + $0.stderr } ?? "did not run")",
        problem: "LTTng is not usable here")
    static var shouldRun: Bool { requirement.shouldRun }
    static var skipComment: Comment { requirement.skipComment }
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
        // The consumer daemon's scheduling is a warning, which leaves the exit status 0, and only where it applies.
        // (The daemons' pids are left out: the session daemon can start one between the doctor's look and this one.)
        if LTTngConsumerScheduling.current().risk != nil {
            #expect(result.stdout.contains("  warn  consumer CPU     lttng-consumerd (pid "), "\(result.stdout)")
            #expect(result.stdout.contains("kernel.sched_autogroup_enabled=1): a program that keeps every CPU busy can keep it off "
                                           + "the CPUs for seconds, and LTTng then discards events\n        fix: \(LTTngConsumerScheduling.fix)\n"),
                    "\(result.stdout)")
            #expect(result.stdout.contains("Read the warning above"))
        } else {
            #expect(result.stdout.contains("consumer CPU     lttng-consumerd gets a CPU under load"), "\(result.stdout)")
        }
    }

    @Test func recordTracesAProgramThroughLTTngAndSummarizesIt() throws {
        let output = temporaryPath("record-trace")
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
        #expect(!result.stderr.contains("LTTng discarded"), "no loss, no advice: \(result.stderr)")
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

    @Test func aRecordingThatLostEventsSaysWhatToDoAboutIt() throws {
        // 200,000 events in a burst through two 4 KiB sub-buffers: LTTng discards most of them.
        lttngSessionLock.lock()   // a flood
        defer { lttngSessionLock.unlock() }
        let output = temporaryPath("record-lossy")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["record", "--any", "--tracer", "lttng", "--output", output, "--subbuf-size", "4096", "--num-subbuf", "2",
                                  "--", "python3", "-c", "import select; p = select.epoll(); [p.poll(0) for _ in range(100000)]"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let counted = try #require(result.stdout.firstMatch(of: /INCOMPLETE:\n  (\d+) events and/), "stdout: \(result.stdout.prefix(500))")
        let lost = try #require(UInt64(counted.1))
        #expect(result.stderr.contains("rlctl: LTTng discarded \(lost) events, "), "stderr: \(result.stderr)")
        // Where the consumer daemon can be starved (CI's machine: autogroup on), that is the advice; else the burst's.
        let advice = LTTngConsumerScheduling.current().risk != nil
            ? ["% of those emitted; lttng-consumerd (pid ", "and LTTng then discards events. Fix: \(LTTngConsumerScheduling.fix)\n"]
            : ["% of those emitted; bigger sub-buffers (--subbuf-size, --num-subbuf) absorb a burst, or record with --tracer embedded\n"]
        for part in advice { #expect(result.stderr.contains(part), "stderr: \(result.stderr)") }
    }

    @Test func recordPassesSIGTERMOnAndReportsTheProgramsEnd() throws {
        let rlctl = try CLI.start(["record", "--", CLI.sibling("runloop-demo"), "30"])
        _ = rlctl.child(running: "runloop-demo")   // a SIGTERM before it would say it never ran
        usleep(1_500_000)
        rlctl.send(SIGTERM)
        let result = rlctl.wait()
        #expect(result.status == 1, "\(result.termination), stderr: \(result.stderr)")
        expectSameText(result.stderr, "rlctl: \(CLI.sibling("runloop-demo")) was killed by signal 15 (Terminated)\n", "rlctl record: stderr")
        #expect(result.stdout.contains("loop 1"), "the events before the signal are summarized: \(result.stdout.prefix(200))")
    }

    @Test func recordOfAProgramWithoutTheSinkSaysWhatIsMissing() throws {
        try assertCommand(["record", "--", "/bin/true"],
                          stderr: "rlctl: no runloop events reached the trace from /bin/true, which exited with status 0: the program must call LoopEventSink.installFromEnvironment() (module Tracing), or use an adapter, before its loops run\n",
                          status: 3)
    }

    @Test func runWithTheLTTngTracer() throws {
        let trace = temporaryPath("run-lttng")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let result = try CLI.run(["run", "timers", "--tracer", "lttng", "--count", "5", "--interval", "2ms",
                                  "--duration", "500ms", "--trace", trace, "--format", "json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        // 1,250 slots; a loaded machine skips some (a late repeating timer fires once for the slots it missed).
        #expect(((json?["overall"] as? [String: Any])?["timerFirings"] as? Int ?? 0) > 100, "\(result.stdout.prefix(400))")
        #expect((json?["health"] as? [String: Any])?["eventsLost"] as? Int == 0)
        #expect(FileManager.default.fileExists(atPath: trace + "/ust"), "the LTTng trace is kept")
    }

    /// An LTTng trace exports as an embedded one does: the format's rules hold, and signals arrow to performs
    /// (LTTng's per-CPU streams interleave the signalling threads' events with the loop's).
    @Test func exportOfAnLTTngTraceKeepsTheTraceEventRules() throws {
        let trace = temporaryPath("export-lttng")
        let chrome = temporaryPath("export-lttng.json")
        defer {
            try? FileManager.default.removeItem(atPath: trace)
            try? FileManager.default.removeItem(atPath: chrome)
        }
        let run = try CLI.run(["run", "mixed", "--tracer", "lttng", "--duration", "500ms", "--trace", trace, "--format", "json"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let export = try CLI.run(["export", trace, "--format", "chrome", "-o", chrome])
        #expect(export.status == 0, "stderr: \(export.stderr)")
        let file = try ChromeTraceFile(path: chrome)
        #expect(file.violations() == [])
        #expect(file.flows.values.contains { $0.out?["cat"] as? String == "signal" && $0.in != nil })
        #expect(file.events("M", named: "thread_name").contains { (file.args($0)["name"] as? String)?.hasPrefix("loop ") == true })
    }

    /// The loop announced itself to the first repetition's sink only: from the second on, LTTng traces had its
    /// events but not its name.
    @Test func everyLTTngRepetitionNamesItsLoop() throws {
        let report = temporaryPath("run-lttng-repeat.json")
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
    private let noTools: [String: String?] = ["PATH": "/nonexistent-rlctl-test"]
    private let installTools = "install lttng-tools (Debian: apt-get install lttng-tools, or run scripts/install-deps.sh)"

    /// Without lttng-tools in PATH, `lttng-tools` fails and the round trip is skipped; the other checks pass where
    /// LTTng works (and in CI, which installs it). Elsewhere the provider or the libraries may fail too: the count
    /// on stderr is then that of the FAIL lines, and the diagnosis of each is doctor's own tests' business.
    @Test func doctorSaysWhatToInstall() throws {
        let result = try CLI.run(["doctor"], environment: noTools)
        #expect(result.status == 1, "\(result.termination)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("  FAIL  lttng-tools      `lttng` and `lttng-sessiond` not found in PATH"), "\(result.stdout)")
        #expect(lines.contains("        fix: \(installTools)"), "\(result.stdout)")
        #expect(lines.contains("  skip  round trip       needs the items above"), "\(result.stdout)")
        let failed = lines.filter { $0.hasPrefix("  FAIL  ") }
        if TestEnvironment.isCI || LTTngCLIEnvironment.usable {
            #expect(failed.count == 1, "only lttng-tools fails where LTTng works: \(result.stdout)")
            expectSameText(result.stderr, "rlctl: 1 check failed; each says what to do\n", "rlctl doctor: stderr")
        } else {
            let count = failed.count
            expectSameText(result.stderr, "rlctl: \(count) check\(count == 1 ? "" : "s") failed; each says what to do\n", "rlctl doctor: stderr")
        }
    }

    @Test func recordAndRunWithoutLTTngTools() throws {
        let missing = "`lttng` and `lttng-sessiond` not found in PATH: \(installTools)"
        try assertCommand(["record", "--tracer", "lttng", "--", "/bin/true"],
                          stderr: "rlctl: rlctl record --tracer lttng needs lttng-tools: \(missing)\n", status: 2, environment: noTools)
        // Left to choose, record says why it cannot use LTTng and records with the embedded recorder.
        let chosen = try CLI.run(["record", "--", "/bin/true"], environment: noTools)
        #expect(chosen.status == 3, "\(chosen.termination): \(chosen.stderr)")
        #expect(chosen.stderr.hasPrefix("rlctl: recording with the embedded recorder: LTTng needs lttng-tools: \(missing)\n"), "\(chosen.stderr)")
        try assertCommand(["run", "timers", "--tracer", "lttng", "--duration", "100ms"],
                          stderr: "rlctl: --tracer lttng needs lttng-tools: \(missing)\n", status: 2, environment: noTools)
    }

    @Test func recordBadInputs() throws {
        try expectUsageError(["record"], "give the program to record after --, e.g. rlctl record -- ./my-app, or attach to a running one with --pid PID")
        try expectUsageError(["record", "--"], "give the program to record after --, e.g. rlctl record -- ./my-app, or attach to a running one with --pid PID")
        try expectUsageError(["record", "--", "/nonexistent/program"], "/nonexistent/program: no such program (not a file, and not found in PATH)")
        try expectUsageError(["record", "--num-subbuf", "1", "--", "/bin/true"], "--num-subbuf must be at least 2 (got 1)")
        let existing = NSTemporaryDirectory()
        try expectUsageError(["record", "--output", existing, "--", "/bin/true"], "\(existing) already exists: give a new folder for the trace")
        try expectUsageError(["run", "timers", "--tracer", "perf"], "The value 'perf' is invalid for '--tracer <tracer>'. Please provide one of 'embedded', 'lttng' or 'none'.")
    }
}

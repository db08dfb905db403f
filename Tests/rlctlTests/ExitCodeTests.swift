import Foundation
import Glibc
import Testing
import TestSupport

/// The exit statuses the README documents, for the cases that used to get them wrong.
@Suite struct ExitCodeTests {
    @Test func noArgumentsIsAUsageError() throws {
        try assertCommand([], stderr: "rlctl: name a command: run, record, summarize, export, report, check, compare, list, top, doctor (rlctl --help describes them)\n",
                          status: 2)
    }

    @Test func helpForAnUnknownTopicIsAUsageError() throws {
        try assertCommand(["help", "nosuch"],
                          stderr: "rlctl: no help topic \"nosuch\" (the commands: run, record, summarize, export, report, check, compare, list, top, doctor)\n",
                          status: 2)
        try assertCommand(["help", "run", "extra"], stderr: "rlctl: help takes one command (got run extra)\n", status: 2)
        // Known topics and plain help still succeed (their text: CommandTests.helpIsTheManual).
        let known = try CLI.run(["help", "record"])
        #expect(known.termination == .exited(0) && known.stdout.contains("--output"), "\(known.termination): \(known.stderr)")
    }
}

/// `record` of a program that fails: status 1 and a message that says it failed, whether or not its loops ran.
@Suite(.serialized, .enabled(if: LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
struct RecordExitCodeTests {
    @Test func aProgramThatFailsBeforeItsLoopsRunIsAFailedProgram() throws {
        // runloop-demo refuses a bad argument with status 2 before any loop exists.
        let result = try CLI.run(["record", "--", CLI.sibling("runloop-demo"), "not-a-number"])
        #expect(result.status == 1, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("usage: runloop-demo"), "the program's own message comes through: \(result.stderr)")
        #expect(result.stderr.contains("runloop-demo exited with status 2, and no runloop events were recorded"), "\(result.stderr)")
        #expect(!result.stderr.contains("must call LoopEventSink.install"), "not the sink advice: \(result.stderr)")
    }

    @Test func aProgramKilledBeforeItsLoopsRunIsAFailedProgram() throws {
        let result = try CLI.run(["record", "--", "/bin/sh", "-c", "kill -TERM $$"])
        #expect(result.status == 1, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("sh was killed by signal 15"), "\(result.stderr)")
    }

    /// The program killed while it waits at its gate (rlctl is still setting up the session): opening the gate
    /// raised SIGPIPE, which ended rlctl without a word.
    @Test func aProgramKilledAtItsGateIsAFailedProgram() throws {
        // The gate is open only while rlctl sets up the LTTng session, a few milliseconds on a quiet machine: an
        // `lttng` first in PATH that takes 3 s over `start` holds the program there long enough to be caught.
        let real = try #require(TestEnvironment.executable("lttng"))
        let slowTools = temporaryPath("slow-lttng")
        try FileManager.default.createDirectory(atPath: slowTools, withIntermediateDirectories: true)
        try "#!/bin/sh\ncase \" $* \" in *\" start \"*) sleep 3 ;; esac\nexec \(real) \"$@\"\n"
            .write(toFile: slowTools + "/lttng", atomically: true, encoding: .utf8)
        chmod(slowTools + "/lttng", 0o755)
        let path = slowTools + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let rlctl = try CLI.start(["record", "--tracer", "lttng", "--", CLI.sibling("runloop-demo"), "1"],
                                  environment: ["PATH": path])
        // The gated child runs rlctl's image until it is released and executes the program; rlctl's other
        // children (the lttng script) run rlctl's image only for the instant before their exec.
        var caughtAtTheGate = false
        let end = ContinuousClock.now + .seconds(20)
        watch: while ContinuousClock.now < end && rlctl.isRunning {
            for child in rlctl.children where executablePath(of: child).hasSuffix("/rlctl") {
                usleep(100_000)
                if executablePath(of: child).hasSuffix("/rlctl") && rlctl.children.contains(child) {
                    kill(child, SIGKILL)
                    caughtAtTheGate = true
                    break watch
                }
            }
            usleep(1_000)
        }
        let result = rlctl.wait()
        try #require(caughtAtTheGate, "the program was never seen at its gate: \(result.termination): \(result.stderr)")
        #expect(result.status == 1, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("runloop-demo was killed by signal 9 (Killed) before it started; it did not run"), "\(result.stderr)")
    }

    @Test func aProgramThatSucceedsWithoutTheSinkStillGetsTheAdvice() throws {
        let result = try CLI.run(["record", "--", "/bin/true"])
        #expect(result.status == 3, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("LoopEventSink.installFromEnvironment()"), "\(result.stderr)")
    }
}

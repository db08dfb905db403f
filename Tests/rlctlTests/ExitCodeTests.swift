import Foundation
import Glibc
import Testing
import TestSupport

/// The exit statuses the README documents, for the cases that used to get them wrong.
@Suite struct ExitCodeTests {
    @Test func noArgumentsIsAUsageError() throws {
        try assertCommand([], stderr: "rlctl: name a command: run, record, summarize, export, check, compare, list, doctor (rlctl --help describes them)\n",
                          status: 2)
    }

    @Test func helpForAnUnknownTopicIsAUsageError() throws {
        try assertCommand(["help", "nosuch"],
                          stderr: "rlctl: no help topic \"nosuch\": the commands are run, record, summarize, export, check, compare, list, doctor\n",
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
        var caughtAtTheGate = false
        for _ in 0..<3 where !caughtAtTheGate {
            let rlctl = try CLI.start(["record", "--", CLI.sibling("runloop-demo"), "1"])
            // The gated child runs rlctl's image until it is released and executes the program; rlctl's other
            // children (lttng commands) run rlctl's image only for the instant before their exec.
            func children() -> [pid_t] {
                let text = (try? String(contentsOfFile: "/proc/\(rlctl.pid)/task/\(rlctl.pid)/children", encoding: .utf8)) ?? ""
                return text.split(separator: " ").compactMap { pid_t($0) }
            }
            func image(_ pid: pid_t) -> String { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? "" }
            let end = ContinuousClock.now + .seconds(10)
            watch: while ContinuousClock.now < end && rlctl.isRunning {
                for child in children() {
                    if image(child).hasSuffix("/runloop-demo") { break watch }   // released already: too late
                    guard image(child).hasSuffix("/rlctl") else { continue }
                    usleep(30_000)
                    if image(child).hasSuffix("/rlctl") && children().contains(child) {
                        kill(child, SIGKILL)
                        caughtAtTheGate = true
                        break watch
                    }
                }
                usleep(1_000)
            }
            let result = rlctl.wait()
            guard caughtAtTheGate else { continue }
            #expect(result.status == 1, "\(result.termination): \(result.stderr)")
            if !result.stderr.contains("before it started") {
                // rlctl had opened the gate between the last look and the kill (the child was still on its way to
                // exec): a failed program too, reported as one that ran; try again for the gate itself.
                #expect(result.stderr.contains("runloop-demo was killed by signal 9 (Killed), and no runloop events were recorded"), "\(result.stderr)")
                caughtAtTheGate = false
                continue
            }
            #expect(result.stderr.contains("runloop-demo was killed by signal 9 (Killed) before it started; it did not run"), "\(result.stderr)")
            break
        }
        #expect(caughtAtTheGate, "the program was never caught at its gate in three tries")
    }

    @Test func aProgramThatSucceedsWithoutTheSinkStillGetsTheAdvice() throws {
        let result = try CLI.run(["record", "--", "/bin/true"])
        #expect(result.status == 3, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("LoopEventSink.installFromEnvironment()"), "\(result.stderr)")
    }
}

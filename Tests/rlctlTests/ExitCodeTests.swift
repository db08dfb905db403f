import Foundation
import Glibc
import Testing

/// The exit statuses the README documents, for the cases that used to get them wrong.
@Suite struct ExitCodeTests {
    private func expectOneLineUsageError(_ result: CLI.Result, mentions: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 2, "exit \(result.status): \(result.stdout)\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, "usage errors print nothing on stdout: \(result.stdout.prefix(200))", sourceLocation: sourceLocation)
        #expect(result.stderr.hasPrefix("rlctl: ") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(mentions), "\(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test func noArgumentsIsAUsageError() throws {
        let result = try CLI.run([])
        expectOneLineUsageError(result, mentions: "name a command")
        for command in ["run", "record", "summarize", "doctor"] { #expect(result.stderr.contains(command)) }
    }

    @Test func helpForAnUnknownTopicIsAUsageError() throws {
        expectOneLineUsageError(try CLI.run(["help", "nosuch"]), mentions: "no help topic \"nosuch\"")
        expectOneLineUsageError(try CLI.run(["help", "run", "extra"]), mentions: "one command")
        // Known topics and plain help still succeed.
        let known = try CLI.run(["help", "record"])
        #expect(known.status == 0 && known.stdout.contains("--output"), "\(known.stderr)")
        #expect(try CLI.run(["help"]).status == 0)
        #expect(try CLI.run(["--help"]).status == 0)
    }
}

/// `record` of a program that fails: status 1 and a message that says it failed, whether or not its loops ran.
@Suite(.serialized, .enabled(if: LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
struct RecordExitCodeTests {
    @Test func aProgramThatFailsBeforeItsLoopsRunIsAFailedProgram() throws {
        // runloop-demo refuses a bad argument with status 2 before any loop exists.
        let result = try CLI.run(["record", "--", CLI.sibling("runloop-demo"), "not-a-number"])
        #expect(result.status == 1, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("usage: runloop-demo"), "the program's own message comes through: \(result.stderr)")
        #expect(result.stderr.contains("runloop-demo exited with status 2, and no runloop events were recorded"), "\(result.stderr)")
        #expect(!result.stderr.contains("must call LoopEventSink.install"), "not the sink advice: \(result.stderr)")
    }

    @Test func aProgramKilledBeforeItsLoopsRunIsAFailedProgram() throws {
        let result = try CLI.run(["record", "--", "/bin/sh", "-c", "kill -TERM $$"])
        #expect(result.status == 1, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("sh was killed by signal 15"), "\(result.stderr)")
    }

    /// The program killed while it waits at its gate (rlctl is still setting up the session): opening the gate
    /// raised SIGPIPE, which ended rlctl without a word.
    @Test func aProgramKilledAtItsGateIsAFailedProgram() throws {
        var caughtAtTheGate = false
        for _ in 0..<3 where !caughtAtTheGate {
            var result: CLI.Result?
            result = try CLI.run(["record", "--", CLI.sibling("runloop-demo"), "1"]) { process in
                // The gated child runs rlctl's image until it is released and executes the program; rlctl's other
                // children (lttng commands) run rlctl's image only for the instant before their exec.
                func children() -> [pid_t] {
                    let text = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/task/\(process.processIdentifier)/children", encoding: .utf8)) ?? ""
                    return text.split(separator: " ").compactMap { pid_t($0) }
                }
                func image(_ pid: pid_t) -> String { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? "" }
                let end = ContinuousClock.now + .seconds(10)
                while ContinuousClock.now < end && process.isRunning {
                    for child in children() {
                        if image(child).hasSuffix("/runloop-demo") { return }   // released already: too late
                        guard image(child).hasSuffix("/rlctl") else { continue }
                        usleep(30_000)
                        if image(child).hasSuffix("/rlctl") && children().contains(child) {
                            kill(child, SIGKILL)
                            caughtAtTheGate = true
                            return
                        }
                    }
                    usleep(1_000)
                }
            }
            guard caughtAtTheGate, let result else { continue }
            #expect(result.status == 1, "exit \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("runloop-demo was killed by signal 9 (Killed) before it started; it did not run"), "\(result.stderr)")
        }
        #expect(caughtAtTheGate, "the program was never caught at its gate in three tries")
    }

    @Test func aProgramThatSucceedsWithoutTheSinkStillGetsTheAdvice() throws {
        let result = try CLI.run(["record", "--", "/bin/true"])
        #expect(result.status == 3, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("LoopEventSink.install(LTTngSink())"), "\(result.stderr)")
    }
}

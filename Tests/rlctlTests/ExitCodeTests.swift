import Foundation
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

    @Test func aProgramThatSucceedsWithoutTheSinkStillGetsTheAdvice() throws {
        let result = try CLI.run(["record", "--", "/bin/true"])
        #expect(result.status == 3, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("LoopEventSink.install(LTTngSink())"), "\(result.stderr)")
    }
}

import Foundation
import Glibc
import Testing
import TestSupport

/// `rlctl record` of a program whose run never ends because the program is interrupted, terminated or killed:
/// the summary measures what the tracer recorded, says the run did not end, and `check` does not pass on it
/// (the embedded recorder's cases are in EmbeddedRecordTests, which need no LTTng).
@Suite(.serialized, .enabled(if: LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
struct CutOffRecordTests {
    @Test(arguments: [SIGINT, SIGTERM, SIGKILL])
    func aRecordedProgramCutOffBySignal(signal: Int32) throws {
        try Self.recordAndCutOff(tracer: "lttng", signal: signal)
    }

    /// Records runloop-demo (asked to run 10 s) with `tracer` and 1.5 s after it started sends `signal` as it
    /// arrives in real life: SIGINT (Ctrl-C) to both rlctl and the program, as a terminal sends it to its
    /// foreground process group; SIGTERM to rlctl, which passes it on; SIGKILL to the program.
    static func recordAndCutOff(tracer: String, signal: Int32) throws {
        let output = temporaryPath("cut-record")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let rlctl = try CLI.start(["record", "--tracer", tracer, "--output", output, "--", CLI.sibling("runloop-demo"), "10"])
        let program = rlctl.child(running: "runloop-demo")
        usleep(1_500_000)
        let target = signal == SIGTERM ? rlctl.pid : program
        if let target { kill(target, signal) }
        if signal == SIGINT { rlctl.send(SIGINT) }
        let result = rlctl.wait()
        try #require(target != nil, "no program to kill")
        #expect(result.status == 1, "the program failed: \(result.termination), \(result.stderr)")
        #expect(result.stdout.contains("did not end 1 (trace cut off at +"), "\(result.stdout.prefix(800))")
        #expect(!result.stdout.contains("wall 0ns"))

        let summary = try CutOffRunTests.summary(output)
        let loop = try CutOffRunTests.loop(summary)
        try CutOffRunTests.expectFiguresMatch(output, loop)
        #expect(loop["results"] as? [String: Int] == ["did_not_end": 1])
        let wall = CutOffRunTests.uint(loop["wallNanoseconds"])
        #expect(wall > 500_000_000 && wall < 5_000_000_000, "it ran about 1.5 s: \(wall) ns")

        // The embedded recorder completes its trace unless the program was killed outright.
        if tracer == "embedded" {
            #expect(((summary["health"] as? [String: Any])?["recordingCutOff"] as? Bool ?? false) == (signal == SIGKILL))
        }

        let verdict = try CutOffRunTests.check(output, budget: CutOffRunTests.budget)
        #expect(verdict.status == 3, "\(verdict.stdout)")
        #expect(!verdict.stdout.contains("PASS") && verdict.stdout.contains("cut off"), "\(verdict.stdout)")
    }
}

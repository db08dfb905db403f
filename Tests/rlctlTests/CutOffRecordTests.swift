import Foundation
import Glibc
import Testing

/// `rlctl record` of a program whose run never ends because the program is interrupted, terminated or killed:
/// the summary measures what LTTng recorded, says the run did not end, and `check` does not pass on it.
@Suite(.serialized, .enabled(if: LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
struct CutOffRecordTests {
    /// The pid of `parent`'s one child (the recorded program).
    private func child(of parent: pid_t) -> pid_t? {
        let pgrep = Process()
        pgrep.executableURL = URL(fileURLWithPath: "/usr/bin/pgrep")
        pgrep.arguments = ["-P", String(parent)]
        let out = Pipe()
        pgrep.standardOutput = out
        guard (try? pgrep.run()) != nil else { return nil }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        pgrep.waitUntilExit()
        return text.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    /// Records runloop-demo (asked to run 10 s) and after 1.5 s sends `signal` as it arrives in real life: SIGINT
    /// (Ctrl-C) to both rlctl and the program, as a terminal sends it to its foreground process group; SIGTERM to
    /// rlctl, which passes it on; SIGKILL to the program.
    @Test(arguments: [SIGINT, SIGTERM, SIGKILL])
    func aRecordedProgramCutOffBySignal(signal: Int32) throws {
        let output = CLI.temporary("cut-record")
        defer { try? FileManager.default.removeItem(atPath: output) }
        var target: pid_t?
        let result = try CLI.run(["record", "--output", output, "--", CLI.sibling("runloop-demo"), "10"]) { process in
            usleep(1_500_000)
            target = signal == SIGTERM ? process.processIdentifier : child(of: process.processIdentifier)
            if let target { kill(target, signal) }
            if signal == SIGINT { kill(process.processIdentifier, SIGINT) }
        }
        try #require(target != nil, "no program to kill")
        #expect(result.status == 1, "the program failed: \(result.stderr)")
        #expect(result.stdout.contains("did not end 1 (trace cut off at +"), "\(result.stdout.prefix(800))")
        #expect(!result.stdout.contains("wall 0ns"))

        let summary = try CutOffRunTests.summary(output)
        let loop = try CutOffRunTests.loop(summary)
        try CutOffRunTests.expectFiguresMatch(output, loop)
        #expect(loop["results"] as? [String: Int] == ["did_not_end": 1])
        let wall = CutOffRunTests.uint(loop["wallNanoseconds"])
        #expect(wall > 500_000_000 && wall < 5_000_000_000, "it ran about 1.5 s: \(wall) ns")

        let verdict = try CutOffRunTests.check(output, budget: CutOffRunTests.budget)
        #expect(verdict.status == 3, "\(verdict.stdout)")
        #expect(!verdict.stdout.contains("PASS") && verdict.stdout.contains("cut off"), "\(verdict.stdout)")
    }
}

import Foundation
import Testing
import TestSupport

/// A damaged trace as a CI gate meets it: `check` never passes a trace that lost a stream file, and `summarize`
/// says what is missing.
@Suite struct TraceDamageTests {
    @Test func checkFailsATraceMissingAStreamFileAndSummarizeNamesIt() throws {
        let trace = temporaryPath("damage-missing-stream")
        let run = try CLI.run(["run", "mixed", "--duration", "300ms", "--trace", trace])
        #expect(run.status == 0, "\(run.stderr)")
        let streams = try FileManager.default.contentsOfDirectory(atPath: trace).filter { $0.hasPrefix("stream-") }
        let largest = try #require(streams.max { size(trace + "/" + $0) < size(trace + "/" + $1) })
        try FileManager.default.removeItem(atPath: trace + "/" + largest)

        let budget = try CLI.file("damage.budget", "trace.lost == 0\n")
        let check = try CLI.run(["check", trace, "--budget", budget])
        #expect(check.status == 3, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("FAIL trace.lost"), "\(check.stdout)")

        let summary = try CLI.run(["summarize", trace])
        #expect(summary.status == 0)
        #expect(summary.stdout.contains("INCOMPLETE"), "\(summary.stdout)")
        #expect(summary.stdout.contains("damaged: \(largest) is missing"), "\(summary.stdout)")
    }

    private func size(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}

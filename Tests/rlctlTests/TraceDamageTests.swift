import Foundation
import Glibc
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

    /// A recording that fills its disk stops writing: `record` says the recorder could not write the trace, and why,
    /// instead of taking the program for killed, and does not exit 0 (it did, blaming "killed or crashed").
    @Test func recordOnAFullDiskSaysSoAndFails() throws {
        let disk = temporaryPath("full-disk")
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        guard mount("tmpfs", disk, "tmpfs", 0, "size=64k") == 0 else {
            Issue.record("cannot mount a 64 KiB tmpfs at \(disk) (needs root): \(String(cString: strerror(errno)))")
            return
        }
        defer { umount2(disk, Int32(MNT_DETACH)) }
        // (The kernel view off: its own writes into the same folder would race the program's for the last bytes.)
        let result = try CLI.run(["record", "--tracer", "embedded", "--kernel", "off", "--output", disk + "/trace", "--", CLI.sibling("runloop-demo"), "1"])
        #expect(result.status == 3, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("the recording could not write its trace (No space left on device)"), "\(result.stdout)")
        #expect(!result.stdout.contains("killed or crashed"), "\(result.stdout)")
        #expect(result.stderr.contains("could not write it (No space left on device)"), "\(result.stderr)")
        // With the kernel view too, whichever filled the disk first: the cause is the full disk, never a program that
        // did not install its tracer.
        try FileManager.default.removeItem(atPath: disk + "/trace")
        let both = try CLI.run(["record", "--tracer", "embedded", "--output", disk + "/trace", "--", CLI.sibling("runloop-demo"), "1"])
        #expect(both.status == 3, "\(both.stdout)\(both.stderr)")
        #expect(both.stderr.contains("No space left on device") && !both.stderr.contains("installFromEnvironment"), "\(both.stderr)")
    }

    private func size(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}

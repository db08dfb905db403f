import Foundation
import Glibc
import Testing
import TestSupport

/// `rlctl top` on embedded recordings still being written (issue 15, item 3 without LTTng): a recording
/// registers its folder while it records, and top reads its packets as they reach the disk. Each test keeps a
/// registry of its own (RLCTL_LIVE_DIR), and hides LTTng (PATH), so it needs nothing installed and sees no other
/// test's recordings.
@Suite(.serialized) struct TopEmbeddedTests {
    /// rlctl's environment with a registry of the test's own and LTTng hidden: top sees the test's recordings only.
    static func isolated(_ registry: String) -> [String: String?] {
        ["RLCTL_LIVE_DIR": registry, "PATH": "/nonexistent-rlctl-test"]
    }

    /// Expects process `pid` to register its recording in `registry` (within 20 s).
    static func expectRegistered(_ pid: Int32, in registry: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(eventually(timeout: .seconds(20)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: registry)) ?? []).contains { $0.hasPrefix("\(pid)-") }
        }, "rlctl run registered its recording", sourceLocation: sourceLocation)
    }

    @Test func anEmbeddedRecordingShowsAsARowWhileItIsWritten() throws {
        let registry = temporaryPath("live-registry")
        let trace = temporaryPath("top-embedded.rltrace")
        defer { try? FileManager.default.removeItem(atPath: registry); try? FileManager.default.removeItem(atPath: trace) }
        let environment = TopEmbeddedTests.isolated(registry)

        let empty = try CLI.run(["top", "--once", "--interval", "200ms"], environment: environment)
        #expect(empty.status == 0, "\(empty.stderr)")
        #expect(empty.stderr.contains("rlctl: showing the embedded recorder's recordings only: LTTng needs lttng-tools"), "\(empty.stderr)")
        #expect(empty.stdout.contains("(no embedded recording being written)"), "\(empty.stdout)")

        // A process that died without stopping its recording left its registration: top removes it.
        try FileManager.default.createDirectory(atPath: registry, withIntermediateDirectories: true)
        let stale = registry + "/999999999-1"
        try "/nonexistent-trace\n".write(toFile: stale, atomically: true, encoding: .utf8)

        // jank: 60 frames a second, every 10th burns 25 ms (about 15% busy), until SIGTERM below.
        let run = try CLI.start(["run", "jank", "--duration", "120s", "--trace", trace], environment: environment)
        defer { run.send(SIGTERM); _ = run.wait() }
        TopEmbeddedTests.expectRegistered(run.pid, in: registry)
        let shown = try CLI.run(["top", "--once", "--format", "json", "--stall", "20ms"], environment: environment)
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stale), "the dead process's registration is removed")
        let (sessions, loops) = try TopTests.rows(shown)
        #expect(sessions == 1)
        let loop = try #require(loops.first, "\(shown.stdout)")
        #expect(loops.count == 1)
        #expect(loop["kind"] as? String == "RunLoopCore")
        #expect(loop["name"] as? String == "main", "the loop's name comes from the trace's first packet")
        #expect(loop["processID"] as? Int == Int(run.pid))
        #expect(loop["session"] as? String == "embedded \(trace)")
        let iterations = loop["iterationsPerSecond"] as? Double ?? 0
        #expect(iterations > 30 && iterations < 90, "\(loop)")
        let utilization = loop["utilization"] as? Double ?? 0
        #expect(utilization > 0.05 && utilization < 0.5, "\(loop)")
        #expect((loop["worstStallNanoseconds"] as? Int ?? 0) >= 20_000_000, "a 25 ms burn in the interval: \(loop)")
        #expect(loop["lostEvents"] as? Int == 0)

        // The recording stops: its registration goes, and the loop drops out.
        run.send(SIGTERM)
        let ended = run.wait()
        #expect(ended.status == 0, "\(ended.termination): \(ended.stderr)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: registry)) ?? []).isEmpty, "a stopped recording unregisters")
        let after = try CLI.run(["top", "--once", "--format", "json"], environment: environment)
        #expect(try TopTests.rows(after).loops.isEmpty, "\(after.stdout)")
    }

    /// The run-queue columns are there without a kernel view too: "-" on every row, and why said once, on the
    /// status line and as `kernel.unavailableReason` in the JSON (null on each row).
    @Test func withoutTheKernelViewTheRunQueueColumnSaysWhyOnce() throws {
        let registry = temporaryPath("live-registry")
        let trace = temporaryPath("top-no-kernel.rltrace")
        defer { try? FileManager.default.removeItem(atPath: registry); try? FileManager.default.removeItem(atPath: trace) }
        let environment = TopEmbeddedTests.isolated(registry)
        let run = try CLI.start(["run", "jank", "--duration", "120s", "--trace", trace, "--kernel", "off"], environment: environment)
        defer { run.send(SIGTERM); _ = run.wait() }
        TopEmbeddedTests.expectRegistered(run.pid, in: registry)

        let shown = try CLI.run(["top", "--once", "--format", "json", "--kernel", "off"], environment: environment)
        #expect(shown.status == 0, "\(shown.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
        let kernel = try #require(document["kernel"] as? [String: Any], "\(shown.stdout)")
        #expect(kernel["status"] as? String == "not available")
        #expect(kernel["unavailableReason"] as? String == "--kernel off")
        let loop = try #require((document["loops"] as? [[String: Any]])?.first, "\(shown.stdout)")
        for column in ["runQueueShare", "throttledShare", "kernelLostRecords"] {
            #expect(loop.keys.contains(column) && loop[column] is NSNull, "\(column) is on the row, as null: \(loop)")
        }

        let text = try CLI.run(["top", "--once", "--kernel", "off", "--sort", "runqueue"], environment: environment)
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasSuffix("sorted by runqueue — run queue: not available (--kernel off)") == true, "\(text.stdout)")
        #expect(lines.dropFirst().first?.contains("util  run queue  throttled") == true, "\(text.stdout)")
        #expect(text.stdout.components(separatedBy: "not available").count == 2, "said once: \(text.stdout)")

        let remote = try CLI.run(["top", "--relayd", "net://127.0.0.1:1", "--kernel", "on", "--once"], environment: environment)
        #expect(remote.status == 2 && remote.stdout.isEmpty, "\(remote.stdout)")
        #expect(remote.stderr.contains("--kernel on: the kernel view sees this machine's threads"), "\(remote.stderr)")
    }
}

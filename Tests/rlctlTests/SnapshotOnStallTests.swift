import Foundation
import Glibc
import Testing
import TestSupport

/// `rlctl record --snapshot-on-stall` (issue 15, item 2, LTTng): a snapshot-mode session and a trigger on the
/// loops' own stall reports; one snapshot per stall, rate-limited, each explained. Needs LTTng (as
/// LTTngCommandTests: with CI=true a machine without it fails rather than skips).
@Suite(.serialized, .enabled(if: LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.skipComment))
struct SnapshotOnStallTests {
    /// runloop-demo burns 24 ms every 20th frame, about three times a second: with a 20 ms threshold, at most 2
    /// snapshots 300 ms apart in 3 s (long enough for a loaded machine's `lttng snapshot record` to be done with
    /// the first before the program ends). Each holds its stall, the `frame` timer as culprit, and iterations
    /// before.
    @Test func eachStallTakesASnapshotThatExplainsIt() throws {
        let output = temporaryPath("snapshot-on-stall")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["record", "--snapshot-on-stall", "20ms", "--max-snapshots", "2", "--snapshot-gap", "300ms",
                                  "--output", output, "--format", "json", "--", CLI.sibling("runloop-demo"), "3"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let line = result.stdout.split(separator: "\n", maxSplits: 1).last ?? ""
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(result.stdout)")
        let snapshots = json["snapshots"] as? [[String: Any]] ?? []
        #expect(snapshots.count == 2, "\(line.prefix(600))")
        let seen = json["seenAt"] as? [Int] ?? []
        for (index, snapshot) in snapshots.enumerated() {
            let path = snapshot["path"] as? String ?? ""
            #expect(path == output + "/snapshot-\(index + 1)", "snapshot folders are named by their order")
            #expect(snapshot["eventsLost"] as? Int == 0)
            let stalls = snapshot["stalls"] as? [[String: Any]] ?? []
            let trigger = try #require(stalls.last { ($0["report"] as? [String: Any])?["reportedAtNanoseconds"] as? Int ?? .max <= seen[index] })
            let report = trigger["report"] as? [String: Any] ?? [:]
            #expect((report["busyNanoseconds"] as? Int ?? 0) >= 20_000_000)
            #expect(report["culpritLabel"] as? String == "frame")
            #expect(report["culpritKind"] as? String == "timer")
            #expect(!(trigger["before"] as? [Any] ?? []).isEmpty, "the iterations before the stall are in the snapshot")
            // A snapshot is an ordinary trace: summarize reads it and finds the stall.
            let summary = try CLI.run(["summarize", path])
            #expect(summary.status == 0, "\(summary.stderr)")
            #expect(summary.stdout.contains("longest callout timer 'frame'"), "\(summary.stdout.suffix(800))")
        }
        if seen.count == 2 { #expect(seen[1] - seen[0] >= 300_000_000, "the gap between snapshots: \(seen)") }
        // The folder of snapshots: each summarized on its own, never merged (they overlap).
        let all = try CLI.run(["summarize", output])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.stdout.hasPrefix("\(output): traces of \(snapshots.count) snapshots, each summarized on its own"), "\(all.stdout.prefix(300))")

        let text = try CLI.run(["record", "--snapshot-on-stall", "20ms", "--max-snapshots", "1",
                                "--output", output + "-text", "--", CLI.sibling("runloop-demo"), "0.8"])
        defer { try? FileManager.default.removeItem(atPath: output + "-text") }
        #expect(text.status == 0, "stderr: \(text.stderr)")
        #expect(text.stdout.contains("1 snapshot (the most allowed, --max-snapshots 1)"), "\(text.stdout)")
        #expect(text.stdout.contains("culprit: timer 'frame'"), "\(text.stdout)")
        #expect(text.stdout.contains("before it (oldest first):"), "\(text.stdout)")
        #expect(text.stdout.contains("after the stall was reported"), "\(text.stdout)")
    }

    /// `rlctl run` the same way, in its own process: jank's every 10th frame burns 25 ms (3 s: time for a loaded
    /// machine to take two snapshots).
    @Test func runTakesSnapshotsOfItsOwnWorkload() throws {
        let output = temporaryPath("run-snapshot-on-stall")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["run", "jank", "--duration", "3s", "--tracer", "lttng", "--snapshot-on-stall", "20ms",
                                  "--max-snapshots", "2", "--snapshot-gap", "100ms", "--trace", output])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("LTTng snapshots on stalls, ran "), "\(result.stdout.prefix(300))")
        #expect(result.stdout.contains("2 snapshots (the most allowed, --max-snapshots 2)"), "\(result.stdout)")
        #expect(result.stdout.components(separatedBy: "culprit: timer 'jank-1'").count == 3, "\(result.stdout)")
        let folders = try FileManager.default.contentsOfDirectory(atPath: output).filter { $0.hasPrefix("snapshot-") }
        #expect(folders.sorted() == ["snapshot-1", "snapshot-2"], "snapshot folders are named by their order")

        let bad: [([String], String)] = [
            (["--snapshot-on-stall", "20ms", "--repeat", "2"], "not with --repeat"),
            (["--snapshot-on-stall", "20ms", "--tracer", "none"], "--snapshot-on-stall needs a tracer to take snapshots: not with --tracer none"),
            (["--snapshot-on-stall", "0"], "--snapshot-on-stall must be longer than 0"),
            (["--snapshot-gap", "1s"], "--max-snapshots and --snapshot-gap go with --snapshot-on-stall"),
        ]
        for (flags, message) in bad {
            let refused = try CLI.run(["run", "jank", "--duration", "100ms"] + flags)
            #expect(refused.status == 2, "\(flags): \(refused.stderr)")
            #expect(refused.stderr.contains(message), "\(flags): \(refused.stderr)")
        }
    }

    /// No snapshot has two meanings, told apart: no stall that long (exit 0, said), or no event at all from a
    /// program that never installed the tracer (exit 3, with what to do).
    @Test func noSnapshotSaysWhy() throws {
        let quiet = temporaryPath("snapshot-none")
        defer { try? FileManager.default.removeItem(atPath: quiet) }
        let calm = try CLI.run(["record", "--snapshot-on-stall", "500ms", "--output", quiet, "--", CLI.sibling("runloop-demo"), "0.4"])
        #expect(calm.status == 0, "stderr: \(calm.stderr)")
        #expect(calm.stdout.contains("no loop reported a stall that long: no snapshot taken"), "\(calm.stdout)")

        let untraced = try CLI.run(["record", "--snapshot-on-stall", "20ms", "--output", quiet + "-untraced", "--", "/bin/true"])
        defer { try? FileManager.default.removeItem(atPath: quiet + "-untraced") }
        #expect(untraced.status == 3, "stderr: \(untraced.stderr)")
        #expect(untraced.stderr.contains("no runloop events reached the snapshot session from /bin/true"), "\(untraced.stderr)")
        #expect(untraced.stderr.contains("LoopEventSink.installFromEnvironment()"))
    }

    @Test func badSnapshotFlagsAreOneLineErrors() throws {
        let cases: [([String], String)] = [
            (["--snapshot-on-stall", "0"], "--snapshot-on-stall must be longer than 0"),
            (["--snapshot-on-stall", "-1ms"], "-1ms"),
            (["--snapshot-on-stall", "20ms", "--max-snapshots", "0"], "--max-snapshots must be at least 1"),
            (["--snapshot-on-stall", "20ms", "--any"], "not with --any"),
            (["--max-snapshots", "3"], "--max-snapshots and --snapshot-gap go with --snapshot-on-stall"),
        ]
        for (flags, message) in cases {
            let result = try CLI.run(["record"] + flags + ["--", CLI.sibling("runloop-demo"), "0.2"])
            #expect(result.status == 2, "\(flags): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(flags): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count <= 2, "\(flags): \(result.stderr)")
        }
    }
}

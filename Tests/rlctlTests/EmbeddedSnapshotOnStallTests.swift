import Foundation
import Glibc
import Testing
import TestSupport

/// `--snapshot-on-stall` with the embedded recorder (issue 15, item 2 without LTTng): the program's own recorder
/// is a flight recorder that writes a snapshot for each stall its loops report; rlctl lists and explains them
/// exactly as it does LTTng's. Needs nothing installed.
@Suite(.serialized) struct EmbeddedSnapshotOnStallTests {
    static func json(_ stdout: String) throws -> [String: Any] {
        let line = stdout.split(separator: "\n").last ?? ""
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(stdout)")
    }

    /// runloop-demo burns 24 ms every 20th frame, about three times a second: with a 20 ms threshold, 2
    /// snapshots at least 300 ms apart in 1.5 s, each holding its stall, the `frame` timer and the iterations before.
    @Test func recordTakesASnapshotPerStallAndExplainsEach() throws {
        let output = temporaryPath("embedded-snapshots")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["record", "--tracer", "embedded", "--snapshot-on-stall", "20ms", "--max-snapshots", "2",
                                  "--snapshot-gap", "300ms", "--output", output, "--format", "json", "--",
                                  CLI.sibling("runloop-demo"), "1.5"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let json = try Self.json(result.stdout)
        #expect(json["tracer"] as? String == "embedded flight recorder")
        let snapshots = json["snapshots"] as? [[String: Any]] ?? []
        #expect(snapshots.map { $0["path"] as? String } == [output + "/snapshot-1", output + "/snapshot-2"])
        let seen = json["seenAt"] as? [Int] ?? []
        for (index, snapshot) in snapshots.enumerated() {
            #expect(snapshot["eventsLost"] as? Int == 0)
            let stalls = snapshot["stalls"] as? [[String: Any]] ?? []
            let trigger = try #require(stalls.last)
            let report = trigger["report"] as? [String: Any] ?? [:]
            #expect((report["busyNanoseconds"] as? Int ?? 0) >= 20_000_000)
            #expect(report["culpritLabel"] as? String == "frame")
            #expect(report["loopName"] as? String == "main")
            #expect((report["reportedAtNanoseconds"] as? Int ?? .max) <= seen[index], "the snapshot is written after its stall")
            #expect(!(trigger["before"] as? [Any] ?? []).isEmpty)
            // A snapshot is an ordinary trace folder.
            let summary = try CLI.run(["summarize", output + "/snapshot-\(index + 1)"])
            #expect(summary.status == 0, "\(summary.stderr)")
            #expect(summary.stdout.contains("longest callout timer 'frame'"), "\(summary.stdout.suffix(800))")
        }
        // The gap is between the stalls that took the snapshots (their ends, when the policy allowed each), not
        // between the writes: the snapshot thread writes later, later still on a loaded machine.
        let taken = snapshots.map { snapshot -> Int in
            let report = (snapshot["stalls"] as? [[String: Any]])?.last?["report"] as? [String: Any] ?? [:]
            return (report["startNanoseconds"] as? Int ?? 0) + (report["busyNanoseconds"] as? Int ?? 0)
        }
        if taken.count == 2 { #expect(taken[1] - taken[0] >= 300_000_000, "the gap between the snapshots' stalls: \(taken)") }
        // The folder of snapshots: each summarized on its own (two copies of one ring overlap; merged, their
        // shared events would count twice).
        let all = try CLI.run(["summarize", output])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.stdout.hasPrefix("\(output): traces of 2 snapshots, each summarized on its own"), "\(all.stdout.prefix(300))")
        #expect(all.stdout.contains("== snapshot snapshot-1 ==") && all.stdout.contains("== snapshot snapshot-2 =="))
        for (index, snapshot) in snapshots.enumerated() {
            let events = snapshot["events"] as? Int ?? -1
            #expect(all.stdout.contains("snapshot-\(index + 1)  ") && all.stdout.contains(" \(events) "), "snapshot \(index + 1) has \(events) events: \(all.stdout.prefix(500))")
        }
    }

    /// With no LTTng to be had, record says so and takes the snapshots with the embedded recorder.
    @Test func withoutLTTngRecordFallsBackToTheEmbeddedRecorderAndSaysSo() throws {
        let output = temporaryPath("embedded-snapshots-fallback")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["record", "--snapshot-on-stall", "20ms", "--max-snapshots", "1", "--output", output, "--",
                                  CLI.sibling("runloop-demo"), "0.8"], environment: ["PATH": "/nonexistent-rlctl-test"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.hasPrefix("rlctl: taking the snapshots with the embedded recorder's flight recorder: LTTng needs lttng-tools: "), "\(result.stderr)")
        #expect(result.stdout.contains("snapshots on stalls of 20.0ms or more (embedded flight recorder)"), "\(result.stdout)")
        #expect(result.stdout.contains("1 snapshot (the most allowed, --max-snapshots 1)"), "\(result.stdout)")
        #expect(result.stdout.contains("culprit: timer 'frame'"), "\(result.stdout)")
        #expect(result.stdout.contains("before it (oldest first):"), "\(result.stdout)")
        #expect(result.stdout.contains("after the stall was reported"), "\(result.stdout)")
    }

    /// `rlctl run` takes them with the embedded recorder by default: jank's every 10th frame burns 25 ms.
    @Test func runTakesSnapshotsOfItsWorkloadWithTheEmbeddedRecorder() throws {
        let output = temporaryPath("embedded-run-snapshots")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["run", "jank", "--duration", "1200ms", "--snapshot-on-stall", "20ms", "--max-snapshots", "2",
                                  "--snapshot-gap", "100ms", "--trace", output])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("embedded snapshots on stalls, ran "), "\(result.stdout.prefix(300))")
        #expect(result.stdout.contains("2 snapshots (the most allowed, --max-snapshots 2)"), "\(result.stdout)")
        #expect(result.stdout.components(separatedBy: "culprit: timer 'jank-1'").count == 3, "\(result.stdout)")
        let folders = try FileManager.default.contentsOfDirectory(atPath: output).filter { $0.hasPrefix("snapshot-") }.sorted()
        #expect(folders == ["snapshot-1", "snapshot-2"])
    }

    /// No snapshot: no stall that long (exit 0, said), or no event at all from a program that never installed the
    /// tracer (exit 3, with what to do).
    @Test func noSnapshotSaysWhy() throws {
        let calm = temporaryPath("embedded-snapshots-calm")
        defer { try? FileManager.default.removeItem(atPath: calm) }
        let quiet = try CLI.run(["record", "--tracer", "embedded", "--snapshot-on-stall", "500ms", "--output", calm, "--",
                                 CLI.sibling("runloop-demo"), "0.4"])
        #expect(quiet.status == 0, "stderr: \(quiet.stderr)")
        #expect(quiet.stdout.contains("no loop reported a stall that long: no snapshot taken"), "\(quiet.stdout)")

        let untraced = temporaryPath("embedded-snapshots-untraced")
        defer { try? FileManager.default.removeItem(atPath: untraced) }
        let none = try CLI.run(["record", "--tracer", "embedded", "--snapshot-on-stall", "20ms", "--output", untraced, "--", "/bin/true"])
        #expect(none.status == 3, "stderr: \(none.stderr)")
        #expect(none.stderr.contains("no runloop events reached the flight recorder from /bin/true"), "\(none.stderr)")
        #expect(none.stderr.contains("LoopEventSink.installFromEnvironment()"))
    }

    /// The program's side: bad values in its environment are said once on stderr, and the program runs untraced.
    @Test func badSnapshotSettingsInTheEnvironmentAreSaidAndNotFatal() throws {
        let folder = temporaryPath("embedded-snapshots-env")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let cases: [([String: String], String)] = [
            (["RLCTL_SNAPSHOT_ON_STALL": "0"], "RLCTL_SNAPSHOT_ON_STALL=0: the threshold must be longer than zero"),
            (["RLCTL_SNAPSHOT_ON_STALL": "soon"], "RLCTL_SNAPSHOT_ON_STALL=soon is not a duration"),
            (["RLCTL_SNAPSHOT_ON_STALL": "20ms", "RLCTL_MAX_SNAPSHOTS": "0"], "RLCTL_MAX_SNAPSHOTS=0 is not a number of snapshots (1 or more)"),
            (["RLCTL_SNAPSHOT_ON_STALL": "20ms", "RLCTL_SNAPSHOT_GAP": "-1s"], "RLCTL_SNAPSHOT_GAP=-1s"),
        ]
        for (settings, message) in cases {
            var environment: [String: String?] = ["RLCTL_TRACER": "embedded", "RLCTL_TRACE_DIR": folder]
            for (name, value) in settings { environment[name] = value }
            let result = try runProcess(CLI.sibling("runloop-demo"), ["0.1"], ProcessOptions(environment: environment, timeout: .seconds(30)))
            #expect(result.status == 0, "\(settings): \(result.stderr)")
            #expect(result.stderr.contains("rlctl tracing: \(message)"), "\(settings): \(result.stderr)")
            #expect(result.stderr.contains("this process is not traced"), "\(settings): \(result.stderr)")
        }
    }
}

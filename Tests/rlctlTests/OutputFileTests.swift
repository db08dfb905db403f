import Foundation
import Glibc
import Testing
import TestSupport

/// Issue 27, "never a silent wrong answer": what rlctl writes as a result is whole or absent, apart from the
/// program's own output, and a path it cannot write is refused before the work that would be lost.
@Suite struct OutputFileTests {
    private func readText(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    /// A program that prints (the NIO example server's `listening on …`) made `record --format json` unparseable.
    @Test func recordWritesItsSummaryToTheSummaryFileAloneAndTheProgramKeepsStdout() throws {
        let summary = temporaryPath("record-summary.json")
        defer { try? FileManager.default.removeItem(atPath: summary) }
        let result = try CLI.run(["record", "--tracer", "embedded", "--format", "json", "--summary", summary, "--",
                                  CLI.sibling("runloop-demo"), "0.3"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "rlctl: wrote the summary \(summary)\n")
        #expect(result.stdout.hasPrefix("runloop-demo: ") && !result.stdout.contains("\"health\""), "\(result.stdout)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(readText(summary).utf8)) as? [String: Any])
        #expect(((json["health"] as? [String: Any])?["eventsRead"] as? Int ?? 0) > 100, "\(json)")
    }

    @Test func runWritesEveryRepetitionsSummaryToTheSummaryFile() throws {
        let summary = temporaryPath("run-summary.txt")
        defer { try? FileManager.default.removeItem(atPath: summary) }
        let result = try CLI.run(["run", "timers", "--count", "1", "--duration", "100ms", "--repeat", "2", "--summary", summary])
        #expect(result.status == 0 && result.stdout.isEmpty, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stderr == "rlctl: wrote the summary \(summary)\n")
        let text = try readText(summary)
        #expect(text.components(separatedBy: "\ntrace: ").count == 3, "a title and trace line per repetition: \(text)")
        #expect(text.hasPrefix("timers — 1 element for 100ms, tracer embedded — repetition 1/2\nverdict") && text.hasSuffix("\n"), "\(text)")
        // Repetitions' JSON is printed nowhere (--output's run report holds it): an empty --summary is refused.
        try expectUsageError(["run", "timers", "--repeat", "2", "--format", "json", "--summary", summary],
                             "--summary with --repeat takes --format text or markdown; every repetition's JSON is the run report of --output")
        try expectUsageError(["run", "timers", "--tracer", "none", "--summary", summary],
                             "--summary needs a tracer (not --tracer none): an untraced run has no summary")
    }

    /// A path that cannot be written is refused before anything runs: a missing folder, a folder that is a
    /// regular file (as root, access(W_OK) lets every folder pass, so these are what a test can see).
    @Test func everyOutputPathIsCheckedBeforeTheWork() throws {
        let work = temporaryPath("output-checks")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let plainFile = try CLI.file("plain.txt", "a file, not a folder\n")
        defer { try? FileManager.default.removeItem(atPath: plainFile) }
        let missing = "\(work)/no-such-dir"
        let ran = "\(work)/the-program-ran"

        // record runs nothing: its program would create `ran`.
        try expectUsageError(["record", "--tracer", "embedded", "--report", "\(missing)/r.html", "--", "/bin/sh", "-c", "touch \(ran)"],
                             "cannot write \(missing)/r.html: no folder \(missing)")
        try expectUsageError(["record", "--tracer", "embedded", "--summary", "\(plainFile)/s.json", "--", "/bin/sh", "-c", "touch \(ran)"],
                             "cannot write \(plainFile)/s.json: \(plainFile) is not a folder")
        #expect(!FileManager.default.fileExists(atPath: ran), "record started its program before refusing the path")
        // run: the workload would print its summary first (expectUsageError wants stdout empty).
        try expectUsageError(["run", "timers", "--duration", "100ms", "--output", "\(missing)/x.json"],
                             "cannot write \(missing)/x.json: no folder \(missing)")
        try expectUsageError(["run", "timers", "--duration", "100ms", "--report", "\(plainFile)/r.html"],
                             "cannot write \(plainFile)/r.html: \(plainFile) is not a folder")
        try expectUsageError(["run", "timers", "--duration", "100ms", "--summary", "\(missing)/s.txt"],
                             "cannot write \(missing)/s.txt: no folder \(missing)")
        // export and report: the output is refused before the input is read (which would fail otherwise).
        try expectUsageError(["export", "/nonexistent", "--format", "csv", "-o", "\(missing)/x.csv"],
                             "cannot write \(missing)/x.csv: no folder \(missing)")
        try expectUsageError(["report", "/nonexistent", "-o", "\(plainFile)/x.html"],
                             "cannot write \(plainFile)/x.html: \(plainFile) is not a folder")
        #expect(try FileManager.default.contentsOfDirectory(atPath: work) == [])
    }

    /// As root access(W_OK) passes on every folder but one on a read-only file system: the check that stands
    /// for the permission checks a test cannot make as root, in the words a failed write would use.
    @Test func aReadOnlyFolderIsRefusedBeforeTheRun() throws {
        try onASmallDisk(options: "ro,size=64k", test: "aReadOnlyFolderIsRefusedBeforeTheRun") { disk in
            try expectUsageError(["run", "timers", "--duration", "100ms", "--report", "\(disk)/r.html"],
                                 "cannot write \(disk)/r.html: \(disk) is on a read-only file system")
        }
    }

    /// A trace folder that cannot be written is refused before the program starts, with why (it used to start the
    /// program and then exit 3 with advice about installFromEnvironment).
    @Test func anUnwritableTraceFolderIsRefusedBeforeTheProgramStarts() throws {
        try onASmallDisk(options: "ro,size=64k", test: "anUnwritableTraceFolderIsRefusedBeforeTheProgramStarts") { disk in
            let marker = temporaryPath("ran-marker")
            try expectUsageError(["record", "--tracer", "embedded", "--output", "\(disk)/new/trace", "--", "/bin/sh", "-c", "touch \(marker)"],
                                 "cannot write the trace in \(disk)/new/trace: \(disk) is on a read-only file system")
            #expect(!FileManager.default.fileExists(atPath: marker), "the program ran")
            try expectUsageError(["run", "timers", "--duration", "100ms", "--trace", "\(disk)/t"],
                                 "cannot write the trace in \(disk)/t: \(disk) is on a read-only file system")
        }
    }

    /// Runs `body` with a tmpfs of its own mounted (with mount's `options`), unmounted after; skipped, saying so,
    /// where mounting is not allowed (not root).
    private func onASmallDisk(options: String, test: String, _ body: (String) throws -> Void) throws {
        let disk = temporaryPath("small-disk")
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: disk) }
        let mounted = try runProcess("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", disk])
        guard mounted.status == 0 else {
            print("skipped \(test): cannot mount a tmpfs here (root needed): \(mounted.stderr)")
            return
        }
        defer { _ = try? runProcess("/bin/umount", [disk]) }
        try body(disk)
    }

    /// A disk that fills up during an export: a one-line error naming the full disk's folder, the previous
    /// file in place, and no partial or temporary file left.
    @Test func anExportToAFullDiskLeavesNoPartialFile() throws {
        let complete = temporaryPath("complete.jsonl")
        defer { try? FileManager.default.removeItem(atPath: complete) }
        try #require(try CLI.run(["export", sharedTrace, "--format", "jsonl", "-o", complete]).status == 0)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: complete)[.size] as? Int)
        try #require(size > 256 * 1024, "the shared trace's export (\(size) bytes) must not fit the 64 KiB disk")

        try onASmallDisk(options: "size=64k", test: "anExportToAFullDiskLeavesNoPartialFile") { disk in
            let target = "\(disk)/x.jsonl"
            try "an earlier export\n".write(toFile: target, atomically: false, encoding: .utf8)
            try expectUsageError(["export", sharedTrace, "--format", "jsonl", "-o", target],
                                 "cannot write \(target): the disk holding \(disk) is full")
            #expect(try readText(target) == "an earlier export\n")
            #expect(try FileManager.default.contentsOfDirectory(atPath: disk) == ["x.jsonl"])
        }
    }

    /// An export of a cut-off recording said only `wrote N events`; it says what summarize says of it, on stderr
    /// with the "wrote" line (stdout stays for results).
    @Test func anExportOfAnIncompleteTraceSaysSoInTheSummarysWords() throws {
        let cutOff = temporaryPath("cut-off.rltrace")
        try FileManager.default.copyItem(atPath: sharedTrace, toPath: cutOff)
        defer { try? FileManager.default.removeItem(atPath: cutOff) }
        try FileManager.default.removeItem(atPath: cutOff + "/.end")   // what a killed recorder leaves
        let rows = temporaryPath("cut-off.csv")
        defer { try? FileManager.default.removeItem(atPath: rows) }

        let whole = try CLI.run(["export", sharedTrace, "--format", "csv", "-o", rows])
        try #require(whole.status == 0, "\(whole.stderr)")
        let count = try #require(whole.stderr.split(separator: " ").dropFirst(2).first.flatMap { Int($0) }, "\(whole.stderr)")
        #expect(whole.stdout.isEmpty && whole.stderr == "rlctl: wrote \(count) events to \(rows)\n")

        try assertCommand(["export", cutOff, "--format", "csv", "-o", rows], stderr: """
            rlctl: wrote \(count) events to \(rows)
            rlctl: the trace is INCOMPLETE: the recording was cut off: its process was killed or crashed before it completed the trace; each thread's events after its last written packet are missing (how many is unknown)

            """, status: 0)
        // --quiet drops the "wrote" line, never the warning about the data.
        try assertCommand(["export", cutOff, "--format", "csv", "-o", rows, "--quiet"], stderr: """
            rlctl: the trace is INCOMPLETE: the recording was cut off: its process was killed or crashed before it completed the trace; each thread's events after its last written packet are missing (how many is unknown)

            """, status: 0)
        let summary = try CLI.run(["summarize", cutOff])
        #expect(summary.stdout.contains("\n  the recording was cut off: its process was killed or crashed before it completed the trace; each thread's events after its last written packet are missing (how many is unknown)\n"),
                "\(summary.stdout.prefix(600))")
    }
}

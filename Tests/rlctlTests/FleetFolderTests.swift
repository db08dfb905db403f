import Foundation
import Testing
import TestSupport

/// A folder holding traces of several hosts (what an lttng-relayd writes, or traces gathered from machines) is
/// read host by host: never merged, since loop ids and monotonic clocks mean nothing across hosts. Hosts are
/// told apart by the hostname in each trace's metadata, so embedded recordings with edited hostnames stand in
/// for a fleet here (RelayFleetTests has the real one, through LTTng and network namespaces).
@Suite(.serialized)
struct FleetFolderTests {
    /// Two embedded recordings, `jank` (which stalls) as host "vm-a" and `timers` as host "edge-2".
    static func fleet() throws -> String {
        let folder = temporaryPath("fleet-folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (workload, host) in [("jank", "vm-a"), ("timers", "edge-2")] {
            let trace = "\(folder)/\(workload)"
            let run = try CLI.run(["run", workload, "--duration", "300ms", "--tracer", "embedded", "--trace", trace])
            try #require(run.status == 0, "\(run.stderr)")
            let metadata = try String(contentsOfFile: trace + "/metadata", encoding: .utf8)
            let renamed = metadata.replacingOccurrences(of: #"hostname = "[^"]*";"#, with: "hostname = \"\(host)\";", options: .regularExpression)
            try #require(renamed != metadata)
            try renamed.write(toFile: trace + "/metadata", atomically: true, encoding: .utf8)
        }
        return folder
    }

    @Test func summarizeAndCheckGoHostByHost() throws {
        let folder = try Self.fleet()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let text = try CLI.run(["summarize", folder])
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "\(folder): traces of 2 hosts, each summarized on its own")
        #expect(lines.count > 3 && lines[1].hasPrefix("host ") && lines[2].hasPrefix("edge-2 ") && lines[3].hasPrefix("vm-a "), "\(lines.prefix(5))")
        #expect(lines.contains("== host edge-2 ==") && lines.contains("== host vm-a =="))
        // Each host's section is that trace's own summary.
        let alone = try CLI.run(["summarize", "\(folder)/jank"])
        let section = text.stdout.components(separatedBy: "== host vm-a ==\n").last ?? ""
        #expect(section.hasPrefix(alone.stdout.trimmingCharacters(in: .newlines)), "\(section.prefix(300))")

        let json = try CLI.run(["summarize", folder, "--format", "json"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(document["format"] as? String == "rlctl-fleet-summary/1")
        #expect((document["hosts"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["edge-2", "vm-a"])

        // --host reads one host as an ordinary trace, for every command.
        let one = try CLI.run(["summarize", folder, "--host", "vm-a", "--format", "json"])
        let single = try #require(try JSONSerialization.jsonObject(with: Data(one.stdout.utf8)) as? [String: Any])
        #expect(single["loops"] != nil && single["hosts"] == nil)
        let exported = temporaryPath("fleet-export.csv")
        defer { try? FileManager.default.removeItem(atPath: exported) }
        #expect(try CLI.run(["export", folder, "--host", "edge-2", "--format", "csv", "-o", exported]).status == 0)

        // jank stalls and timers does not: a stall budget fails on vm-a alone, in every format.
        let budget = try CLI.file("fleet-stalls.txt", "stalls.count == 0\n")
        defer { try? FileManager.default.removeItem(atPath: budget) }
        let checked = try CLI.run(["check", folder, "--budget", budget])
        #expect(checked.status == 1)
        #expect(checked.stdout.hasPrefix("host edge-2:\n  PASS stalls.count"), "\(checked.stdout)")
        #expect(checked.stdout.contains("host vm-a:\n  FAIL stalls.count"), "\(checked.stdout)")
        #expect(checked.stdout.hasSuffix("fleet: rules failed on vm-a\n"), "\(checked.stdout)")
        let junit = try CLI.run(["check", folder, "--budget", budget, "--format", "junit"])
        #expect(junit.stdout.contains(#"<testcase classname="rlctl.budget.vm-a" name="stalls.count == 0">"#), "\(junit.stdout)")
        #expect(junit.stdout.contains(#"<testcase classname="rlctl.budget.edge-2" name="stalls.count == 0"/>"#), "\(junit.stdout)")
        let passing = try CLI.run(["check", folder, "--host", "edge-2", "--budget", budget])
        #expect(passing.status == 0, "\(passing.stdout)")
    }

    /// What cannot be read is said, host by host, and never merged or dropped silently.
    @Test func unreadableHostsAndMixedFoldersAreSaid() throws {
        let folder = try Self.fleet()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for command in [["report", folder, "-o", "\(folder)/page.html"], ["compare", folder, folder]] {
            let refused = try CLI.run(command)
            #expect(refused.status == 2, "\(command): \(refused.stderr)")
            #expect(refused.stderr.contains("holds the traces of 2 hosts or sessions (edge-2, vm-a), which are read one at a time: choose one with --host NAME"),
                    "\(command): \(refused.stderr)")
        }
        let unknown = try CLI.run(["check", folder, "--host", "nowhere", "--budget", try CLI.file("b.txt", "trace.lost == 0\n")])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("no trace from host \"nowhere\" here (the traces come from: edge-2, vm-a)"), "\(unknown.stderr)")

        // A third trace cut to nothing (a relay that died before it wrote the metadata) is its own unreadable
        // entry, named by its folder; the others are still summarized, and the exit status says something failed.
        try FileManager.default.createDirectory(atPath: "\(folder)/cut", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: "\(folder)/cut/metadata", contents: Data()))
        #expect(FileManager.default.createFile(atPath: "\(folder)/cut/channel0_0", contents: Data()))
        let partial = try CLI.run(["summarize", folder])
        #expect(partial.status == 2)
        #expect(partial.stdout.contains("== host cut ==\nUNREADABLE: "), "\(partial.stdout.prefix(600))")
        #expect(partial.stdout.contains("== host vm-a =="))
        #expect(partial.stderr == "rlctl: the traces of cut cannot be read (why: above); the other hosts are summarized\n", "\(partial.stderr)")
        let budget = try CLI.file("fleet-lost.txt", "trace.lost == 0\n")
        defer { try? FileManager.default.removeItem(atPath: budget) }
        let checked = try CLI.run(["check", folder, "--budget", budget])
        #expect(checked.status == 3, "\(checked.stdout)")
        #expect(checked.stdout.hasSuffix("fleet: incomplete data on cut\n"), "\(checked.stdout)")
    }
}

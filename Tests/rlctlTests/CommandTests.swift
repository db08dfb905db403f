import Foundation
import Testing

/// Runs the built rlctl binary.
struct CLI {
    static let binary: String = {
        // Another build of rlctl (an older commit, a release build) can be put under the same tests.
        if let other = ProcessInfo.processInfo.environment["RLCTL_TEST_BINARY"], !other.isEmpty { return other }
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("rlctl").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return dir.appendingPathComponent("rlctl").path
    }()

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// A program built next to rlctl (runloop-demo).
    static func sibling(_ name: String) -> String {
        URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// Runs rlctl; `environment` entries replace the inherited ones; `whileRunning` gets the process once started.
    @discardableResult
    static func run(_ arguments: [String], environment: [String: String] = [:],
                    whileRunning: ((Process) -> Void)? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        whileRunning?(process)
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        let stderrData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
                      stderr: String(decoding: stderrData, as: UTF8.self))
    }

    static func temporary(_ name: String) -> String {
        let dir = NSTemporaryDirectory() + "rlctl-cli-tests"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // The extension stays last: rlctl picks JSON or YAML by it.
        let url = URL(fileURLWithPath: name)
        let ext = url.pathExtension
        let stem = url.deletingPathExtension().lastPathComponent
        return dir + "/\(stem)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))" + (ext.isEmpty ? "" : ".\(ext)")
    }
}

/// A recorded trace shared by the tests that read one (recorded once, by the binary).
let sharedTrace: String = {
    let path = CLI.temporary("shared.rltrace")
    let result = try! CLI.run(["run", "mixed", "--duration", "700ms", "--trace", path, "--format", "json"])
    precondition(result.status == 0, "rlctl run failed: \(result.stderr)")
    return path
}()

@Suite struct CommandTests {
    @Test func helpIsTheManual() throws {
        let root = try CLI.run(["--help"])
        #expect(root.status == 0)
        let commands = ["run", "record", "summarize", "export", "check", "compare", "list", "doctor"]
        // Each as a row of the subcommand list: the bare word is also in the abstract ("run-loop").
        let rows = root.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        for command in commands { #expect(rows.contains { $0.hasPrefix(command + " ") }, "no row for \(command) in: \(root.stdout)") }
        let run = try CLI.run(["help", "run"])
        #expect(run.status == 0 && run.stdout.contains("--duration") && run.stdout.contains("--tracer"))
        // Every command answers --help and -h with its manual, record included (it used to take them for the
        // program to record); after `--` they are the program's.
        for command in commands {
            for flag in ["--help", "-h"] {
                let help = try CLI.run([command, flag])
                #expect(help.status == 0 && help.stdout.contains("USAGE: rlctl \(command)"), "rlctl \(command) \(flag): \(help.stdout)\(help.stderr)")
            }
        }
    }

    @Test func listDescribesEveryWorkload() throws {
        let result = try CLI.run(["list"])
        #expect(result.status == 0)
        for name in ["timers", "sources", "ports", "io", "blocks", "modes", "jank", "mixed"] {
            #expect(result.stdout.contains("\n\(name) ") || result.stdout.hasPrefix("\(name) "), "missing \(name)")
        }
    }

    @Test(arguments: ["timers", "sources", "ports", "io", "blocks", "modes", "jank"])
    func everyWorkloadRunsAndIsSummarized(workload: String) throws {
        let result = try CLI.run(["run", workload, "--duration", "400ms", "--format", "json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let overall = json?["overall"] as? [String: Any]
        #expect((overall?["iterations"] as? Int ?? 0) > 0)
        let health = json?["health"] as? [String: Any]
        #expect((health?["eventsRead"] as? Int ?? 0) > 0)
        switch workload {
        case "timers", "jank", "modes": #expect((overall?["timerFirings"] as? Int ?? 0) > 0)
        case "sources": #expect(((overall?["wakeLatency"] as? [String: Any])?["source"] as? [String: Any])?["count"] as? Int ?? 0 > 0)
        case "blocks": #expect(((overall?["wakeLatency"] as? [String: Any])?["block"] as? [String: Any])?["count"] as? Int ?? 0 > 0)
        case "ports": #expect(((overall?["wakeLatency"] as? [String: Any])?["port"] as? [String: Any])?["count"] as? Int ?? 0 > 0)
        case "io": #expect(((overall?["calloutDurations"] as? [String: Any])?["descriptor"] as? [String: Any])?["count"] as? Int ?? 0 > 0)
        default: break
        }
    }

    @Test func summarizeReadsAKeptTraceInEveryFormat() throws {
        let text = try CLI.run(["summarize", sharedTrace])
        #expect(text.status == 0 && text.stdout.contains("utilization") && text.stdout.contains("timer lateness") == false)
        #expect(text.stdout.contains("busy per iteration"))
        let markdown = try CLI.run(["summarize", sharedTrace, "--format", "markdown"])
        #expect(markdown.status == 0 && markdown.stdout.contains("| metric | min | p50"))
        let json = try CLI.run(["summarize", sharedTrace, "--format", "json"])
        #expect(json.status == 0)
        #expect((try? JSONSerialization.jsonObject(with: Data(json.stdout.utf8))) != nil)
    }

    @Test func exportWritesChromeCSVAndJSONL() throws {
        let chrome = CLI.temporary("trace.json")
        let result = try CLI.run(["export", sharedTrace, "--format", "chrome", "-o", chrome])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: chrome))) as? [String: Any]
        let events = object?["traceEvents"] as? [[String: Any]] ?? []
        #expect(events.contains { $0["ph"] as? String == "X" && $0["name"] as? String == "sleep" })
        #expect(events.contains { $0["ph"] as? String == "B" })
        #expect(events.contains { $0["ph"] as? String == "i" })
        #expect(events.filter { $0["ph"] as? String == "B" }.count == events.filter { $0["ph"] as? String == "E" }.count)

        let csv = CLI.temporary("trace.csv")
        #expect(try CLI.run(["export", sharedTrace, "--format", "csv", "-o", csv]).status == 0)
        let lines = try String(contentsOfFile: csv, encoding: .utf8).split(separator: "\n")
        #expect(lines.first?.hasPrefix("timestamp_ns,thread_id,event,loop_id") == true)
        #expect(lines.count > 10)

        let jsonl = CLI.temporary("trace.jsonl")
        #expect(try CLI.run(["export", sharedTrace, "--format", "jsonl", "-o", jsonl]).status == 0)
        for line in try String(contentsOfFile: jsonl, encoding: .utf8).split(separator: "\n").prefix(200) {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "not JSON: \(line)")
        }
    }

    @Test func checkPassesFailsAndRefusesIncompleteData() throws {
        let passing = CLI.temporary("pass.budget")
        try "# generous\nloop.utilization <= 100%\nstalls.worst <= 10s\ntrace.lost == 0\n".write(toFile: passing, atomically: true, encoding: .utf8)
        let ok = try CLI.run(["check", sharedTrace, "--budget", passing])
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(ok.stdout.contains("within budget"))

        let failing = CLI.temporary("fail.budget")
        try "loop.iterations <= 1\n".write(toFile: failing, atomically: true, encoding: .utf8)
        let bad = try CLI.run(["check", sharedTrace, "--budget", failing, "--format", "junit"])
        #expect(bad.status == 1)
        #expect(bad.stdout.contains("<failure"))

        // A summary whose trace lost events, checked by a budget that forbids loss: exit 3.
        let summary = try CLI.run(["summarize", sharedTrace, "--format", "json"])
        var object = try JSONSerialization.jsonObject(with: Data(summary.stdout.utf8)) as! [String: Any]
        var health = object["health"] as! [String: Any]
        health["eventsLost"] = 17
        object["health"] = health
        let lossy = CLI.temporary("lossy.json")
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: lossy))
        let incomplete = try CLI.run(["check", lossy, "--budget", passing, "--format", "markdown"])
        #expect(incomplete.status == 3, "\(incomplete.stdout)\(incomplete.stderr)")
        #expect(incomplete.stdout.contains("17"))
    }

    @Test func listMetricsNamesEveryBudgetMetric() throws {
        let result = try CLI.run(["check", "--list-metrics"])
        #expect(result.status == 0)
        for metric in ["timer.lateness.p99", "loop.utilization", "stalls.count", "trace.lost", "wake.block.p99", "timer.drift.max"] {
            #expect(result.stdout.contains(metric))
        }
    }

    @Test func compareFailsOnlyOnARegressionBeyondTheNoise() throws {
        let baseline = CLI.temporary("baseline.json")
        let first = try CLI.run(["run", "timers", "--duration", "300ms", "--repeat", "3", "--output", baseline, "--format", "json"])
        #expect(first.status == 0, "\(first.stderr)")
        let same = try CLI.run(["compare", baseline, baseline, "--threshold", "10%"])
        #expect(same.status == 0, "\(same.stdout)\(same.stderr)")

        // The same report with every timer lateness tripled: a regression no interval can explain.
        var report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: baseline))) as! [String: Any]
        var repetitions = report["repetitions"] as! [[String: Any]]
        for index in repetitions.indices {
            var overall = repetitions[index]["overall"] as! [String: Any]
            var lateness = overall["timerLateness"] as! [String: Any]
            for key in ["p50", "p90", "p99", "p999", "max"] { lateness[key] = (lateness[key] as! Int) * 3 + 1000 }
            overall["timerLateness"] = lateness
            repetitions[index]["overall"] = overall
        }
        report["repetitions"] = repetitions
        let current = CLI.temporary("current.json")
        try JSONSerialization.data(withJSONObject: report).write(to: URL(fileURLWithPath: current))
        let regressed = try CLI.run(["compare", baseline, current, "--threshold", "10%", "--format", "markdown"])
        #expect(regressed.status == 1, "\(regressed.stdout)\(regressed.stderr)")
        #expect(regressed.stdout.contains("timer.lateness.p99") && regressed.stdout.contains("❌"))
    }

    /// The loop announced itself once, to the first repetition's recorder: from the second on it lost its name.
    @Test func everyRepetitionNamesItsLoop() throws {
        let report = CLI.temporary("repeat.json")
        defer { try? FileManager.default.removeItem(atPath: report) }
        let result = try CLI.run(["run", "timers", "--count", "2", "--duration", "200ms", "--repeat", "3", "--output", report])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any]
        let repetitions = json?["repetitions"] as? [[String: Any]] ?? []
        #expect(repetitions.count == 3)
        for (index, repetition) in repetitions.enumerated() {
            let loops = repetition["loops"] as? [[String: Any]] ?? []
            #expect(loops.count == 1 && loops.first?["name"] as? String == "main" && loops.first?["threadID"] != nil,
                    "repetition \(index + 1): \(loops.map { ($0["name"], $0["threadID"]) })")
        }
        #expect(result.stdout.components(separatedBy: ", main)").count == 4, "every text summary names the loop: \(result.stdout)")
    }

    @Test func aWorkloadFileMixesElements() throws {
        let yaml = CLI.temporary("workload.yaml")
        try """
        duration: 400ms
        elements:
          - kind: timers
            count: 4
            interval: 2ms
          - kind: blocks
            threads: 1
            rate: 2000
          - kind: jank
            interval: 16ms
            every: 3
            cost: 20ms
        """.write(toFile: yaml, atomically: true, encoding: .utf8)
        let result = try CLI.run(["run", "--file", yaml, "--stall", "10ms"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("stalls (> threshold): ") && result.stdout.contains("jank-3"))

        let json = CLI.temporary("workload.json")
        try #"{"duration": "300ms", "elements": [{"kind": "sources", "threads": 1, "rate": 500}]}"#.write(toFile: json, atomically: true, encoding: .utf8)
        #expect(try CLI.run(["run", "--file", json]).status == 0)
    }
}

/// Every bad input: one line on stderr, exit status 2, no stack trace.
@Suite struct BadInputTests {
    private func expectUsageError(_ arguments: [String], mentions: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 2, "exit \(result.status) for \(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "expected one line, got: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.hasPrefix("rlctl: "), sourceLocation: sourceLocation)
        #expect(result.stderr.localizedCaseInsensitiveContains(mentions), "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("Backtrac"), sourceLocation: sourceLocation)
    }

    private func file(_ name: String, _ text: String) throws -> String {
        let path = CLI.temporary(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func unknownWorkloadOrFlag() throws {
        try expectUsageError(["run", "nope"], mentions: "nope")
        try expectUsageError(["run", "timers", "--bogus"], mentions: "bogus")
        try expectUsageError(["frobnicate"], mentions: "frobnicate")
    }

    @Test func negativeOrMissingDurations() throws {
        try expectUsageError(["run", "timers", "--duration", "-1"], mentions: "duration")
        try expectUsageError(["run", "timers", "--duration", "-1s"], mentions: "duration")
        try expectUsageError(["run", "timers", "--duration", "0s"], mentions: "duration")
        try expectUsageError(["run", "timers", "--interval", "5"], mentions: "interval")
        try expectUsageError(["run", "timers", "--count", "0", "--duration", "100ms"], mentions: "count")
    }

    @Test func malformedWorkloadFiles() throws {
        try expectUsageError(["run", "--file", "/nonexistent.yaml"], mentions: "no such workload file")
        try expectUsageError(["run", "--file", try file("bad.yaml", "duration: 1s\nelements:\n  - kind: lasers\n")], mentions: "lasers")
        try expectUsageError(["run", "--file", try file("bad.json", "{\"duration\": \"fast\", \"elements\": []}")], mentions: "not a duration")
        try expectUsageError(["run", "--file", try file("empty.json", "{\"duration\": \"1s\", \"elements\": []}")], mentions: "at least one element")
        try expectUsageError(["run", "--file", try file("broken.json", "{\"duration\": ")], mentions: "not valid JSON")
        try expectUsageError(["run", "--file", try file("hold.yaml", "duration: 1s\nelements:\n  - kind: modes\n    period: 10ms\n    hold: 20ms\n")], mentions: "hold")
    }

    @Test func missingOrCorruptTraces() throws {
        try expectUsageError(["summarize", "/nonexistent/trace"], mentions: "/nonexistent/trace")
        let corrupt = CLI.temporary("corrupt.rltrace")
        try FileManager.default.copyItem(atPath: sharedTrace, toPath: corrupt)
        let streams = try FileManager.default.contentsOfDirectory(atPath: corrupt).filter { $0.hasPrefix("stream-") }
        for stream in streams {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: corrupt + "/" + stream))
            try handle.seek(toOffset: 0)
            handle.write(Data(repeating: 0xEE, count: 16))
            try handle.close()
        }
        try expectUsageError(["summarize", corrupt], mentions: "at byte")
        try expectUsageError(["export", "/nonexistent", "--format", "csv", "-o", CLI.temporary("x.csv")], mentions: "nonexistent")
    }

    @Test func badBudgets() throws {
        try expectUsageError(["check", sharedTrace, "--budget", try file("unknown.budget", "timer.wobble <= 2ms\n")], mentions: "unknown metric")
        try expectUsageError(["check", sharedTrace, "--budget", try file("nounit.budget", "timer.lateness.p99 <= 5\n")], mentions: "no unit")
        try expectUsageError(["check", sharedTrace, "--budget", try file("garbage.budget", "this is not a rule\n")], mentions: "expected")
        try expectUsageError(["check", sharedTrace, "--budget", try file("impossible.budget", "loop.utilization <= 150%\n")], mentions: "impossible")
        try expectUsageError(["check", sharedTrace, "--budget", try file("negative.budget", "timer.lateness.p99 <= -2ms\n")], mentions: "impossible")
        try expectUsageError(["check", sharedTrace, "--budget", "/nonexistent.budget"], mentions: "no such budget")
        try expectUsageError(["check", "/nonexistent", "--budget", try file("ok.budget", "stalls.count == 0\n")], mentions: "no such file")
    }

    @Test func badThresholds() throws {
        try expectUsageError(["compare", sharedTrace, sharedTrace, "--threshold", "10"], mentions: "threshold")
        try expectUsageError(["compare", sharedTrace, sharedTrace, "--threshold", "-5%"], mentions: "threshold")
        try expectUsageError(["compare", sharedTrace, sharedTrace, "--metrics", "nope.p99"], mentions: "unknown metric")
    }
}

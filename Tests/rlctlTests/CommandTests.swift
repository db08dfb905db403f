import Foundation
import Testing
import TestSupport

@Suite struct CommandTests {
    /// The root manual, word for word: it is the first thing a user reads, and its subcommand list is checked row
    /// by row (the bare word "run" is also in the abstract, "run-loop").
    @Test func helpIsTheManual() throws {
        for arguments in [["--help"], ["-h"], ["help"]] {
            try assertCommand(arguments, stdout: Self.rootManual, status: 0)
        }
        // Every command answers `help COMMAND`, --help and -h with the same manual, record included (it used to
        // take them for the program to record); after `--` they are the program's.
        for command in ["run", "record", "summarize", "export", "report", "check", "compare", "list", "top", "doctor"] {
            let manual = try CLI.run(["help", command])
            #expect(manual.termination == .exited(0) && manual.stderr.isEmpty, "rlctl help \(command): \(manual.termination) \(manual.stderr)")
            #expect(manual.stdout.hasPrefix("OVERVIEW: ") && manual.stdout.contains("\nUSAGE: rlctl \(command)"),
                    "rlctl help \(command): \(manual.stdout)")
            for flag in ["--help", "-h"] {
                try assertCommand([command, flag], stdout: manual.stdout, status: 0)
            }
        }
        let run = try CLI.run(["help", "run"])
        #expect(run.stdout.contains("--duration") && run.stdout.contains("--tracer"), "\(run.stdout)")
    }

    static let rootManual = """
        OVERVIEW: Make run-loop behaviour visible: why timers drift, where latency
        goes, whether a change made it slower.

        Exit status: 0 success; 1 a budget violation or a regression; 2 a usage or
        input error; 3 the data is incomplete (lost events) and the budget forbids that.

        USAGE: rlctl <subcommand>

        OPTIONS:
          --version               Show the version.
          -h, --help              Show help information.

        SUBCOMMANDS:
          run                     Run a workload on RunLoopCore, trace it, and print
                                  what its loop did.
          record                  Run a program whose loops are traced (RunLoopCore, or
                                  an adapter) and summarize what they did.
          summarize               Summarize a trace: latency, timer drift, wake-ups,
                                  callouts, stalls and trace health.
          export                  Export a trace for viewers and scripts.
          report                  Draw a trace, a run report or a comparison as one
                                  self-contained HTML page.
          check                   Check a trace or summary against a performance budget
                                  (for CI).
          compare                 Compare two runs and fail only on a regression the
                                  noise cannot explain.
          list                    Describe the built-in workloads.
          top                     A live view of every traced loop, on this machine or
                                  streaming to an LTTng relay daemon.
          doctor                  Check the tracing set-up and say what to fix.

          See 'rlctl help <subcommand>' for detailed help.

        """

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
        let chrome = temporaryPath("trace.json")
        let result = try CLI.run(["export", sharedTrace, "--format", "chrome", "-o", chrome])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: chrome))) as? [String: Any]
        let events = object?["traceEvents"] as? [[String: Any]] ?? []
        #expect(events.contains { $0["ph"] as? String == "X" && $0["name"] as? String == "sleep" })
        #expect(events.contains { $0["ph"] as? String == "B" })
        #expect(events.contains { $0["ph"] as? String == "i" })
        #expect(events.filter { $0["ph"] as? String == "B" }.count == events.filter { $0["ph"] as? String == "E" }.count)
        // The format's rules on a real trace (every B has its E on its thread, slices nest, flows bind to slices,
        // counters are numbers), and the mixed workload's causes drawn: signals to performs, late timers.
        let file = try ChromeTraceFile(path: chrome)
        #expect(file.violations() == [])
        let flows = file.flows.values
        #expect(flows.contains { $0.out?["cat"] as? String == "signal" && $0.in?["name"] as? String != nil })
        #expect(file.events("C").contains { ($0["name"] as? String)?.hasPrefix("backlog loop ") == true })
        #expect(file.events("C").contains { ($0["name"] as? String)?.hasPrefix("lateness timer ") == true })

        let csv = temporaryPath("trace.csv")
        #expect(try CLI.run(["export", sharedTrace, "--format", "csv", "-o", csv]).status == 0)
        let lines = try String(contentsOfFile: csv, encoding: .utf8).split(separator: "\n")
        #expect(lines.first?.hasPrefix("timestamp_ns,thread_id,event,loop_id") == true)
        #expect(lines.count > 10)

        let jsonl = temporaryPath("trace.jsonl")
        #expect(try CLI.run(["export", sharedTrace, "--format", "jsonl", "-o", jsonl]).status == 0)
        for line in try String(contentsOfFile: jsonl, encoding: .utf8).split(separator: "\n").prefix(200) {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "not JSON: \(line)")
        }
    }

    @Test func checkPassesFailsAndRefusesIncompleteData() throws {
        let passing = temporaryPath("pass.budget")
        try "# generous\nloop.utilization <= 100%\nstalls.worst <= 10s\ntrace.lost == 0\n".write(toFile: passing, atomically: true, encoding: .utf8)
        let ok = try CLI.run(["check", sharedTrace, "--budget", passing])
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(ok.stdout.contains("within budget"))

        let failing = temporaryPath("fail.budget")
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
        let lossy = temporaryPath("lossy.json")
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: lossy))
        let incomplete = try CLI.run(["check", lossy, "--budget", passing, "--format", "markdown"])
        #expect(incomplete.status == 3, "\(incomplete.stdout)\(incomplete.stderr)")
        #expect(incomplete.stdout.contains("17"))
    }

    @Test func listMetricsNamesEveryBudgetMetric() throws {
        let result = try CLI.run(["check", "--list-metrics"])
        #expect(result.status == 0)
        for metric in ["timer.lateness.p99", "loop.utilization", "stalls.count", "trace.lost", "wake.block.p99", "timer.drift.max",
                       "nio.stalls.count", "nio.utilization.max", "nio.probe.lateness.p99", "foundation.busy.p99"] {
            #expect(result.stdout.contains(metric))
        }
    }

    @Test func compareFailsOnlyOnARegressionBeyondTheNoise() throws {
        let baseline = temporaryPath("baseline.json")
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
        let current = temporaryPath("current.json")
        try JSONSerialization.data(withJSONObject: report).write(to: URL(fileURLWithPath: current))
        let regressed = try CLI.run(["compare", baseline, current, "--threshold", "10%", "--format", "markdown"])
        #expect(regressed.status == 1, "\(regressed.stdout)\(regressed.stderr)")
        #expect(regressed.stdout.contains("timer.lateness.p99") && regressed.stdout.contains("❌"))
    }

    /// The loop announced itself once, to the first repetition's recorder: from the second on it lost its name.
    @Test func everyRepetitionNamesItsLoop() throws {
        let report = temporaryPath("repeat.json")
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
        let yaml = temporaryPath("workload.yaml")
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

        let json = temporaryPath("workload.json")
        try #"{"duration": "300ms", "elements": [{"kind": "sources", "threads": 1, "rate": 500}]}"#.write(toFile: json, atomically: true, encoding: .utf8)
        #expect(try CLI.run(["run", "--file", json]).status == 0)
    }
}

/// Every bad input: exit status 2, nothing on stdout, and one line on stderr that says what is wrong (never a
/// stack trace), checked word for word.
@Suite struct BadInputTests {
    /// A usage error's whole output: `message` after "rlctl: " on stderr.
    @Test func unknownWorkloadOrFlag() throws {
        try expectUsageError(["run", "nope"], "The value 'nope' is invalid for '<workload>'. Please provide one of the following: timers, sources, ports, io, blocks, modes, jank, mixed")
        try expectUsageError(["run", "timers", "--bogus"], "Unknown option '--bogus'. Did you mean '--bytes'?")
        try expectUsageError(["frobnicate"], "unknown command \"frobnicate\" (the commands: run, record, summarize, export, report, check, compare, list, top, doctor)")
    }

    @Test func negativeOrMissingDurations() throws {
        try expectUsageError(["run", "timers", "--duration", "-1"], "The value '-1' is invalid for '--duration <duration>': \"-1\" has no unit: write -1s, -1ms, -1us or -1ns")
        try expectUsageError(["run", "timers", "--duration", "-1s"], "The value '-1s' is invalid for '--duration <duration>': \"-1s\" is negative: a duration must be 0 or more")
        try expectUsageError(["run", "timers", "--duration", "0s"], "--duration must be greater than zero")
        try expectUsageError(["run", "timers", "--interval", "5"], "The value '5' is invalid for '--interval <interval>': \"5\" has no unit: write 5s, 5ms, 5us or 5ns")
        try expectUsageError(["run", "timers", "--count", "0", "--duration", "100ms"], "element 1 (timers): count must be 1 to 100000 (got 0)")
    }

    @Test func malformedWorkloadFiles() throws {
        try expectUsageError(["run", "--file", "/nonexistent.yaml"], "/nonexistent.yaml: no such workload file (or it cannot be read)")
        let lasers = try CLI.file("bad.yaml", "duration: 1s\nelements:\n  - kind: lasers\n")
        try expectUsageError(["run", "--file", lasers], "\(lasers):3: unknown element kind \"lasers\" (use timers, sources, ports, io, blocks, modes or jank) at elements[0].kind")
        let fast = try CLI.file("bad.json", "{\"duration\": \"fast\", \"elements\": []}")
        try expectUsageError(["run", "--file", fast], "\(fast):1: \"fast\" is not a duration: write a number and a unit (500us, 2ms, 1.5s) at duration")
        let noElements = try CLI.file("empty.json", "{\"duration\": \"1s\", \"elements\": []}")
        try expectUsageError(["run", "--file", noElements], "\(noElements):1: a workload needs at least one element")
        let empty = try CLI.file("empty.yaml", "\n  \n")
        try expectUsageError(["run", "--file", empty], "\(empty): the workload file is empty (it needs at least `elements:`; rlctl run --help shows one)")
        let broken = try CLI.file("broken.json", "{\"duration\": ")
        try expectUsageError(["run", "--file", broken], "\(broken):1: not valid JSON")
        let hold = try CLI.file("hold.yaml", "duration: 1s\nelements:\n  - kind: modes\n    period: 10ms\n    hold: 20ms\n")
        try expectUsageError(["run", "--file", hold], "\(hold):5: element 1 (modes): hold (20ms) must be shorter than period (10ms)")
    }

    @Test func missingOrCorruptTraces() throws {
        try expectUsageError(["summarize", "/nonexistent/trace"], "cannot read trace: /nonexistent/trace: no such trace (the path does not exist)")
        let corrupt = temporaryPath("corrupt.rltrace")
        try FileManager.default.copyItem(atPath: sharedTrace, toPath: corrupt)
        let streams = try FileManager.default.contentsOfDirectory(atPath: corrupt).filter { $0.hasPrefix("stream-") }
        for stream in streams {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: corrupt + "/" + stream))
            try handle.seek(toOffset: 0)
            handle.write(Data(repeating: 0xEE, count: 16))
            try handle.close()
        }
        // Every stream is broken: which one the reader names is its business, that it names one is the user's.
        let result = try CLI.run(["summarize", corrupt])
        #expect(result.termination == .exited(2) && result.stdout.isEmpty, "\(result.termination): \(result.stdout)")
        #expect(streams.contains { result.stderr == "rlctl: cannot read trace: \(corrupt)/\($0): at byte 0: bad packet magic (not a CTF packet)\n" },
                "\(result.stderr)")
        try expectUsageError(["export", "/nonexistent", "--format", "csv", "-o", temporaryPath("x.csv")],
                             "cannot read trace: /nonexistent: no such trace (the path does not exist)")
    }

    @Test func badBudgets() throws {
        func budget(_ name: String, _ rule: String) throws -> String { try CLI.file(name, rule + "\n") }
        let unknown = try budget("unknown.budget", "timer.wobble <= 2ms")
        try expectUsageError(["check", sharedTrace, "--budget", unknown], "\(unknown):1: unknown metric \"timer.wobble\" (rlctl check --list-metrics lists them)")
        let noUnit = try budget("nounit.budget", "timer.lateness.p99 <= 5")
        try expectUsageError(["check", sharedTrace, "--budget", noUnit], "\(noUnit):1: the limit \"5\" for timer.lateness.p99 has no unit (write e.g. 5ms or 5us)")
        let garbage = try budget("garbage.budget", "this is not a rule")
        try expectUsageError(["check", sharedTrace, "--budget", garbage], "\(garbage):1: expected `metric <= limit` (or <, >=, >, ==, !=), got \"this is not a rule\"")
        let impossible = try budget("impossible.budget", "loop.utilization <= 150%")
        try expectUsageError(["check", sharedTrace, "--budget", impossible], "\(impossible):1: impossible limit 150%: loop.utilization is between 0 and 1")
        let negative = try budget("negative.budget", "timer.lateness.p99 <= -2ms")
        try expectUsageError(["check", sharedTrace, "--budget", negative], "\(negative):1: impossible limit -2ms: timer.lateness.p99 is never negative")
        try expectUsageError(["check", sharedTrace, "--budget", "/nonexistent.budget"], "/nonexistent.budget: no such budget file (or it cannot be read)")
        try expectUsageError(["check", "/nonexistent", "--budget", try budget("ok.budget", "stalls.count == 0")], "/nonexistent: no such file or trace folder")
    }

    @Test func badThresholds() throws {
        try expectUsageError(["compare", sharedTrace, sharedTrace, "--threshold", "10"], "--threshold must be a positive percentage, e.g. 10% (got 10)")
        try expectUsageError(["compare", sharedTrace, sharedTrace, "--threshold", "-5%"], "--threshold must be a positive percentage, e.g. 10% (got -5%)")
        try expectUsageError(["compare", sharedTrace, sharedTrace, "--metrics", "nope.p99"], "unknown metric \"nope.p99\" (rlctl check --list-metrics lists them)")
    }
}

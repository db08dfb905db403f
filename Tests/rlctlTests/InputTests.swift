import Foundation
import Testing
import TestSupport

/// Input that used to be silently wrong, or wrong without saying why.
@Suite struct InputTests {
    /// A usage error's whole output: `message` after "rlctl: " on stderr, exit status 2.
    @Test func anUnknownWorkloadListsTheWorkloads() throws {
        try expectUsageError(["run", "nosuch"], "The value 'nosuch' is invalid for '<workload>'. Please provide one of the following: timers, sources, ports, io, blocks, modes, jank, mixed")
        try expectUsageError(["run", "timers", "--tracer", "dtrace"], "The value 'dtrace' is invalid for '--tracer <tracer>'. Please provide one of 'embedded', 'lttng' or 'none'.")
    }

    @Test func aDurationWithoutAUnitSaysSo() throws {
        try expectUsageError(["run", "timers", "--duration", "3"], "The value '3' is invalid for '--duration <duration>': \"3\" has no unit: write 3s, 3ms, 3us or 3ns")
        try expectUsageError(["run", "timers", "--interval", "2.5"], "The value '2.5' is invalid for '--interval <interval>': \"2.5\" has no unit: write 2.5s, 2.5ms, 2.5us or 2.5ns")
        try expectUsageError(["summarize", "/nonexistent", "--stall", "16"], "The value '16' is invalid for '--stall <stall>': \"16\" has no unit: write 16s, 16ms, 16us or 16ns")
        try expectUsageError(["run", "timers", "--duration", "soon"], "The value 'soon' is invalid for '--duration <duration>': \"soon\" is not a duration: write a number and a unit (500us, 2ms, 1.5s)")
        // A negative value is the option's value, not an unknown flag ("Missing value for '--duration'").
        try expectUsageError(["run", "timers", "--duration", "-1s"], "The value '-1s' is invalid for '--duration <duration>': \"-1s\" is negative: a duration must be 0 or more")
        try expectUsageError(["run", "timers", "--interval", "-.5ms"], "The value '-.5ms' is invalid for '--interval <interval>': \"-.5ms\" is negative: a duration must be 0 or more")
    }

    /// `--duration 0.5ns` ran for 1 ns: a fraction of a nanosecond is refused wherever a duration is taken.
    @Test func aFractionOfANanosecondIsRefused() throws {
        try expectUsageError(["run", "timers", "--duration", "0.5ns"],
                             "The value '0.5ns' is invalid for '--duration <duration>': \"0.5ns\" has a fraction of a nanosecond: a duration is a whole number of nanoseconds")
        let workload = try CLI.file("halfns.yaml", "duration: 1s\nelements:\n  - kind: timers\n    interval: 1.5ns\n")
        try expectUsageError(["run", "--file", workload],
                             "\(workload):4: \"1.5ns\" has a fraction of a nanosecond: a duration is a whole number of nanoseconds at elements[0].interval")
    }

    @Test func unknownKeysInAWorkloadFileAreErrors() throws {
        let typo = try CLI.file("typo.yaml", "duration: 1s\nelements:\n  - kind: timers\n    cnt: 3\n")
        try expectUsageError(["run", "--file", typo],
                             "\(typo):3: unknown key \"cnt\" in a timers element (it takes kind, count, interval, tolerance, handler_cost) at elements[0]")
        let top = try CLI.file("top.yaml", "duration: 1s\nrepeat: 3\nelements:\n  - kind: jank\n")
        try expectUsageError(["run", "--file", top], "\(top): unknown key \"repeat\" in a workload (it takes duration, elements)")
        let json = try CLI.file("typo.json", #"{"duration": "1s", "elements": [{"kind": "blocks", "threads": 1, "rat": 10}]}"#)
        try expectUsageError(["run", "--file", json],
                             "\(json):1: unknown key \"rat\" in a sources, ports, io or blocks element (it takes kind, threads, rate, handler_cost, bytes) at elements[0]")
        // Every documented key is still accepted.
        let all = try CLI.file("all.yaml", """
        duration: 300ms
        elements:
          - kind: timers
            count: 2
            interval: 2ms
            tolerance: 100us
            handler_cost: 10us
          - kind: blocks
            threads: 1
            rate: 200
            handler_cost: 0us
            bytes: 16
          - kind: jank
            interval: 16ms
            every: 5
            cost: 1ms
          - kind: modes
            period: 100ms
            hold: 20ms
            interval: 5ms
        """)
        let result = try CLI.run(["run", "--file", all, "--tracer", "none"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// Every field has a default, duration included (it was required).
    @Test func aWorkloadFileWithoutADurationRunsForTheDefault() throws {
        let result = try CLI.run(["run", "--file", try CLI.file("noduration.yaml", "elements:\n  - kind: jank\n"), "--tracer", "none"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(" of 3.00s: "), "\(result.stdout)")
    }

    /// `--duration` with `--file` was silently ignored (the file's 2s ran); now it overrides the file's duration.
    @Test func anExplicitDurationOverridesTheWorkloadFiles() throws {
        let workload = try CLI.file("twoseconds.yaml", "duration: 2s\nelements:\n  - kind: timers\n    count: 2\n")
        let result = try CLI.run(["run", "--file", workload, "--duration", "300ms", "--tracer", "none"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(" of 300ms: "), "\(result.stdout)")
    }

    /// A built-in workload's element flags have nothing to set in a workload file: refused, not ignored.
    @Test func elementFlagsWithAWorkloadFileAreErrors() throws {
        let workload = try CLI.file("flags.yaml", "duration: 1s\nelements:\n  - kind: timers\n")
        try expectUsageError(["run", "--file", workload, "--count", "5"], "--count sets a built-in workload's element; with --file, write it in the file")
        try expectUsageError(["run", "--file", workload, "--rate", "10", "--every", "3"], "--rate, --every set a built-in workload's element; with --file, write it in the file")
    }

    @Test func anUntracedRunSaysWhatItDidInPlainFigures() throws {
        let timers = try CLI.run(["run", "timers", "--count", "2", "--duration", "300ms", "--tracer", "none"])
        #expect(timers.status == 0, "\(timers.stderr)")
        // A human duration, and no producer count for a workload that has no producers.
        #expect(timers.stdout.hasPrefix("untraced, ran ") && timers.stdout.contains(" of 300ms: "), "\(timers.stdout)")
        #expect(timers.stdout.contains("timer callouts") && !timers.stdout.contains("produced") && !timers.stdout.contains("producer"), "\(timers.stdout)")
        #expect(!timers.stdout.contains(" seconds"), "not Duration's raw description: \(timers.stdout)")
        let blocks = try CLI.run(["run", "blocks", "--threads", "1", "--rate", "500", "--duration", "300ms", "--tracer", "none"])
        #expect(blocks.status == 0, "\(blocks.stderr)")
        let sent = blocks.stdout.split(separator: " ").firstIndex(of: "events").map { Int(blocks.stdout.split(separator: " ")[$0 - 1]) ?? 0 } ?? 0
        #expect(blocks.stdout.contains("events sent by producer threads") && sent > 0, "\(blocks.stdout)")
    }

    /// With `\r\n` the first line's comment hid the second rule: `check` passed a failing trace, exit 0. Every
    /// line ending, a byte-order mark and tabs now check the same two rules (the second fails: exit 1).
    @Test func aBudgetChecksTheSameRulesWhateverItsLineEndings() throws {
        let rules = "trace.lost == 0 # x\nloop.iterations == 0\n"
        for variant in [rules, rules.replacingOccurrences(of: "\n", with: "\r\n"), rules.replacingOccurrences(of: "\n", with: "\r"),
                        "\u{FEFF}" + rules.replacingOccurrences(of: " ", with: "\t")] {
            let budget = try CLI.file("lineendings.budget", variant)
            let result = try CLI.run(["check", sharedTrace, "--budget", budget])
            #expect(result.status == 1, "\(variant.debugDescription): \(result.stdout) \(result.stderr)")
            #expect(result.stdout.contains("loop.iterations"), "\(variant.debugDescription): \(result.stdout)")
        }
    }

    /// JSONDecoder and YAMLDecoder keep the last of two equal keys and decode an empty or null value as a missing
    /// key, its default: `count: ''` ran 10 timers. Each is now an error naming its line.
    @Test(arguments: [
        ("dup.yaml", "duration: 1s\nelements:\n  - kind: timers\n    count: 3\n    count: 4\n", #":5: duplicate key "count" in element 1 (first on line 4)"#),
        ("dupduration.yaml", "duration: 1s\nduration: 2s\nelements:\n  - kind: jank\n", #":2: duplicate key "duration" in the workload (first on line 1)"#),
        ("emptycount.yaml", "elements:\n  - kind: timers\n    count: ''\n", #":3: empty value for "count" in element 1 (write a value, or leave the key out for its default)"#),
        ("nullcount.yaml", "elements:\n  - kind: timers\n    count: ~\n", #":3: empty value for "count" in element 1 (write a value, or leave the key out for its default)"#),
        ("emptyevery.yaml", "elements:\n  - kind: jank\n    every: ''\n", #":3: empty value for "every" in element 1 (write a value, or leave the key out for its default)"#),
        ("emptyinterval.yaml", "elements:\n  - kind: blocks\n  - kind: jank\n    interval: ''\n", #":4: empty value for "interval" in element 2 (write a value, or leave the key out for its default)"#),
        ("quotedtilde.yaml", "elements:\n  - kind: jank\n    cost: \"~\"\n", #":3: empty value for "cost" in element 1 (write a value, or leave the key out for its default)"#),
        ("nullduration.yaml", "duration: ~\nelements:\n  - kind: jank\n", #":1: empty value for "duration" in the workload (write a value, or leave the key out for its default)"#),
        ("nokey.yaml", "duration:\nelements:\n  - kind: jank\n", #":1: empty value for "duration" in the workload (write a value, or leave the key out for its default)"#),
        ("emptyelement.yaml", "elements:\n  -\n  - kind: jank\n", ":2: element 1 is empty"),
        ("dup.json", "{\"elements\": [{\"kind\": \"timers\",\n \"count\": 2, \"count\": 3}]}", #":2: duplicate key "count" in element 1 (first on line 2)"#),
        ("escapeddup.json", "{\"elements\": [{\"kind\": \"timers\", \"co\\u0075nt\": 2,\n\"count\": 3}]}", #":2: duplicate key "count" in element 1 (first on line 1)"#),
        ("nullcount.json", "{\"elements\": [{\"kind\": \"timers\",\n\"count\": null}]}", #":2: empty value for "count" in element 1 (write a value, or leave the key out for its default)"#),
        ("emptyinterval.json", "{\"elements\": [{\"kind\": \"timers\", \"interval\": \"\"}]}", #":1: empty value for "interval" in element 1 (write a value, or leave the key out for its default)"#),
        ("nullelement.json", "{\"elements\": [\nnull]}", ":2: element 1 is empty"),
        ("trailingcomma.json", "{\"elements\": [{\"kind\": \"jank\"}],\n}", ":2: not valid JSON"),
    ])
    func anAmbiguousWorkloadFileIsAnErrorNamingTheLine(name: String, text: String, message: String) throws {
        let path = try CLI.file(name, text)
        try expectUsageError(["run", "--file", path, "--tracer", "none"], path + message)
    }

    /// Any line ending, a byte-order mark and tabs where YAML and JSON allow them read as the `\n` file does.
    @Test func aWorkloadFileReadsTheSameWhateverItsLineEndings() throws {
        let yaml = "duration: 1s\nelements:\n  - kind: timers\n    count: 2\n    count: 3\n"
        let json = "{\"elements\": [\n{\"kind\": \"timers\", \"count\": 2,\n\"count\": 3}]}"
        for lineEnding in ["\r\n", "\r"] {
            let yamlPath = try CLI.file("lineending.yaml", "\u{FEFF}" + yaml.replacingOccurrences(of: "\n", with: lineEnding))
            try expectUsageError(["run", "--file", yamlPath], yamlPath + #":5: duplicate key "count" in element 1 (first on line 4)"#)
            let jsonPath = try CLI.file("lineending.json", "\u{FEFF}" + json.replacingOccurrences(of: "\n", with: lineEnding).replacingOccurrences(of: " ", with: "\t"))
            try expectUsageError(["run", "--file", jsonPath], jsonPath + #":3: duplicate key "count" in element 1 (first on line 2)"#)
            let valid = try CLI.file("valid.yaml", "\u{FEFF}elements:\r\n  - kind:\tjank\r\n    every:\t2\r\n".replacingOccurrences(of: "\r\n", with: lineEnding))
            let result = try CLI.run(["run", "--file", valid, "--duration", "100ms", "--tracer", "none"])
            #expect(result.status == 0, "\(result.stderr)")
        }
        let tabbed = try CLI.file("tabbed.yaml", "elements:\n\t- kind: jank\n")
        try expectUsageError(["run", "--file", tabbed], tabbed + ":2: not valid YAML: a tab, where YAML takes spaces only")
    }

    /// `rate: 1e99` (and `--rate 1e99`) paced its producers on a step of 0 ns: a flood, as `0` asks, without a word.
    @Test func anOutOfRangeRateIsAnError() throws {
        let possible = "0 (as fast as possible) or 0.001 to 10000000 events per second per thread"
        try expectUsageError(["run", "blocks", "--rate", "1e99"], "--rate must be \(possible) (got 1e+99)")
        try expectUsageError(["run", "blocks", "--rate", "0.0001"], "--rate must be \(possible) (got 0.0001)")
        let yaml = try CLI.file("fastrate.yaml", "elements:\n  - kind: blocks\n    rate: 1e99\n")
        try expectUsageError(["run", "--file", yaml], "\(yaml):3: element 1: rate must be \(possible) (got 1e+99)")
        let json = try CLI.file("fastrate.json", #"{"elements": [{"kind": "blocks"}, {"kind": "io", "rate": 1e99}]}"#)
        try expectUsageError(["run", "--file", json], "\(json):1: element 2: rate must be \(possible) (got 1e+99)")
        let count = try CLI.file("manytimers.yaml", "elements:\n  - kind: timers\n    count: 1e99\n")
        try expectUsageError(["run", "--file", count], "\(count):3: expected Int at elements[0].count (Expected to decode Int but found Scalar instead.)")
        let jsonCount = try CLI.file("manytimers.json", "{\"elements\": [{\"kind\": \"timers\",\n\"count\": 1e99}]}")
        try expectUsageError(["run", "--file", jsonCount], "\(jsonCount):2: expected Int at elements[0].count (Expected to decode Int but found Scalar instead.)")
        let result = try CLI.run(["run", "blocks", "--rate", "10000000", "--threads", "1", "--duration", "100ms", "--tracer", "none"])
        #expect(result.status == 0, "the bound itself runs: \(result.stderr)")
    }

    /// A producer slept until its next event: `--rate 0.001` made a 200 ms run last 1000 s, past its Ctrl-C too.
    @Test func aSlowRateEndsWithTheRun() throws {
        let started = ContinuousClock.now
        let result = try CLI.run(["run", "blocks", "--rate", "0.001", "--threads", "1", "--duration", "200ms", "--tracer", "none"],
                                 timeout: .seconds(30))
        #expect(result.termination == .exited(0), "\(result.termination): \(result.stderr)")
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    /// `run --trace DIR` with the embedded recorder wrote into a folder holding other files (a trace next to
    /// them); it is refused before the run starts. A missing or empty folder is fine.
    @Test func runRefusesATraceFolderThatHoldsFiles() throws {
        let occupied = temporaryPath("occupied")
        try FileManager.default.createDirectory(atPath: occupied, withIntermediateDirectories: true)
        try "notes".write(toFile: occupied + "/notes.txt", atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: occupied) }
        try expectUsageError(["run", "timers", "--duration", "100ms", "--trace", occupied], "\(occupied) already exists: give a new folder for the trace")
        try expectUsageError(["run", "timers", "--duration", "100ms", "--repeat", "2", "--trace", occupied], "\(occupied) already exists: give a new folder for the trace")
        #expect(try FileManager.default.contentsOfDirectory(atPath: occupied) == ["notes.txt"], "nothing was written")

        let empty = temporaryPath("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let missing = temporaryPath("missing")
        defer { try? FileManager.default.removeItem(atPath: missing) }
        for folder in [empty, missing] {
            let result = try CLI.run(["run", "timers", "--count", "2", "--duration", "100ms", "--trace", folder, "--format", "json"])
            #expect(result.status == 0, "\(folder): \(result.stderr)")
        }
    }
}

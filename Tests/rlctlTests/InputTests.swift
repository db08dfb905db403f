import Foundation
import Testing

/// Input that used to be silently wrong, or wrong without saying why.
@Suite struct InputTests {
    private func file(_ name: String, _ text: String) throws -> String {
        let path = CLI.temporary(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func expectUsageError(_ arguments: [String], mentions: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 2, "exit \(result.status) for \(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.hasPrefix("rlctl: ") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        for text in mentions { #expect(result.stderr.contains(text), "\(text) missing from: \(result.stderr)", sourceLocation: sourceLocation) }
    }

    @Test func anUnknownWorkloadListsTheWorkloads() throws {
        try expectUsageError(["run", "nosuch"], mentions: ["'nosuch'", "timers, sources, ports, io, blocks, modes, jank, mixed"])
        try expectUsageError(["run", "timers", "--tracer", "dtrace"], mentions: ["'dtrace'", "'embedded'", "'none'"])
    }

    @Test func aDurationWithoutAUnitSaysSo() throws {
        try expectUsageError(["run", "timers", "--duration", "3"], mentions: ["--duration", "no unit", "3s"])
        try expectUsageError(["run", "timers", "--interval", "2.5"], mentions: ["--interval", "no unit", "2.5ms"])
        try expectUsageError(["summarize", "/nonexistent", "--stall", "16"], mentions: ["--stall", "no unit"])
        try expectUsageError(["run", "timers", "--duration", "soon"], mentions: ["not a duration"])
        // A negative value is the option's value, not an unknown flag ("Missing value for '--duration'").
        try expectUsageError(["run", "timers", "--duration", "-1s"], mentions: ["--duration", "\"-1s\" is negative"])
        try expectUsageError(["run", "timers", "--interval", "-.5ms"], mentions: ["--interval", "is negative"])
    }

    @Test func unknownKeysInAWorkloadFileAreErrors() throws {
        try expectUsageError(["run", "--file", try file("typo.yaml", "duration: 1s\nelements:\n  - kind: timers\n    cnt: 3\n")],
                             mentions: ["unknown key \"cnt\"", "count", "elements[0]"])
        try expectUsageError(["run", "--file", try file("top.yaml", "duration: 1s\nrepeat: 3\nelements:\n  - kind: jank\n")],
                             mentions: ["unknown key \"repeat\"", "duration, elements"])
        try expectUsageError(["run", "--file", try file("typo.json", #"{"duration": "1s", "elements": [{"kind": "blocks", "threads": 1, "rat": 10}]}"#)],
                             mentions: ["unknown key \"rat\"", "rate"])
        // Every documented key is still accepted.
        let all = try file("all.yaml", """
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
        let result = try CLI.run(["run", "--file", try file("noduration.yaml", "elements:\n  - kind: jank\n"), "--tracer", "none"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(" of 3.00s: "), "\(result.stdout)")
    }

    /// `--duration` with `--file` was silently ignored (the file's 2s ran); now it overrides the file's duration.
    @Test func anExplicitDurationOverridesTheWorkloadFiles() throws {
        let workload = try file("twoseconds.yaml", "duration: 2s\nelements:\n  - kind: timers\n    count: 2\n")
        let result = try CLI.run(["run", "--file", workload, "--duration", "300ms", "--tracer", "none"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(" of 300ms: "), "\(result.stdout)")
    }

    /// A built-in workload's element flags have nothing to set in a workload file: refused, not ignored.
    @Test func elementFlagsWithAWorkloadFileAreErrors() throws {
        let workload = try file("flags.yaml", "duration: 1s\nelements:\n  - kind: timers\n")
        try expectUsageError(["run", "--file", workload, "--count", "5"], mentions: ["--count", "with --file, write it in the file"])
        try expectUsageError(["run", "--file", workload, "--rate", "10", "--every", "3"], mentions: ["--rate, --every"])
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
}

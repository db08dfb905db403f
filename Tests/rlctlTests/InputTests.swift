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

    @Test func unknownKeysInAWorkloadFileAreErrors() throws {
        let typo = try CLI.file("typo.yaml", "duration: 1s\nelements:\n  - kind: timers\n    cnt: 3\n")
        try expectUsageError(["run", "--file", typo],
                             "\(typo): unknown key \"cnt\" in a timers element (it takes kind, count, interval, tolerance, handler_cost) at elements[0]")
        let top = try CLI.file("top.yaml", "duration: 1s\nrepeat: 3\nelements:\n  - kind: jank\n")
        try expectUsageError(["run", "--file", top], "\(top): unknown key \"repeat\" in a workload (it takes duration, elements)")
        let json = try CLI.file("typo.json", #"{"duration": "1s", "elements": [{"kind": "blocks", "threads": 1, "rat": 10}]}"#)
        try expectUsageError(["run", "--file", json],
                             "\(json): unknown key \"rat\" in a sources, ports, io or blocks element (it takes kind, threads, rate, handler_cost, bytes) at elements[0]")
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
}

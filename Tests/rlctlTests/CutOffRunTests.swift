import Foundation
import Glibc
import Testing
import TestSupport

/// Traces cut off every way a run can be: the summary's figures are the recorded events' own, and `check` never
/// passes a budget on them unless the budget allows incomplete data.
@Suite struct CutOffRunTests {
    /// What the recorded events of loop 1 say, computed from `rlctl export --format jsonl` independently of the
    /// summarizer, with the rules a lossy trace needs: an event with no run open belongs to a run whose begin was
    /// lost, which starts there; a run begins inside another only within a callout (the workloads used here do
    /// not nest, but a callout whose end was lost looks like one), so a run that begins while one is open and no
    /// callout is lost its end, at the loop's previous event.
    struct Recorded {
        var wall: UInt64 = 0
        var asleep: UInt64 = 0
        var iterations = 0
        var runBegins = 0
        var runEnds = 0
        /// Runs with events in the trace but no begin (the ring overwrote it).
        var runsWithoutBegin = 0
        var lastEvent: UInt64 = 0

        init(trace: String) throws {
            let jsonl = temporaryPath("cut.jsonl")
            defer { try? FileManager.default.removeItem(atPath: jsonl) }
            let export = try CLI.run(["export", trace, "--format", "jsonl", "-o", jsonl])
            try #require(export.status == 0, "\(export.stderr)")
            var runs: [UInt64] = []
            var callouts: [Int] = []
            for line in try String(contentsOfFile: jsonl, encoding: .utf8).split(separator: "\n") {
                let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                guard event["loop_id"] as? Int == 1, let name = event["event"] as? String, name != "loop_create",
                      let ts = (event["timestamp_ns"] as? NSNumber)?.uint64Value else { continue }
                if runs.isEmpty && name != "run_begin" {
                    runs = [ts]
                    runsWithoutBegin += 1
                }
                // Callouts by item id (the main queue has none), as the summarizer matches their ends.
                let item = ["timer_id", "source_id", "block_id", "observer_id", "job_id"].lazy.compactMap { event[$0] as? Int }.first ?? -1
                switch name {
                case "run_begin":
                    runBegins += 1
                    if !runs.isEmpty && callouts.isEmpty {
                        wall += lastEvent - runs[0]
                        runs = []
                    }
                    runs.append(ts)
                case "run_end":
                    runEnds += 1
                    if runs.count == 1 {
                        wall += ts - runs[0]
                        callouts = []
                    }
                    runs.removeLast()
                case "wakeup":
                    let slept = (event["slept_ns"] as! NSNumber).uint64Value
                    asleep += min(slept, ts - runs[0])   // a sleep counts from the outermost run's start
                case "before_timers":
                    iterations += 1
                case _ where name.hasSuffix("_begin"):
                    callouts.append(item)
                case _ where name.hasSuffix("_end"):
                    if let index = callouts.lastIndex(of: item) { callouts.removeSubrange(index...) }
                default:
                    break
                }
                lastEvent = ts
            }
            if let first = runs.first { wall += lastEvent - first }
        }
    }

    /// `rlctl run ARGS --trace DIR`, sent `signal` after `after` seconds when given.
    private func record(_ arguments: [String], signal: Int32? = nil, after: Double = 0.8) throws -> (trace: String, result: ProcessOutput) {
        let trace = temporaryPath("cut.rltrace")
        let rlctl = try CLI.start(["run"] + arguments + ["--trace", trace, "--format", "json"])
        if let signal {
            // From the recording's start, not the process's: a loaded machine can take longer than `after` to
            // start a debug rlctl, and a signal before the recording began tests nothing here.
            try rlctl.waitUntilRecording(into: trace)
            usleep(UInt32(after * 1_000_000))
            rlctl.send(signal)
        }
        return (trace, rlctl.wait())
    }

    static func summary(_ trace: String) throws -> [String: Any] {
        let result = try CLI.run(["summarize", trace, "--format", "json"])
        try #require(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    static func loop(_ summary: [String: Any]) throws -> [String: Any] {
        let loops = try #require(summary["loops"] as? [[String: Any]])
        return try #require(loops.first { $0["loopID"] as? Int == 1 })
    }

    static func check(_ trace: String, budget: String) throws -> ProcessOutput {
        let file = temporaryPath("cut.budget")
        defer { try? FileManager.default.removeItem(atPath: file) }
        try budget.write(toFile: file, atomically: true, encoding: .utf8)
        return try CLI.run(["check", trace, "--budget", file])
    }

    static func uint(_ value: Any?) -> UInt64 { (value as? NSNumber)?.uint64Value ?? 0 }

    /// The loop's wall, asleep and iterations are exactly what its recorded events add up to, and it ran.
    static func expectFiguresMatch(_ trace: String, _ loop: [String: Any]) throws {
        let recorded = try Recorded(trace: trace)
        #expect(Self.uint(loop["wallNanoseconds"]) == recorded.wall)
        #expect(Self.uint(loop["sleepNanoseconds"]) == recorded.asleep)
        #expect(Self.uint(loop["busyNanoseconds"]) == recorded.wall - recorded.asleep)
        #expect(loop["iterations"] as? Int == recorded.iterations)
        #expect(recorded.wall > 0 && (loop["utilization"] as? Double ?? 0) > 0, "a loop that ran is never summarized as 0 ns")
        let results = loop["results"] as? [String: Int] ?? [:]
        #expect(loop["runs"] as? Int == results.values.reduce(0, +), "runs and their results agree: \(results)")
    }

    static let budget = "loop.utilization <= 100%\n"

    @Test func sigkillLeavesARunThatDidNotEnd() throws {
        let (trace, result) = try record(["timers", "--duration", "2s"], signal: SIGKILL)
        defer { try? FileManager.default.removeItem(atPath: trace) }
        #expect(result.termination == .signaled(SIGKILL), "\(result.termination)")
        let s = try Self.summary(trace)
        let loop = try Self.loop(s)
        try Self.expectFiguresMatch(trace, loop)
        #expect(loop["results"] as? [String: Int] == ["did_not_end": 1])
        #expect(Self.uint(loop["cutOffAtNanoseconds"]) == (try Recorded(trace: trace)).lastEvent)
        #expect((s["health"] as? [String: Any])?["runsCutOff"] as? Int == 1)

        let text = try CLI.run(["summarize", trace])
        #expect(text.stdout.contains("did not end 1 (trace cut off at +"), "\(text.stdout.prefix(600))")
        #expect(!text.stdout.contains("every run complete"))

        let verdict = try Self.check(trace, budget: Self.budget)
        #expect(verdict.status == 3, "a cut-off run never passes: \(verdict.stdout)")
        #expect(verdict.stdout.contains("INCOMPLETE") && !verdict.stdout.contains("PASS"), "\(verdict.stdout)")
        // rlctl itself was killed: its recorder never completed the trace either.
        #expect((s["health"] as? [String: Any])?["recordingCutOff"] as? Bool == true)
        let runsOnly = try Self.check(trace, budget: Self.budget + "trace.runs_incomplete <= 1\n")
        #expect(runsOnly.status == 3, "allowing cut-off runs does not allow a cut-off recording: \(runsOnly.stdout)")
        let allowed = try Self.check(trace, budget: Self.budget + "trace.runs_incomplete <= 1\ntrace.cut_off <= 1\n")
        #expect(allowed.status == 0, "a budget may allow both: \(allowed.stdout)")
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalEndsTheRunAndTheTraceIsComplete(signal: Int32) throws {
        let (trace, result) = try record(["timers", "--duration", "2s"], signal: signal)
        defer { try? FileManager.default.removeItem(atPath: trace) }
        #expect(result.status == 0, "\(result.stderr)")
        let s = try Self.summary(trace)
        let loop = try Self.loop(s)
        try Self.expectFiguresMatch(trace, loop)
        // The workload's run is stopped; a last zero-timeout run may follow to drain queued work.
        let results = loop["results"] as? [String: Int] ?? [:]
        #expect(results["stopped"] == 1 && results["did_not_end"] == nil && results["end_lost"] == nil, "\(results)")
        #expect(Self.uint(loop["wallNanoseconds"]) < 1_500_000_000, "ended early by the signal")
        let verdict = try Self.check(trace, budget: Self.budget)
        #expect(verdict.status == 0 && verdict.stdout.contains("PASS loop.utilization"), "\(verdict.stdout)")
    }

    // Under ThreadSanitizer the instrumented flood is slower than the recorder's uninstrumented writer, so a 64 KiB
    // buffer loses nothing and the test would have nothing to check.
    @Test(.disabled(if: TestEnvironment.isThreadSanitized, "under ThreadSanitizer the flood no longer outruns the writer"))
    func heavyLossKeepsTheFiguresOfWhatWasRecordedAndFailsAsIncomplete() throws {
        let (trace, result) = try record(["blocks", "--rate", "0", "--buffer-kib", "64", "--duration", "300ms"])
        defer { try? FileManager.default.removeItem(atPath: trace) }
        #expect(result.status == 0, "\(result.stderr)")
        let s = try Self.summary(trace)
        let health = try #require(s["health"] as? [String: Any])
        let lost = Self.uint(health["eventsLost"])
        #expect(lost > 0, "a 64 KiB buffer under a flood loses events")
        let loop = try Self.loop(s)
        try Self.expectFiguresMatch(trace, loop)
        #expect(Self.uint(loop["lostEventsAffecting"]) == lost, "one loss total for the loop and the trace")
        let text = try CLI.run(["summarize", trace]).stdout
        #expect(text.contains("(!) \(lost) lost events in its window"), "\(text.prefix(800))")
        #expect(text.contains(" utilization ") && text.split(separator: "\n").first { $0.contains(" utilization ") }?.hasSuffix("(!)") == true)
        let verdict = try Self.check(trace, budget: Self.budget)
        #expect(verdict.status == 3, "\(verdict.stdout)")
    }

    @Test func theFlightRecorderRingKeepsRunsWhoseBeginItLost() throws {
        let (trace, result) = try record(["timers", "--flight-recorder", "--buffer-kib", "64", "--duration", "1s"])
        defer { try? FileManager.default.removeItem(atPath: trace) }
        #expect(result.status == 0, "\(result.stderr)")
        let s = try Self.summary(trace)
        let loop = try Self.loop(s)
        let recorded = try Recorded(trace: trace)
        #expect(recorded.runsWithoutBegin == 1, "the ring overwrote the run's begin (else this test shows nothing)")
        try Self.expectFiguresMatch(trace, loop)
        #expect(loop["runsBegunBeforeTrace"] as? Int == 1)
        #expect(loop["runs"] as? Int == recorded.runBegins + 1)
        #expect((loop["iterations"] as? Int ?? 0) > 0)
        let text = try CLI.run(["summarize", trace]).stdout
        #expect(text.contains("began before the trace's first event"), "\(text.prefix(800))")
        let verdict = try Self.check(trace, budget: Self.budget)
        #expect(verdict.status == 3, "\(verdict.stdout)")
    }
}

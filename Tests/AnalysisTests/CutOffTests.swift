import Analysis
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// Runs whose begin or end is not in the trace: the figures come from the events that are there.
@Suite struct CutOffTests {
    /// One iteration busy 2 ms then asleep 8 ms, from `start`.
    private func iteration(_ t: inout TraceBuilder, at start: Double) {
        t.activity(start, .beforeTimers)
        t.activity(start + 1, .beforeSources)
        t.sleep(from: start + 2, to: start + 10)
    }

    @Test func aRunWithoutItsEndIsMeasuredUpToTheLoopsLastEvent() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .entry)
        iteration(&t, at: 0)
        iteration(&t, at: 10)
        t.timer(1, scheduled: 20, at: 20, until: 23)   // killed here: no exit, no run end
        let s = try t.summarize()
        let loop = try #require(s.loops.first)
        #expect(loop.runs == 1)
        #expect(loop.results == ["did_not_end": 1])
        #expect(loop.cutOffAtNanoseconds == 23_000_000)
        #expect(loop.wallNanoseconds == 23_000_000)
        #expect(loop.sleepNanoseconds == 16_000_000)
        #expect(loop.busyNanoseconds == 7_000_000)
        #expect(abs(loop.utilization - 7.0 / 23) < 1e-9)
        #expect(loop.iterations == 2)
        #expect(loop.busyPerIteration.count == 2, "the cut iteration counts with its busy time so far")
        #expect(abs(Double(loop.busyPerIteration.max) - 5e6) < 5e4, "10-12 and 20-23 ms: busy up to the loop's last event (within the histogram's precision)")
        #expect(s.health.runsCutOff == 1)
        #expect(s.health.runsIncomplete)
        #expect(s.health.cutOffAtNanoseconds == 23_000_000)
        #expect(s.overall.wallNanoseconds == 23_000_000)
        #expect(Metric.named("trace.runs_incomplete")?.value(in: s) == 1)
        #expect(Metric.named("loop.utilization")?.value(in: s) == loop.utilization)

        let text = SummaryReport.text(s)
        #expect(text.contains("runs 1 (calls of Loop.run): did not end 1 (trace cut off at +23.0ms); iterations 2"), "\(text)")
        #expect(text.contains("wall 23.0ms (up to the cut-off), busy 7.00ms, asleep 16.0ms, utilization 30.4%"), "\(text)")
        #expect(text.contains("INCOMPLETE") && text.contains("cut off at +23.0ms: 1 run(s) did not end"), "\(text)")
        #expect(!text.contains("every run complete"))
    }

    /// A stall snapshot taken while its stall was still under way: the iteration and its callout never end in the
    /// trace, yet they are the stall the snapshot is about. The iteration counts, busy at least until the trace's
    /// last event (the callout held the thread all that time), its running callout is the cause, and it is marked
    /// cut off.
    @Test func aStallStillUnderWayAtTheTracesEndCountsAsACutOffStall() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .entry)
        iteration(&t, at: 0)
        t.activity(10, .beforeTimers)
        t.add(10, .timerFireBegin(loopID: 1, timerID: 7, scheduled: 10_000_000, tolerance: 0, interval: 16_000_000, missed: 0))
        // The loop's watchdog reports the stall from another thread while the callout still runs; the snapshot ends.
        t.events.append(TraceEvent(timestamp: 50_000_000, threadID: 2, payload: .loopStall(.init(
            loopID: 1, mode: t.mode, iteration: 1, start: 10_000_000, busy: 40_000_000, threshold: 30_000_000,
            culpritKind: .timer, culpritID: 7, culpritDuration: 40_000_000, culpritLabel: "jank-1"))))
        t.add(50, .itemLabel(itemID: 7, kind: .timer, label: "jank-1"))
        let s = try t.summarize(options: { var o = TraceSummarizer.Options(); o.stallThreshold = 30_000_000; return o }())
        let loop = try #require(s.loops.first)
        #expect(loop.stalls == 1)
        let stall = try #require(loop.worstStalls.first)
        #expect(stall.busyNanoseconds == 40_000_000)
        #expect(stall.cutOff == true)
        #expect(stall.cause == "timer jank-1" + " (cut off: at least this long)")
        #expect(loop.busyPerIteration.count == 2 && abs(Double(loop.busyPerIteration.max) - 40e6) < 4e5)
        let text = SummaryReport.text(s)
        #expect(text.contains("stalls (> threshold): 1 iterations busier than 30.0ms; worst: 40.0ms in timer jank-1 (cut off: at least this long)"), "\(text)")
    }

    @Test func aFlightRecorderRingThatLostTheRunsBeginStillCountsItsIterations() throws {
        var t = TraceBuilder()
        // The ring kept only the end: a wake-up from a sleep that began before the first event, then two iterations.
        t.add(100, .wakeUp(loopID: 1, reason: .timer, slept: 50_000_000))
        t.activity(100, .afterWaiting)
        iteration(&t, at: 101)
        iteration(&t, at: 111)
        t.activity(121, .exit)
        t.runEnd(121)
        let s = try t.summarize()
        let loop = try #require(s.loops.first)
        #expect(loop.runs == 1)
        #expect(loop.results == ["timed_out": 1])
        #expect(loop.runsBegunBeforeTrace == 1)
        #expect(loop.cutOffAtNanoseconds == nil)
        #expect(loop.iterations == 2)
        #expect(loop.wallNanoseconds == 21_000_000)
        #expect(loop.sleepNanoseconds == 16_000_000, "the sleep before the first event is outside the window")
        #expect(loop.busyNanoseconds == 5_000_000)
        #expect(s.health.runsBegunBeforeTrace == 1)
        let text = SummaryReport.text(s)
        #expect(text.contains("runs 1 (calls of Loop.run, 1 begun before the trace): timed out 1; iterations 2"), "\(text)")
        #expect(text.contains("1 run(s) began before the trace's first event (a flight-recorder ring"), "\(text)")
    }

    @Test func aNestedActivityWithNoBeginsOpensBothRuns() throws {
        var t = TraceBuilder()
        t.mode = "rlctl.modal"
        t.depth = 2
        iteration(&t, at: 50)
        t.activity(60, .exit)
        t.add(60, .runEnd(loopID: 1, mode: "rlctl.modal", result: .timedOut))
        t.add(61, .timerFireEnd(loopID: 1, timerID: 4))
        t.mode = "kCFRunLoopDefaultMode"
        t.depth = 1
        t.activity(62, .exit)
        t.runEnd(62)
        let loop = try #require(try t.summarize().loops.first)
        #expect(loop.runs == 2)
        #expect(loop.runsBegunBeforeTrace == 2)
        #expect(loop.results == ["timed_out": 2])
        #expect(loop.wallNanoseconds == 12_000_000)
        #expect(loop.sleepNanoseconds == 8_000_000)
    }

    @Test func aLostRunEndIsNotMistakenForANestedRun() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        iteration(&t, at: 0)          // its last event is at 10 ms; the run's exit and end were lost
        t.runBegin(20)
        iteration(&t, at: 20)
        t.activity(30, .exit)
        t.runEnd(30)
        let loop = try #require(try t.summarize().loops.first)
        #expect(loop.runs == 2)
        #expect(loop.nestedRuns == 0)
        #expect(loop.results == ["end_lost": 1, "timed_out": 1])
        #expect(loop.wallNanoseconds == 20_000_000)
        #expect(loop.sleepNanoseconds == 16_000_000)
    }

    @Test func aCompleteTraceSaysSo() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        iteration(&t, at: 0)
        t.activity(10, .exit)
        t.runEnd(10)
        let s = try t.summarize()
        #expect(!s.health.runsIncomplete)
        #expect(s.health.runsCutOff == 0 && s.health.runsBegunBeforeTrace == 0)
        #expect(SummaryReport.text(s).contains("trace: \(s.health.eventsRead) events, none lost, every run complete"))
    }
}

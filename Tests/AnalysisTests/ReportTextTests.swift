@testable import Analysis
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// What the text and Markdown reports say: every figure explained, none that has no meaning for the data.
@Suite struct ReportTextTests {
    /// A run with a zero-tolerance timer "frame" 5 ms late once because of a 20 ms source callout "parse".
    static func lateFrame(timer: String = "frame", source: String = "parse") -> TraceBuilder {
        var t = TraceBuilder()
        t.add(0, .itemLabel(itemID: 9, kind: .source, label: source))
        t.add(0, .itemLabel(itemID: 1, kind: .timer, label: timer))
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.source(9, signaled: 0, at: 1, until: 21)
        t.timer(1, scheduled: 16, at: 21, until: 22)
        t.activity(22, .beforeTimers)
        t.sleep(from: 23, to: 30)
        t.activity(30, .exit)
        t.runEnd(30)
        return t
    }

    private func lines(_ text: String, starting prefix: String) -> [Substring] {
        text.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix(prefix) }
    }

    @Test func theStallLineSaysItsThreshold() throws {
        var options = TraceSummarizer.Options()
        options.stallThreshold = 10_000_000
        let text = SummaryReport.text(try Self.lateFrame().summarize(options: options))
        #expect(text.contains("stalls (> threshold): 1 iterations busier than 10.0ms; worst: 22.0ms in source parse"), "\(text)")
    }

    @Test func aTimerWithoutToleranceHasNoWithinToleranceShare() throws {
        let s = try Self.lateFrame().summarize()
        let text = SummaryReport.text(s)
        #expect(!text.contains("within tolerance 0.00%") && !text.contains("0.00% within tolerance"), "\(text)")
        #expect(text.contains("frame: 1 firings, missed 0, no tolerance,"), "\(text)")
        #expect(text.contains("timers: 1 firings, 0 missed slots, no tolerance, 1 late"), "\(text)")
        #expect(!SummaryReport.markdown(s).contains("0.00%"))
    }

    @Test func toleranceShareCountsOnlyTimersWithATolerance() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.timer(1, scheduled: 0, at: 0.5, until: 0.6)                 // no tolerance
        t.timer(2, scheduled: 1, at: 1.5, until: 1.6, tolerance: 1)   // within its 1 ms
        t.timer(2, scheduled: 2, at: 4, until: 4.1, tolerance: 1)     // 2 ms late: beyond
        t.activity(5, .exit)
        t.runEnd(5)
        let s = try t.summarize()
        #expect(s.loops[0].timerFiringsWithTolerance == 2)
        #expect(s.loops[0].timerWithinTolerance == 0.5)
        #expect(SummaryReport.text(s).contains("50.0% of firings with a tolerance within it"))
        #expect(SummaryReport.text(s).contains("within tolerance (1.00ms) 50.0%"))
    }

    @Test func noEmptyHeadings() throws {
        // Descriptor callouts only: no wake-up latency of any kind to list.
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.add(1, .sourcePerformBegin(loopID: 1, sourceID: 4, kind: .descriptor, order: 0, signaled: 0))
        t.add(2, .sourcePerformEnd(loopID: 1, sourceID: 4))
        t.activity(3, .exit)
        t.runEnd(3)
        let text = SummaryReport.text(try t.summarize())
        #expect(!text.contains("wake-up latency:"), "\(text)")
        #expect(text.contains("callouts:"))
        #expect(!text.contains("sleep: -"), "a loop that never slept has no sleep distribution to print")
        #expect(SummaryReport.text(try Self.lateFrame().summarize()).contains("wake-up latency:\n    timer due → callout"))
    }

    @Test func runCountsSayWhatARunIs() throws {
        let s = try NestedAttributionTests.modalSession().summarize()
        #expect(SummaryReport.text(s).contains("runs 2 (calls of Loop.run, 1 nested in a callout): timed out 2; iterations 3"),
                "\(SummaryReport.text(s))")
    }

    @Test func everyFigureOverALossyWindowIsMarkedWithOneLossTotal() throws {
        var health = TraceHealth()
        health.eventsLost = 42
        health.packetsLost = 1
        health.lossWindows = [.init(stream: "tid 7", from: 2_000_000, to: 3_000_000, events: 42),
                              .init(stream: "tid 7", from: 20_000_000, to: 22_000_000, events: 0)]   // packets, over the firing
        let s = try Self.lateFrame().summarize(health: health)
        #expect(s.loops[0].lostEventsAffecting == s.health.eventsLost, "one loss total: the windows' events, not one per window")
        #expect(s.loops[0].lossWindowsAffecting == 2)
        let text = SummaryReport.text(s)
        #expect(text.contains("loop 1 (thread 7) (!) 42 lost events in its window"), "\(text)")
        let loopSection = text.components(separatedBy: "\nloop 1")[1].components(separatedBy: "\n\ntimers")[0]
        for line in loopSection.split(separator: "\n").dropFirst() {
            let isBar = line.contains("█")
            let isHeading = line.hasSuffix(":")
            #expect(isBar || isHeading || line.hasSuffix(" (!)"), "unmarked figure: \(line)")
        }
        let frameLines = lines(text, starting: "frame")
        #expect(!frameLines.isEmpty && frameLines.allSatisfy { $0.contains("frame (!)") })
        #expect(SummaryReport.markdown(s).contains("| busy per iteration (!) |"))
    }

    @Test func aLossOfWholePacketsOnlyStillMarksTheLoop() throws {
        var health = TraceHealth()
        health.packetsLost = 3
        health.lossWindows = [.init(stream: "tid 7", from: 2_000_000, to: 3_000_000, events: 0)]
        let s = try Self.lateFrame().summarize(health: health)
        #expect(s.loops[0].lostEventsAffecting == 0)
        #expect(SummaryReport.text(s).contains("(!) whole packets lost in its window"))
    }

    @Test func theMarkdownSummaryHasTimersLateCausesAndALabelledHistogram() throws {
        let markdown = SummaryReport.markdown(try Self.lateFrame().summarize())
        #expect(markdown.contains("| timer | firings | missed | tolerance |"), "\(markdown)")
        #expect(markdown.contains("| frame | 1 | 0 | none | "), "\(markdown)")
        #expect(markdown.contains("source parse (1×)"))
        #expect(markdown.contains("by what held the loop when they came due") && markdown.contains("- 1× source parse"))
        #expect(markdown.contains("Timer lateness of all firings (firings per power-of-two bucket):\n\n```"))
        #expect(markdown.contains("1 stalls (iterations busier than 16.0ms)"))
    }
}

/// `compare`: utilization in points, and a warning when the two sides are not the same workload.
@Suite struct ComparisonTests {
    static func report(_ workload: String, utilizations: [Double], timerLabel: String = "timer-1.1") -> RunReport {
        let repetitions = utilizations.map { u -> TraceSummary in
            var loop = TraceSummary.LoopSummary()
            loop.utilization = u
            var callouts = DistributionSummary()
            callouts.count = 1
            loop.calloutDurations = ["timer": callouts]
            let timer = TraceSummary.TimerSummary(timerID: 1, label: timerLabel, loopID: 1, firings: 1, missed: 0,
                                                  toleranceNanoseconds: 0, intervalNanoseconds: 1, lateness: .init(),
                                                  beyondTolerance: .init(), withinTolerance: 1, driftNanosecondsPerSecond: 0,
                                                  lateFirings: 0, lateFiringCauses: [:], lostEventsAffecting: 0)
            return TraceSummary(health: .init(eventsRead: 1, eventsLost: 0, packetsLost: 0, lossWindows: []), overall: loop,
                                loops: [loop], timers: [timer], stallThresholdNanoseconds: 1, lateThresholdNanoseconds: 1)
        }
        return RunReport(workload: workload, tracer: "embedded", repetitions: repetitions)
    }

    @Test func utilizationChangesInPoints() throws {
        let a = Self.report("timers", utilizations: [0.40, 0.40, 0.40])
        let b = Self.report("timers", utilizations: [0.44, 0.44, 0.44])
        let result = try #require(Comparison.compare(baseline: a, current: b, metrics: ["loop.utilization"], threshold: 0.05).first)
        #expect(result.inPoints)
        #expect(abs(result.change - 0.04) < 1e-12, "4 points, not +10%: \(result.change)")
        #expect(!result.regressed, "4 points is within a 5-point threshold")
        let worse = Self.report("timers", utilizations: [0.50, 0.50, 0.50])
        #expect(Comparison.compare(baseline: a, current: worse, metrics: ["loop.utilization"], threshold: 0.05).first?.regressed == true)
        #expect(formatPoints(0.04) == "+4.00 pts" && formatPoints(-0.123) == "-12.3 pts")
    }

    @Test func differentWorkloadsAreNamed() throws {
        let timers = Self.report("timers", utilizations: [0.4])
        #expect(Comparison.workloadMismatch(baseline: timers, current: timers) == nil)
        #expect(Comparison.workloadMismatch(baseline: timers, current: Self.report("jank", utilizations: [0.4]))?.contains("\"timers\"") == true)
        // A trace folder or summary does not know its workload: its timers tell.
        var jankTrace = Self.report("/tmp/jank.rltrace", utilizations: [0.4], timerLabel: "jank-1")
        jankTrace.isTraceFolder = true
        let why = try #require(Comparison.workloadMismatch(baseline: timers, current: jankTrace))
        #expect(why.contains("only the baseline has timer-1.1") && why.contains("only the current run has jank-1"), "\(why)")
    }
}

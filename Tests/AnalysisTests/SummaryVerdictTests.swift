@testable import Analysis
import RunLoopCore
import Testing
import TraceModel

/// The verdict a summary opens with: what is wrong, with its numbers and culprit, before any detail.
@Suite struct SummaryVerdictTests {
    /// A 30 ms timer callout all on the CPU, and a second timer due during it, called out 29 ms late.
    static func ownWork() -> TraceBuilder {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.add(0, .itemLabel(itemID: 1, kind: .timer, label: "render"))
        t.add(0, .itemLabel(itemID: 2, kind: .timer, label: "tick"))
        t.timer(1, scheduled: 0, at: 0, until: 30)
        t.timer(2, scheduled: 1, at: 30, until: 30.1)
        t.activity(31, .exit)
        t.runEnd(31)
        return t.inTimeOrder
    }

    @Test func aStallOfItsOwnWorkNamesTheCalloutAndItsTimeOnTheCPU() throws {
        let s = try Self.ownWork().summarize()
        #expect(SummaryVerdict(s).findings == [
            "1 stall (iterations busier than 16.0ms); worst 31.0ms in timer render on loop 1: its own work (31.0ms on CPU)",
            "1 timer firing later than 1.00ms (worst 29.0ms): 1 while timer render ran",
        ])
    }

    /// jank beside two hogs (KernelCauseTests): 41.5 ms busy, 36 ms of it waiting for CPU 0 behind two `sh`.
    @Test func aStallThatWaitedForTheCPUIsTheMachineNotTheCode() throws {
        let s = try KernelCauseTests.jankBesideHogs().summarize()
        #expect(SummaryVerdict(s).findings == [
            "1 stall (iterations busier than 16.0ms); worst 41.5ms in timer jank-1 on loop 1: 36.0ms waiting for CPU 0 behind sh (pid 4242) and 1 more, only 5.50ms on CPU: the machine, not the code",
        ])
    }

    @Test func aStallThatWasThrottledSaysTheQuota() throws {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.add(0, .itemLabel(itemID: 1, kind: .timer, label: "work"))
        t.timer(1, scheduled: 0, at: 0, until: 40)
        t.offCPU(.throttled, left: 2, back: 32, throttled: 30)
        t.activity(40, .exit)
        t.runEnd(40)
        let s = try t.inTimeOrder.summarize()
        let stall = try #require(SummaryVerdict(s).findings.first)
        #expect(stall.hasSuffix("worst 40.0ms in timer work on loop 1: 30.0ms throttled by the CPU quota, only 10.0ms on CPU: the CPU quota, not the code"), "\(stall)")
    }

    /// 40 ms busy, 30 of them on the CPU and 10 waiting for it: a stall of its own, made longer by the machine.
    @Test func aStallLongOnItsOwnIsTheCodeEvenWhenItAlsoWaited() throws {
        var t = TraceBuilder.kernelViewedRun(naming: [(4242, 4242, "sh")])
        t.add(0, .itemLabel(itemID: 1, kind: .timer, label: "work"))
        t.timer(1, scheduled: 0, at: 0, until: 40)
        t.offCPU(.preempted, left: 10, back: 20, culprits: [(4242, 10)])
        t.activity(40, .exit)
        t.runEnd(40)
        let stall = try #require(SummaryVerdict(try t.inTimeOrder.summarize()).findings.first)
        #expect(stall.hasSuffix("worst 40.0ms in timer work on loop 1: its own work (30.0ms on CPU), made longer by 10.0ms waiting for CPU 0 behind sh (pid 4242)"), "\(stall)")
    }

    @Test func aQuietTraceSaysNothingWasFoundInOneLine() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.timer(1, scheduled: 0, at: 0.1, until: 0.2)
        t.sleep(from: 0.3, to: 5)
        t.activity(5, .exit)
        t.runEnd(5)
        let s = try t.summarize()
        #expect(SummaryVerdict(s).isClean)
        #expect(SummaryVerdict(s).lines() == ["verdict: no stall over 16.0ms, no work later than 1.00ms, nothing lost"])
    }

    @Test func lostEventsComeFirstAndSayTheFiguresAreLowerBounds() throws {
        var health = TraceHealth()
        health.eventsLost = 42
        let s = try Self.ownWork().summarize(health: health)
        let findings = SummaryVerdict(s).findings
        #expect(findings.first == "INCOMPLETE DATA: 42 events lost; figures marked (!) are lower bounds")
        #expect(findings.count == 3)
    }

    /// Every way the summary is shown opens with the verdict; `brief` stops after the trace's health.
    @Test func theTextMarkdownAndPageOpenWithTheVerdict() throws {
        let s = try Self.ownWork().summarize()
        let text = SummaryReport.text(s, title: "t").split(separator: "\n").map(String.init)
        #expect(Array(text.prefix(4)) == [
            "t", "verdict:",
            "  1 stall (iterations busier than 16.0ms); worst 31.0ms in timer render on loop 1: its own work (31.0ms on CPU)",
            "  1 timer firing later than 1.00ms (worst 29.0ms): 1 while timer render ran",
        ])
        let brief = SummaryReport.text(s, title: "t", brief: true)
        #expect(!brief.contains("loop 1 (thread") && brief.contains("trace: ") && brief.hasPrefix("t\nverdict:"))
        #expect(SummaryReport.markdown(s).contains("**Verdict:**\n\n- 1 stall (iterations busier than 16.0ms); worst 31.0ms in timer render on loop 1: its own work (31.0ms on CPU)"))
        let json = try SummaryReport.json(s)
        #expect(json.contains("\"verdict\" : [\n    \"1 stall (iterations busier than 16.0ms)"), "\(json.suffix(800))")
        let page = HTMLReport.summary(s, context: .init(title: "t"))
        let verdict = try #require(page.range(of: "<h2>Verdict</h2>"))
        let health = try #require(page.range(of: "<h2>Trace health</h2>"))
        #expect(verdict.lowerBound < health.lowerBound)
        #expect(page.contains("worst 31.0ms in timer render on loop 1: its own work (31.0ms on CPU)"))
    }

    /// Every cause the summarizer can give a late firing reads as words in the verdict: only a callout "ran" (a
    /// cause named by a prefix check once read "loop not running ran").
    @Test func everyLateFiringCauseReadsAsWords() {
        #expect(SummaryVerdict.held(LoopTracker.asleep) == "the loop was asleep")
        #expect(SummaryVerdict.held(LoopTracker.notRunning) == "the loop was not running")
        #expect(SummaryVerdict.held(LoopTracker.betweenCallouts) == "the loop was between callouts")
        #expect(SummaryVerdict.held(LoopTracker.beforeTrace) == "the trace had not begun")
        #expect(SummaryVerdict.held(LoopTracker.causeNotAvailable) == "callouts the adapter cannot see ran")
        #expect(SummaryVerdict.held("timer jank-6") == "timer jank-6 ran")
    }
}


import Analysis
import RunLoopCore
import Testing
import TraceModel

/// A summary keeps at most ``TraceSummarizer/Limits`` loops, timers and wait threads apart, whatever ids a trace
/// holds: memory never grows with the values of a damaged trace. What it leaves out is counted as lost, so the
/// summary never reads as complete and `check` does not pass on it.
@Suite struct SummaryLimitsTests {
    @Test func loopsPastTheLimitAreLeftOutAndCountedAsLost() throws {
        var t = TraceBuilder()
        let extra = 3
        for id in 1...(TraceSummarizer.Limits.loops + extra) {
            t.add(Double(id) / 1000, .activity(.beforeSources, .init(loopID: UInt64(id), mode: "m", iteration: 1, depth: 1)))
        }
        let s = try t.summarize()
        #expect(s.loops.count == TraceSummarizer.Limits.loops)
        #expect(s.health.eventsLost == UInt64(extra))
        #expect(!s.health.complete)
        #expect(s.health.trace.damage.count == 1 && s.health.trace.damage[0].hasPrefix("\(extra) events left out"))
        #expect(Metric.named("trace.lost")?.value(in: s) == Double(extra))
    }

    @Test func timersPastTheLimitAreLeftOut() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        let extra = 2
        for id in 1...(TraceSummarizer.Limits.timers + extra) {
            t.timer(UInt64(id), scheduled: Double(id) / 1000, at: Double(id) / 1000, until: Double(id) / 1000)
        }
        let s = try t.summarize()
        #expect(s.timers.count == TraceSummarizer.Limits.timers)
        #expect(s.health.eventsLost == UInt64(extra))
    }

    @Test func waitThreadsPastTheLimitAreLeftOut() throws {
        var events: [TraceEvent] = []
        let extra = 4
        for thread in 1...Int32(TraceSummarizer.Limits.waitThreads + extra) {
            let ts = UInt64(thread) * 1000
            events.append(TraceEvent(timestamp: ts, threadID: thread, payload: .waitBegin(call: .epollWait, target: 3, setSize: 8, timeout: 1)))
            events.append(TraceEvent(timestamp: ts + 1, threadID: thread, payload: .waitEnd(ready: 0, error: 0)))
        }
        var reader = ArrayReader(events, health: TraceHealth())
        let s = try TraceSummarizer.summarize(&reader)
        #expect(s.health.eventsLost == UInt64(2 * extra))
        #expect(!s.health.complete)
    }

    /// Loss windows past ``TraceHealth/maxLossWindows`` merge into one over every stream; the counts stay exact.
    @Test func lossWindowsPastTheLimitMergeWithExactCounts() {
        var health = TraceHealth()
        for index in 0..<(TraceHealth.maxLossWindows + 10) {
            health.noteLossWindow(.init(stream: "tid 5", from: UInt64(index) * 10, to: UInt64(index) * 10 + 5, events: 2))
        }
        #expect(health.lossWindows.count == TraceHealth.maxLossWindows)
        let last = health.lossWindows[health.lossWindows.count - 1]
        #expect(last.stream == TraceHealth.mergedLossStream)
        #expect(last.events == 2 * 11)
        #expect(health.lossWindows.reduce(0) { $0 + $1.events } == UInt64(2 * (TraceHealth.maxLossWindows + 10)))
        #expect(health.damage.count == 1)
    }
}

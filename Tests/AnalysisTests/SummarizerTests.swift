import Analysis
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// A reader over events built in the test.
struct ArrayReader: TraceEventReader {
    var events: [TraceEvent]
    var health = TraceHealth()
    private var index = 0
    init(_ events: [TraceEvent], health: TraceHealth = TraceHealth()) {
        self.events = events
        self.health = health
    }
    mutating func next() throws(TraceReadError) -> TraceEvent? {
        guard index < events.count else { return nil }
        defer { index += 1 }
        health.eventsRead += 1
        return events[index]
    }
}

/// Builds a trace of one loop (id 1, thread 7) with times in milliseconds.
struct TraceBuilder {
    var events: [TraceEvent] = []
    var iteration: UInt64 = 0
    /// The mode and depth of the run the next activities belong to (nested runs change them).
    var mode = "kCFRunLoopDefaultMode"
    var depth: UInt32 = 1

    /// Milliseconds as nanoseconds, rounded: 10.2 ms is 10_200_000 ns, not the 10_199_999 a truncation gives.
    static func ns(_ ms: Double) -> UInt64 { UInt64((ms * 1_000_000).rounded()) }

    mutating func add(_ ms: Double, _ payload: TraceEvent.Payload) {
        events.append(TraceEvent(timestamp: TraceBuilder.ns(ms), threadID: 7, payload: payload))
    }
    mutating func activity(_ ms: Double, _ activity: Loop.Activity) {
        if activity == .beforeTimers { iteration += 1 }
        add(ms, .activity(activity, .init(loopID: 1, mode: mode, iteration: iteration, depth: depth)))
    }
    mutating func runBegin(_ ms: Double) { add(ms, .runBegin(loopID: 1, mode: mode, timeoutNanoseconds: 0, returnAfterSourceHandled: false)) }
    mutating func runEnd(_ ms: Double, _ result: Loop.RunResult = .timedOut) { add(ms, .runEnd(loopID: 1, mode: mode, result: result)) }
    mutating func sleep(from: Double, to: Double, reason: Loop.WakeReason = .timer) {
        activity(from, .beforeWaiting)
        add(to, .wakeUp(loopID: 1, reason: reason, slept: Self.ns(to - from)))
        activity(to, .afterWaiting)
    }
    mutating func timer(_ id: UInt64, scheduled: Double, at: Double, until: Double, tolerance: Double = 0, missed: UInt64 = 0) {
        add(at, .timerFireBegin(loopID: 1, timerID: id, scheduled: Self.ns(scheduled),
                                tolerance: Self.ns(tolerance), interval: 1_000_000, missed: missed))
        add(until, .timerFireEnd(loopID: 1, timerID: id))
    }
    mutating func block(_ id: UInt64, enqueued: Double, at: Double, until: Double) {
        add(at, .blockBegin(loopID: 1, blockID: id, enqueued: Self.ns(enqueued)))
        add(until, .blockEnd(loopID: 1, blockID: id))
    }
    mutating func source(_ id: UInt64, signaled: Double, at: Double, until: Double) {
        add(at, .sourcePerformBegin(loopID: 1, sourceID: id, kind: .custom, order: 0, signaled: Self.ns(signaled)))
        add(until, .sourcePerformEnd(loopID: 1, sourceID: id))
    }

    func summarize(health: TraceHealth = TraceHealth(), options: TraceSummarizer.Options = .init()) throws -> TraceSummary {
        var reader = ArrayReader(events, health: health)
        return try TraceSummarizer.summarize(&reader, options: options)
    }
}

@Suite struct SummarizerTests {
    @Test func wallBusySleepAndUtilization() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .entry)
        t.activity(0, .beforeTimers)
        t.activity(0, .beforeSources)
        t.sleep(from: 2, to: 10)
        t.timer(1, scheduled: 10, at: 10, until: 11)
        t.activity(11, .beforeTimers)
        t.activity(12, .exit)
        t.runEnd(12)
        let s = try t.summarize()
        let loop = try #require(s.loops.first)
        #expect(loop.wallNanoseconds == 12_000_000)
        #expect(loop.sleepNanoseconds == 8_000_000)
        #expect(loop.busyNanoseconds == 4_000_000)
        #expect(abs(loop.utilization - 1.0 / 3) < 1e-9)
        #expect(loop.iterations == 2)
        #expect(loop.busyPerIteration.count == 2)
        #expect(loop.results == ["timed_out": 1])
        #expect(loop.wakeReasons == ["timer": 1])
        #expect(loop.threadID == 7)
        #expect(s.overall.wallNanoseconds == 12_000_000)
    }

    @Test func aLateTimerIsAttributedToTheCalloutThatHeldTheLoop() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.add(0, .itemLabel(itemID: 9, kind: .source, label: "parse"))
        t.add(0, .itemLabel(itemID: 1, kind: .timer, label: "frame"))
        t.source(9, signaled: 0, at: 5, until: 30)          // holds the loop from 5 to 30 ms
        t.timer(1, scheduled: 10, at: 30, until: 31)         // due at 10, runs at 30: 20 ms late
        t.activity(31, .exit)
        t.runEnd(31)
        let s = try t.summarize()
        let timer = try #require(s.timers.first)
        #expect(timer.label == "frame")
        #expect(timer.lateness.max >= 19_900_000 && timer.lateness.max <= 20_100_000)
        #expect(timer.lateFirings == 1)
        #expect(timer.lateFiringCauses == ["source parse": 1])
        #expect(s.loops[0].lateFiringCauses == ["source parse": 1])
        #expect(s.loops[0].slowestCallouts.first?.label == "source parse")
    }

    @Test func aTimerLateBecauseTheLoopWokeLateBlamesTheWakeUp() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.sleep(from: 0, to: 12)
        t.timer(1, scheduled: 10, at: 12, until: 12.1)
        t.activity(13, .exit)
        t.runEnd(13)
        let s = try t.summarize()
        #expect(s.timers[0].lateFiringCauses == ["wake-up latency (the loop was asleep)": 1])
    }

    @Test func withinToleranceIsNotLate() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.sleep(from: 0, to: 14)
        t.timer(1, scheduled: 10, at: 14, until: 14.1, tolerance: 5)
        t.activity(15, .exit)
        t.runEnd(15)
        let s = try t.summarize()
        #expect(s.timers[0].lateFirings == 0)
        #expect(s.timers[0].withinTolerance == 1)
        #expect(s.timers[0].beyondTolerance.max == 0)
        #expect(s.overall.timerWithinTolerance == 1)
    }

    @Test func stallsNameTheirLongestCallout() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.add(0, .itemLabel(itemID: 5, kind: .timer, label: "render"))
        t.timer(5, scheduled: 0, at: 1, until: 21)        // 20 ms callout
        t.block(3, enqueued: 0, at: 21, until: 22)
        t.activity(22, .beforeTimers)                     // iteration 1 was busy 22 ms > 16 ms
        t.sleep(from: 22, to: 40)
        t.activity(41, .exit)
        t.runEnd(41)
        let s = try t.summarize()
        #expect(s.loops[0].stalls == 1)
        #expect(s.loops[0].worstStalls.first?.cause == "timer render")
        #expect(s.loops[0].worstStalls.first?.busyNanoseconds == 22_000_000)
        var options = TraceSummarizer.Options()
        options.stallThreshold = 30_000_000
        #expect(try t.summarize(options: options).loops[0].stalls == 0)
    }

    @Test func backlogAtWakeUpCountsWorkAlreadyPendingWhenTheLoopWoke() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.sleep(from: 0, to: 10, reason: .manual)
        t.block(1, enqueued: 2, at: 10, until: 10.1)
        t.block(2, enqueued: 5, at: 10.1, until: 10.2)
        t.block(3, enqueued: 9, at: 10.2, until: 10.3)
        t.block(4, enqueued: 10.25, at: 10.3, until: 10.4)   // queued after the wake-up: not backlog
        t.activity(10.5, .beforeTimers)
        t.sleep(from: 10.6, to: 20, reason: .timeout)
        t.activity(20, .exit)
        t.runEnd(20)
        let s = try t.summarize()
        #expect(s.loops[0].backlogAtWakeUp.max == 3)
        #expect(s.loops[0].backlogAtWakeUp.count == 2)
        #expect(s.loops[0].wakeLatency.block.count == 4)
        #expect(s.loops[0].wakeLatency.block.max >= 7_990_000 && s.loops[0].wakeLatency.block.max <= 8_010_000)
    }

    @Test func driftIsTheTrendOfLatenessOverTheRun() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        for second in 0..<10 {
            let at = Double(second) * 1000 + Double(second) * 0.5   // 0.5 ms later every second
            t.timer(1, scheduled: Double(second) * 1000, at: at, until: at + 0.01)
        }
        t.activity(10_000, .exit)
        t.runEnd(10_000)
        let s = try t.summarize()
        let drift = s.timers[0].driftNanosecondsPerSecond
        #expect(abs(drift - 500_000) < 5_000, "drift \(drift) ns/s")
    }

    @Test func lostEventsAreFlaggedOnTheFiguresTheyAffect() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.timer(1, scheduled: 0, at: 1, until: 2)
        t.activity(3, .exit)
        t.runEnd(3)
        var health = TraceHealth()
        health.eventsLost = 42
        health.lossWindows = [.init(stream: "tid 7", from: 1_000_000, to: 2_000_000, events: 42)]
        let s = try t.summarize(health: health)
        #expect(!s.health.complete)
        #expect(s.health.eventsLost == 42)
        #expect(s.loops[0].lostEventsAffecting == 42)
        #expect(s.timers[0].lostEventsAffecting == 42)
        health.lossWindows = [.init(stream: "tid 8", from: 1_000_000, to: 2_000_000, events: 42)]
        #expect(try t.summarize(health: health).loops[0].lostEventsAffecting == 0)
    }

    @Test func wakeLatencyPerKind() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.source(2, signaled: 1, at: 4, until: 5)
        t.add(6, .sourcePerformBegin(loopID: 1, sourceID: 3, kind: .port, order: 0, signaled: 5_500_000))
        t.add(7, .sourcePerformEnd(loopID: 1, sourceID: 3))
        t.activity(8, .exit)
        t.runEnd(8)
        let s = try t.summarize()
        #expect(s.loops[0].wakeLatency.source.count == 1)
        #expect(abs(Double(s.loops[0].wakeLatency.source.p50) - 3_000_000) < 5_000)
        #expect(abs(Double(s.loops[0].wakeLatency.port.p50) - 500_000) < 1_000)
        #expect(s.loops[0].calloutDurations["port"]?.count == 1)
        #expect(s.loops[0].calloutDurations["source"]?.count == 1)
    }
}

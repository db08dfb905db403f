@testable import Analysis
import Foundation
import RunLoopCore
import Testing
import TestSupport
import TraceModel
import TraceReading

/// What a timeline reader gets from `rlctl export --format chrome`, on a trace built in virtual time: arrows from
/// causes to callouts, counters, stalls and losses, all at exact times.
@Suite struct ChromeExportTests {
    /// Loop 1 on thread 7, a signalling thread 8:
    /// - iteration 1 (0–10 ms): timer 1 fires on time at 1 ms; source 5, signalled at 2 and 2.5 ms on thread 8,
    ///   performs at 3 ms; sleep 3.5–10 ms.
    /// - iteration 2 (10–50 ms): block 9 (queued at 9 ms) runs 10–40 ms, so timer 2, due at 12 ms, fires at 40.5 ms
    ///   (28.5 ms late); sleep 41–50 ms: 31 ms busy, a stall.
    /// - 3 events lost on thread 7 between 45 and 46 ms.
    static func trace() -> (events: [TraceEvent], health: TraceHealth) {
        var t = TraceBuilder()
        t.add(0, .loopCreate(loopID: 1, threadID: 7, name: "main"))
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.timer(1, scheduled: 1, at: 1, until: 1.1)
        t.events.append(TraceEvent(timestamp: 2_000_000, threadID: 8, payload: .sourceSignal(sourceID: 5)))
        t.events.append(TraceEvent(timestamp: 2_500_000, threadID: 8, payload: .sourceSignal(sourceID: 5)))
        t.source(5, signaled: 2, at: 3, until: 3.2)
        t.sleep(from: 3.5, to: 10)
        t.activity(10, .beforeTimers)
        t.block(9, enqueued: 9, at: 10, until: 40)
        t.timer(2, scheduled: 12, at: 40.5, until: 41)
        t.sleep(from: 41, to: 50)
        t.activity(50, .beforeTimers)
        t.activity(51, .exit)
        t.runEnd(51)
        var health = TraceHealth()
        health.eventsLost = 3
        health.lossWindows = [.init(stream: "tid 7", from: 45_000_000, to: 46_000_000, events: 3)]
        return (t.events, health)
    }

    static func export(_ events: [TraceEvent], health: TraceHealth) throws -> ChromeTraceFile {
        var reader = ArrayReader(events, health: health)
        let path = NSTemporaryDirectory() + "chrome-export-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try TraceExporter.export(&reader, format: .chrome, to: path)
        return try ChromeTraceFile(path: path)
    }

    @Test func theExportKeepsTheTraceEventRules() throws {
        let (events, health) = Self.trace()
        let file = try Self.export(events, health: health)
        #expect(file.violations() == [])
    }

    /// A signal whose perform is not in the trace (the trace ended first) is drawn with no arrow: an arrow must
    /// end on a slice.
    @Test func aSignalNeverPerformedHasNoArrow() throws {
        var (events, health) = Self.trace()
        events.append(TraceEvent(timestamp: 50_500_000, threadID: 8, payload: .sourceSignal(sourceID: 6)))
        let file = try Self.export(events, health: health)
        #expect(file.violations() == [])
        let signal = try #require(file.events("X", named: "signal 6").first)
        #expect(signal["bind_id"] == nil && file.ts(signal) == 50_500)
        #expect(file.flows.count == 3)
    }

    @Test func aSignalABlocksEnqueueAndALateTimersFireDateArrowToTheirCallouts() throws {
        let (events, health) = Self.trace()
        let file = try Self.export(events, health: health)
        let flows = file.flows.values.sorted { file.ts($0.out ?? [:]) ?? 0 < file.ts($1.out ?? [:]) ?? 0 }
        // The on-time timer and the repeated signal get none.
        try #require(flows.count == 3, "\(file.flows)")
        let signal = try #require(flows[0].out), perform = try #require(flows[0].in)
        #expect(signal["name"] as? String == "signal 5" && signal["tid"] as? Int == 8 && file.ts(signal) == 2000)
        #expect(perform["name"] as? String == "custom 5" && perform["tid"] as? Int == 7 && file.ts(perform) == 3000)
        // The block's enqueue: its thread is not in the trace, so the arrow starts on the loop's queue track.
        let queued = try #require(flows[1].out), block = try #require(flows[1].in)
        #expect(queued["ph"] as? String == "n" && queued["id"] as? String == "queued on loop 1" && file.ts(queued) == 9000)
        #expect(block["name"] as? String == "block" && block["tid"] as? Int == 7 && file.ts(block) == 10_000)
        let due = try #require(flows[2].out), firing = try #require(flows[2].in)
        #expect(due["name"] as? String == "timer 2 due" && due["tid"] as? Int == 7 && file.ts(due) == 12_000)
        #expect(firing["name"] as? String == "timer 2" && file.ts(firing) == 40_500)
    }

    @Test func countersShowEachTimersLatenessAndTheLoopsBacklog() throws {
        let (events, health) = Self.trace()
        let file = try Self.export(events, health: health)
        func series(_ name: String, _ key: String) -> [String] {
            file.events("C", named: name).map { "\(file.ts($0)!)=\((file.args($0)[key] as? NSNumber)?.doubleValue ?? -1)" }
        }
        #expect(series("lateness timer 1", "ms") == ["1000.0=0.0"])
        #expect(series("lateness timer 2", "ms") == ["40500.0=28.5"])
        // Items due and not yet called out, the mean number waiting in each millisecond: the source (2–3 ms), the
        // block (9–10) and timer 2 (12–40.5: half of its last millisecond); timer 1 fired the moment it was due
        // and never waited. Written where the level changes.
        #expect(series("backlog loop 1", "items") == [
            "0.0=0.0", "2000.0=1.0", "3000.0=0.0", "9000.0=1.0", "10000.0=0.0", "12000.0=1.0", "40000.0=0.5", "41000.0=0.0",
        ])
    }

    @Test func everyStallAndLossWindowHasItsOwnTrackAndTheThreadIsNamedAfterItsLoop() throws {
        let (events, health) = Self.trace()
        let file = try Self.export(events, health: health)
        let stalls = file.events("b").filter { $0["cat"] as? String == "stall" }
        try #require(stalls.count == 1)
        #expect(stalls[0]["id"] as? String == "stalls of loop 1" && file.ts(stalls[0]) == 10_000)
        #expect((stalls[0]["name"] as? String)?.hasPrefix("stall 31.000 ms: ") == true, "\(stalls[0])")
        #expect(file.args(stalls[0])["busy_ns"] as? Int == 31_000_000)
        let stallEnd = try #require(file.events("e").first { $0["cat"] as? String == "stall" })
        #expect(file.ts(stallEnd) == 41_000)
        #expect(file.events("i").contains { $0["cat"] as? String == "stall" && $0["tid"] as? Int == 7 && file.ts($0) == 10_000 },
                "a marker on the loop's thread")

        let losses = file.events("b").filter { $0["cat"] as? String == "loss" }
        try #require(losses.count == 1)
        #expect(losses[0]["name"] as? String == "3 events lost" && losses[0]["id"] as? String == "losses of tid 7")
        #expect(file.ts(losses[0]) == 45_000)
        #expect(file.events("e").contains { $0["cat"] as? String == "loss" && file.ts($0) == 46_000 })
        #expect(file.events("i").contains { $0["cat"] as? String == "loss" && $0["tid"] as? Int == 7 && file.ts($0) == 45_000
            && $0["name"] as? String == "3 events lost in the next 1.00ms" }, "a marker on the thread that lost them")

        let names = Dictionary(file.events("M", named: "thread_name").map { ($0["tid"] as? Int ?? -1, file.args($0)["name"] as? String ?? "") },
                               uniquingKeysWith: { $1 })
        #expect(names == [7: "loop 1 main", 8: "thread 8"])
    }

    @Test func aStallShorterThanTheThresholdIsNoStall() throws {
        let (events, health) = Self.trace()
        var reader = ArrayReader(events, health: health)
        let path = NSTemporaryDirectory() + "chrome-export-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = TraceSummarizer.Options()
        options.stallThreshold = 32_000_000
        try TraceExporter.export(&reader, format: .chrome, to: path, options: options)
        let file = try ChromeTraceFile(path: path)
        #expect(file.events("b").filter { $0["cat"] as? String == "stall" }.isEmpty)
    }

    /// The backlog's buckets widen on long traces without losing any item-time: 2 ms of waiting in 1 ms buckets,
    /// then an item that needs 4 ms buckets, each bucket's mean exact.
    @Test func theBacklogKeepsEveryItemsWaitAsItsBucketsWiden() {
        let ms: UInt64 = 1_000_000
        var series = BacklogSeries(origin: 0, limit: 4)
        series.add(due: ms / 2, start: 5 * ms / 2)
        #expect(series.width == ms)
        series.add(due: 3 * ms, start: 9 * ms)
        #expect(series.width == 4 * ms)
        let levels = series.levels(end: 9 * ms)
        #expect(levels.map(\.start) == [0, 4 * ms, 8 * ms])
        // 0–4 ms: 2 ms of the first item, 1 ms of the second; 4–8 ms: the second throughout; 8–9 ms: the second.
        #expect(levels.map(\.items) == [0.75, 1, 1])
    }

    /// A NIO stall begins at its longest I/O but lasts its iteration's busy time: two stalls close together must
    /// still not overlap on their track (a viewer would swap their ends).
    @Test func nioStallsOnOneTrackDoNotOverlap() throws {
        var e = AdaptedLoopSummaryTests.Events()
        e.add(0, .loopAdapted(loopID: 5, adapter: .nio, groupID: 1))
        e.io(5, channel: 1, .read, start: 2, end: 42)
        e.io(5, channel: 1, .read, start: 43, end: 103)
        e.tick(5, start: 103, end: 104, sleep: 102, tasks: 1)
        e.io(5, channel: 1, .read, start: 105, end: 205)
        e.tick(5, start: 205, end: 206, sleep: 101, tasks: 1)
        let file = try Self.export(e.events, health: TraceHealth())
        #expect(file.violations() == [])
        #expect(file.events("b").filter { $0["cat"] as? String == "stall" }.count == 2)
    }
}

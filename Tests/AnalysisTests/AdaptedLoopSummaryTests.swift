@testable import Analysis
import Foundation
import RunLoopCore
import Testing
import TestSupport
import TraceModel
import TraceReading
import Tracing

/// Loops traced by the adapters: SwiftNIO event loops (ticks, traced I/O, the lateness probe) and Foundation
/// RunLoops (the six activities alone), in the summary, its renderings and the budget metrics.
@Suite struct AdaptedLoopSummaryTests {
    static let ms: UInt64 = 1_000_000

    /// Events in milliseconds, in the order given (their timestamps ascend).
    struct Events {
        var events: [TraceEvent] = []
        mutating func add(_ at: Double, thread: Int32 = 9, _ payload: TraceEvent.Payload) {
            events.append(TraceEvent(timestamp: UInt64(at * 1e6), threadID: thread, payload: payload))
        }
        mutating func tick(_ loop: UInt64, start: UInt64, end: UInt64, sleep: UInt64, tasks: UInt64) {
            add(Double(end), .nioTick(loopID: loop, start: start * ms, end: end * ms, sleep: sleep * ms, tasks: tasks))
        }
        mutating func io(_ loop: UInt64, channel: UInt64, _ event: NIOIOEvent, start: UInt64, end: UInt64) {
            add(Double(end), .nioIO(loopID: loop, channelID: channel, event: event, start: start * ms, end: end * ms))
        }
        func summarize(stall: UInt64 = 16 * ms, health: TraceHealth = TraceHealth()) throws -> TraceSummary {
            var reader = ArrayReader(events, health: health)
            var options = TraceSummarizer.Options()
            options.stallThreshold = stall
            return try TraceSummarizer.summarize(&reader, options: options)
        }
    }

    /// Loop 5 (group 3, traced channel conn-1): a quick tick; a 200 ms read then a tick; a 20 ms task phase; two
    /// probe firings. Loop 6 (group 3) has no traced channel and sleeps 250 ms; loop 8 is alone in group 4.
    static func threeLoops() -> Events {
        var e = Events()
        e.add(0, .loopCreate(loopID: 5, threadID: 9, name: "NIO-ELT-0-#0"))
        e.add(0, .loopAdapted(loopID: 5, adapter: .nio, groupID: 3))
        e.add(0, thread: 10, .loopCreate(loopID: 6, threadID: 10, name: "NIO-ELT-0-#1"))
        e.add(0, thread: 10, .loopAdapted(loopID: 6, adapter: .nio, groupID: 3))
        e.add(0, thread: 11, .loopCreate(loopID: 8, threadID: 11, name: "NIO-ELT-1-#0"))
        e.add(0, thread: 11, .loopAdapted(loopID: 8, adapter: .nio, groupID: 4))
        e.add(0, .itemLabel(itemID: 77, kind: .channel, label: "conn-1"))
        e.add(7, thread: 11, .nioTick(loopID: 8, start: 5 * ms, end: 7 * ms, sleep: 5 * ms, tasks: 1))
        e.tick(5, start: 10, end: 11, sleep: 10, tasks: 2)
        e.io(5, channel: 77, .read, start: 20, end: 220)
        e.io(5, channel: 77, .readComplete, start: 220, end: 221)
        e.tick(5, start: 222, end: 223, sleep: 211, tasks: 1)
        e.add(230, .probeFire(loopID: 5, scheduled: 225 * ms, lateness: 5 * ms, cost: ms / 10))
        e.add(240, .probeFire(loopID: 5, scheduled: 239 * ms, lateness: 1 * ms, cost: ms / 10))
        e.tick(5, start: 233, end: 253, sleep: 10, tasks: 5)
        e.add(301, thread: 10, .nioTick(loopID: 6, start: 300 * ms, end: 301 * ms, sleep: 250 * ms, tasks: 1))
        return e
    }

    @Test func aBlockingReadIsAStallWithItsChannelAndIterationsAddIOToTheTickBeforeIt() throws {
        let s = try Self.threeLoops().summarize()
        let nio = try #require(s.nio)
        let loop = try #require(nio.loops.first { $0.loopID == 5 })
        #expect(loop.name == "NIO-ELT-0-#0" && loop.threadID == 9 && loop.groupID == 3)
        #expect(loop.ticks == 3 && loop.tasks == 8)
        #expect(loop.ioMeasured && loop.ioNanoseconds == 201 * Self.ms)
        // Iterations: 1 + 10 asleep; 201 I/O + 1 task phase + 10 asleep; 20 + 10 asleep.
        #expect(loop.busyNanoseconds == 223 * Self.ms)
        #expect(loop.sleepNanoseconds == 30 * Self.ms)
        #expect(abs(loop.utilization - 223.0 / 253.0) < 1e-12)
        #expect(abs(loop.ticksPerSecond - 3 / 0.253) < 1e-9)
        #expect(loop.stalls == 2)
        #expect(loop.worstStalls == [
            TraceSummary.Stall(loopID: 5, iteration: 2, atNanoseconds: 20 * Self.ms, busyNanoseconds: 202 * Self.ms, cause: "read on conn-1"),
            TraceSummary.Stall(loopID: 5, iteration: 3, atNanoseconds: 233 * Self.ms, busyNanoseconds: 20 * Self.ms, cause: "tasks (5)"),
        ])
        #expect(loop.busyPerIteration.count == 3 && loop.sleep.count == 3 && loop.tickDuration.count == 3)
        #expect(loop.tasksPerTick.max == 5 && loop.tasksPerTick.min == 1)
        // NIO loops have no runs: the RunLoopCore loops' list and totals do not hold them.
        #expect(s.loops.isEmpty && s.overall.iterations == 0)
    }

    @Test func withoutTracedChannelsIOIsNotMeasuredAndItsSleepIsNoStall() throws {
        let s = try Self.threeLoops().summarize()
        let loop = try #require(s.nio?.loops.first { $0.loopID == 6 })
        #expect(!loop.ioMeasured && loop.ioNanoseconds == nil && loop.ioDuration == nil)
        #expect(loop.busyNanoseconds == 1 * Self.ms && loop.sleepNanoseconds == 250 * Self.ms)
        #expect(loop.stalls == 0)
        #expect(loop.notAvailable.contains(TraceSummary.NotAvailable.nioIO))
        #expect(loop.probe == nil)
    }

    @Test func aLossInALoopsWindowMarksItsFigures() throws {
        var health = TraceHealth()
        health.eventsLost = 3
        health.lossWindows = [.init(stream: "tid 9", from: 100 * Self.ms, to: 110 * Self.ms, events: 3)]
        let s = try Self.threeLoops().summarize(health: health)
        let lossy = try #require(s.nio?.loops.first { $0.loopID == 5 })
        let clean = try #require(s.nio?.loops.first { $0.loopID == 6 })
        #expect(lossy.affectedByLoss && lossy.lostEventsAffecting == 3 && !clean.affectedByLoss)
        let text = SummaryReport.text(s)
        #expect(text.contains("NIO event loop 5 (thread 9, NIO-ELT-0-#0, group 3) (!) 3 lost events in its window"), "\(text)")
        #expect(text.contains("NIO event loop 6 (thread 10, NIO-ELT-0-#1, group 3)\n"), "\(text)")
    }

    /// A group shut down before its loop ticked, and a RunLoop attached to but never run: said, not zeros.
    @Test func loopsThatNeverRanAreSaidNotCountedAsIdle() throws {
        var e = Self.threeLoops()
        e.add(400, thread: 12, .loopAdapted(loopID: 13, adapter: .nio, groupID: 3))
        e.add(401, thread: 4, .loopAdapted(loopID: 2, adapter: .foundation, groupID: 0))
        let s = try e.summarize()
        let idle = try #require(s.nio?.loops.first { $0.loopID == 13 })
        #expect(idle.ticks == 0 && idle.threadID == 12)
        let group3 = try #require(s.nio?.groups.first { $0.groupID == 3 })
        #expect(group3.loopIDs == [5, 6, 13])
        #expect(abs(group3.utilizationMean - (223.0 / 253.0 + 1.0 / 251.0) / 2) < 1e-12)
        #expect(SummaryReport.text(s).contains("NIO event loop 13 (thread 12, group 3)\n  no tick in the trace"), "\(SummaryReport.text(s))")
        #expect(SummaryReport.markdown(s).contains("| 13 | 3 | no tick in the trace | – |"))
        #expect(s.health.firstEventNanoseconds == 0)
        let foundation = try #require(s.foundation)
        #expect(foundation.overall.runs == 0 && s.loops.first?.runs == 0)
        #expect(SummaryReport.text(s).contains("loop 2 (thread 4)\n  never ran in the trace (attached, but not run while it was recorded)"), "\(SummaryReport.text(s))")
        let check = try check("foundation.utilization.max <= 50%\n", s)
        #expect(check.verdicts.first?.noData == true && !check.passed)
    }

    @Test func groupsAndTheOverallAddTheirLoops() throws {
        let nio = try #require(try Self.threeLoops().summarize().nio)
        #expect(nio.groups.map(\.groupID) == [3, 4])   // in order of their first loop
        let group3 = try #require(nio.groups.first { $0.groupID == 3 })
        #expect(group3.loopIDs == [5, 6] && group3.ticks == 4 && group3.stalls == 2)
        #expect(abs(group3.utilizationMax - 223.0 / 253.0) < 1e-12 && group3.busiestLoopID == 5)
        #expect(abs(group3.utilizationMean - (223.0 / 253.0 + 1.0 / 251.0) / 2) < 1e-12)
        let group4 = try #require(nio.groups.first { $0.groupID == 4 })
        #expect(group4.loopIDs == [8] && group4.ticks == 1 && group4.stalls == 0)
        #expect(abs(group4.utilizationMax - 2.0 / 7.0) < 1e-12)
        let all = nio.overall
        #expect(all.groupID == nil && all.ticks == 5 && all.stalls == 2 && all.busiestLoopID == 5)
        #expect(abs(all.utilizationMean - (223.0 / 253.0 + 1.0 / 251.0 + 2.0 / 7.0) / 3) < 1e-12)
        #expect(abs(all.ticksPerSecond - (3 / 0.253 + 1 / 0.251 + 1 / 0.007)) < 1e-9)
        #expect(all.worstStalls.first?.cause == "read on conn-1")
    }

    @Test func theProbeIsLabelledAndShowsItsOwnCost() throws {
        let s = try Self.threeLoops().summarize()
        let probe = try #require(s.nio?.loops.first { $0.loopID == 5 }?.probe)
        #expect(probe.firings == 2 && abs(probe.firingsPerSecond - 2 / 0.253) < 1e-9)
        #expect(probe.lateness.count == 2 && probe.cost.count == 2)
        #expect(abs(Double(probe.lateness.max) - 5e6) <= 5e3 && abs(Double(probe.lateness.min) - 1e6) <= 1e3)
        #expect(abs(Double(probe.cost.max) - 1e5) <= 1e2)
        let text = SummaryReport.text(s)
        #expect(text.contains("lateness probe (its own task, not the program's): 2 firings"), "\(text)")
        #expect(text.contains("probe cost: n=2"), "\(text)")
        #expect(text.contains("task lateness: not available (no lateness probe in the trace)"), "\(text)")
    }

    @Test func textMarkdownAndJSONSayWhatIsNotAvailable() throws {
        let s = try Self.threeLoops().summarize()
        let text = SummaryReport.text(s)
        #expect(text.contains("NIO event loop 5 (thread 9, NIO-ELT-0-#0, group 3)"), "\(text)")
        #expect(text.contains("stalls (> threshold): 2 iterations busier than 16.0ms; worst: 202ms at +20.0ms in read on conn-1, 20.0ms at +233ms in tasks (5)"), "\(text)")
        #expect(text.contains("I/O of traced channels: 201ms in all"), "\(text)")
        #expect(text.contains("I/O handling: not measured, counted as sleep (add RunLoopNIO's channel handler)"), "\(text)")
        #expect(text.contains("not available: callout names (other than traced channels' I/O); per-task lateness"), "\(text)")
        #expect(text.contains("all NIO loops: 3 loop(s), 5 ticks"), "\(text)")

        let markdown = SummaryReport.markdown(s)
        #expect(markdown.contains("#### SwiftNIO event loops"), "\(markdown)")
        #expect(markdown.contains("| not measured (counted as sleep) |"), "\(markdown)")
        #expect(markdown.contains("| 202ms in read on conn-1 |"), "\(markdown)")
        #expect(markdown.contains("- not available: callout names"), "\(markdown)")
        // No RunLoopCore or Foundation loop: no run figures, rather than a 0% utilization of nothing.
        #expect(!markdown.contains("Utilization **") && !markdown.contains("| metric |"), "\(markdown)")

        let json = try SummaryReport.json(s)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let nio = try #require(object["nio"] as? [String: Any])
        #expect((nio["notAvailable"] as? [String]) == TraceSummary.NotAvailable.nio)
        let loops = try #require(nio["loops"] as? [[String: Any]])
        let unmeasured = try #require(loops.first { ($0["loopID"] as? Int) == 6 })
        #expect(unmeasured["ioNanoseconds"] == nil && unmeasured["ioMeasured"] as? Bool == false)
        #expect((unmeasured["notAvailable"] as? [String])?.last == TraceSummary.NotAvailable.nioIO)
        #expect(try JSONDecoder().decode(TraceSummary.self, from: Data(json.utf8)) == s)
    }

    /// A Foundation RunLoop seen by an observer: a run with a nested modal run inside its second iteration, which
    /// stays busy 24 ms outside the nested run's sleep.
    static func foundationLoop() -> Events {
        var e = Events()
        var iteration: [UInt32: UInt64] = [:]
        func activity(_ e: inout Events, _ at: Double, _ activity: LoopActivity, depth: UInt32 = 1, mode: String = "kCFRunLoopDefaultMode") {
            if activity == .beforeTimers { iteration[depth, default: 0] += 1 }
            if activity == .entry { iteration[depth] = 0 }
            e.add(at, thread: 4, .activity(activity, .init(loopID: 2, mode: mode, iteration: iteration[depth] ?? 0, depth: depth)))
        }
        e.add(0, thread: 4, .loopCreate(loopID: 2, threadID: 4, name: "main"))
        e.add(0, thread: 4, .loopAdapted(loopID: 2, adapter: .foundation, groupID: 0))
        activity(&e, 0, .entry)
        activity(&e, 0, .beforeTimers)
        activity(&e, 0, .beforeSources)
        activity(&e, 1, .beforeWaiting)
        activity(&e, 11, .afterWaiting)
        activity(&e, 11, .beforeTimers)
        activity(&e, 11, .beforeSources)
        activity(&e, 12, .entry, depth: 2, mode: "modal")
        activity(&e, 12, .beforeTimers, depth: 2, mode: "modal")
        activity(&e, 13, .beforeWaiting, depth: 2, mode: "modal")
        activity(&e, 18, .afterWaiting, depth: 2, mode: "modal")
        activity(&e, 18, .beforeTimers, depth: 2, mode: "modal")
        activity(&e, 19, .exit, depth: 2, mode: "modal")
        activity(&e, 40, .beforeWaiting)
        activity(&e, 50, .afterWaiting)
        activity(&e, 50, .beforeTimers)
        activity(&e, 51, .exit)
        return e
    }

    @Test func aFoundationLoopHasRunsIterationsSleepAndStallsFromItsActivities() throws {
        let s = try Self.foundationLoop().summarize()
        let loop = try #require(s.loops.first)
        #expect(loop.adapter == "foundation" && loop.name == "main")
        #expect(loop.runs == 2 && loop.nestedRuns == 1 && loop.results == ["exited": 2])
        #expect(loop.runsBegunBeforeTrace == 0 && loop.cutOffAtNanoseconds == nil)
        #expect(loop.iterations == 5)
        #expect(loop.wallNanoseconds == 51 * Self.ms)
        #expect(loop.sleepNanoseconds == 25 * Self.ms && loop.busyNanoseconds == 26 * Self.ms)
        #expect(abs(loop.utilization - 26.0 / 51.0) < 1e-12)
        #expect(loop.sleep.count == 3 && loop.busyPerIteration.count == 5)
        #expect(loop.stalls == 1)
        #expect(loop.worstStalls == [TraceSummary.Stall(loopID: 2, iteration: 2, atNanoseconds: 11 * Self.ms,
                                                        busyNanoseconds: 24 * Self.ms, cause: LoopTracker.causeNotAvailable)])
        #expect(loop.wakeReasons.isEmpty && loop.calloutDurations.isEmpty)
        #expect(loop.notAvailable == TraceSummary.NotAvailable.foundation)
        #expect(s.health.runsCutOff == 0 && s.health.runsBegunBeforeTrace == 0 && !s.health.runsIncomplete)
        let foundation = try #require(s.foundation)
        #expect(foundation.loopIDs == [2] && foundation.overall.stalls == 1 && foundation.busiestLoopID == 2)
        #expect(abs(foundation.utilizationMax - 26.0 / 51.0) < 1e-12)
        #expect(s.nio == nil)

        let text = SummaryReport.text(s)
        #expect(text.contains("runs 2 (calls of RunLoop.run, entry to exit, 1 nested in a callout): exited 2; iterations 5"), "\(text)")
        #expect(text.contains("traced by the foundation adapter; not available: callout-level figures"), "\(text)")
        let markdown = SummaryReport.markdown(s)
        #expect(markdown.contains("#### Foundation RunLoops") && markdown.contains("- not available: callout-level figures"), "\(markdown)")
        let json = try SummaryReport.json(s)
        #expect(json.contains("\"notAvailable\" : ["), "\(json)")
        // What the observer cannot see is left out of the JSON rather than written as 0 or empty figures.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let loopJSON = try #require((object["loops"] as? [[String: Any]])?.first)
        for key in ["timerFirings", "timerLateness", "wakeLatency", "wakeReasons", "calloutDurations", "slowestCallouts", "backlogAtWakeUp"] {
            #expect(loopJSON[key] == nil, "\(key) in \(loopJSON.keys.sorted())")
        }
        #expect(loopJSON["iterations"] as? Int == 5 && loopJSON["stalls"] as? Int == 1)
        #expect(try JSONDecoder().decode(TraceSummary.self, from: Data(json.utf8)) == s)
    }

    @Test func theChromeExportHasAUtilizationCounterPerNIOLoop() throws {
        let path = temporaryPath("nio-chrome.json")
        defer { try? FileManager.default.removeItem(atPath: path) }
        var reader = ArrayReader(Self.threeLoops().events)
        _ = try TraceExporter.export(&reader, format: .chrome, to: path)
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        #expect(try ChromeTraceFile(path: path).violations() == [])
        let events = try #require(object?["traceEvents"] as? [[String: Any]])
        let counters = events.filter { ($0["ph"] as? String) == "C" }.map {
            "\($0["name"] ?? "") \(($0["args"] as? [String: Any])?["busy"] ?? "")"
        }
        // Loop 5's first 100 ms window closes at 223 ms: 20 ms asleep (its I/O moved to busy); loop 6's at 301 ms.
        #expect(counters == ["utilization loop 5 0.91", "utilization loop 6 0.004"])
    }

    private func check(_ budget: String, _ summary: TraceSummary) throws -> BudgetCheck {
        BudgetCheck(budget: try Budget(text: budget, file: "test.budget"), report: RunReport(workload: "w", tracer: "embedded", repetitions: [summary]))
    }

    @Test func budgetsOnTheNIOAndFoundationMetricsPassAndFail() throws {
        let nio = try Self.threeLoops().summarize()
        let result = try check("nio.stalls.count == 0\nnio.utilization.max <= 90%\nnio.ticks_per_second >= 100\nnio.tasks_per_tick.max <= 5\nnio.probe.lateness.max <= 1ms\n", nio)
        #expect(result.verdicts.map(\.passed) == [false, true, true, true, false])
        #expect(result.verdicts[0].value == 2 && !result.verdicts.contains(where: \.noData))
        #expect(result.failed == 2 && !result.passed)

        let foundation = try Self.foundationLoop().summarize()
        let passing = try check("foundation.stalls.count <= 1\nfoundation.utilization.max <= 60%\nfoundation.runs == 2\n", foundation)
        #expect(passing.passed, "\(passing.verdicts)")
        let failing = try check("foundation.stalls.count == 0\n", foundation)
        #expect(!failing.passed && failing.failed == 1)
    }

    @Test func aNIOBudgetOnATraceWithoutNIOLoopsFailsSayingSo() throws {
        let s = try Self.foundationLoop().summarize()
        let result = try check("nio.stalls.count == 0\nnio.utilization.max <= 90%\n", s)
        #expect(!result.passed && result.incompleteForbidden && result.verdicts.allSatisfy(\.noData))
        #expect(result.incompleteness == ["no data for nio.stalls.count (no NIO loop in the trace), nio.utilization.max (no NIO loop in the trace)"])
        #expect(result.render(.text).contains("no data: no NIO loop in the trace"), "\(result.render(.text))")
        // stalls.count is the runs' figure: on NIO loops alone it has nothing to count, and must not pass as 0.
        let runStalls = try check("stalls.count == 0\n", try Self.threeLoops().summarize())
        #expect(!runStalls.passed && runStalls.verdicts.first?.noData == true)
        #expect(runStalls.incompleteness == ["no data for stalls.count (no RunLoopCore, Foundation or wait loop in the trace; NIO loops have nio.stalls.*)"])
        let runs = try check("loop.iterations >= 0\nloop.runs >= 0\n", try Self.threeLoops().summarize())
        #expect(!runs.passed && runs.verdicts.count == 2 && runs.verdicts.allSatisfy(\.noData), "\(runs.render(.text))")
        #expect(runs.verdicts.first?.noDataReason == "no RunLoopCore or Foundation loop in the trace; NIO loops have nio.*, wait loops wait.*")
        let noFoundation = try check("foundation.busy.p99 <= 10ms\n", try Self.threeLoops().summarize())
        #expect(!noFoundation.passed && noFoundation.verdicts.first?.noDataReason == "no Foundation loop in the trace")
    }

    @Test func everyNewMetricIsListedWithAMeaning() {
        for name in ["nio.stalls.count", "nio.utilization.max", "nio.utilization.mean", "nio.tick.p99", "nio.busy.p99",
                     "nio.sleep.p50", "nio.tasks_per_tick.mean", "nio.ticks_per_second", "nio.probe.lateness.p99",
                     "foundation.stalls.count", "foundation.busy.p99", "foundation.utilization.max"] {
            let metric = Metric.named(name)
            #expect(metric != nil && !(metric?.help.isEmpty ?? true), "\(name)")
        }
    }

    /// The recorder and its reader agree with the summary: NIO events written through the embedded recorder's sink.
    @Test func anEmbeddedTraceOfANIOLoopSummarizesAsTheEventsSay() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let folder = temporaryPath("nio-embedded")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let recording = try Recording.start(.embedded(), into: folder)
        let sink = try #require(LoopEventSink.current)
        let loopID = LoopEventSink.makeID(), channelID = LoopEventSink.makeID()
        let ms = Self.ms
        sink.loopCreated(loopID: loopID, threadID: 42, name: "NIO-ELT-9-#0")
        sink.loopAdapted(loopID: loopID, adapter: .nio, groupID: 12)
        sink.itemLabeled(id: channelID, kind: .channel, label: "conn-9")
        sink.nioTick(loopID: loopID, start: 10 * ms, end: 11 * ms, sleep: 10 * ms, tasks: 2)
        sink.nioIO(loopID: loopID, channelID: channelID, event: .read, start: 20 * ms, end: 220 * ms)
        sink.nioTick(loopID: loopID, start: 222 * ms, end: 223 * ms, sleep: 211 * ms, tasks: 1)
        sink.probeFire(loopID: loopID, scheduled: 225 * ms, lateness: 5 * ms, cost: ms / 10)
        _ = try recording.stop()
        let s = try TraceSummarizer.summarize(traceAt: folder, options: .init())
        #expect(s.health.complete)
        let loop = try #require(s.nio?.loops.first { $0.loopID == loopID })
        #expect(loop.name == "NIO-ELT-9-#0" && loop.threadID == 42 && loop.groupID == 12)
        #expect(loop.ticks == 2 && loop.tasks == 3 && loop.ioNanoseconds == 200 * ms)
        #expect(loop.busyNanoseconds == 202 * ms && loop.sleepNanoseconds == 21 * ms)
        #expect(loop.worstStalls.map(\.cause) == ["read on conn-9"] && loop.worstStalls.first?.busyNanoseconds == 201 * ms)
        #expect(loop.probe?.firings == 1)
    }
}

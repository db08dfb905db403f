@testable import Analysis
import Foundation
import Testing
import TestSupport
import TraceModel

/// The summary's `allLoops`: every loop of every kind in one list, with `kind` and the figures all kinds have under
/// one name, so that a script need not know where each kind keeps its loops; what a kind cannot show is said once,
/// in `allLoopsNotAvailable`.
@Suite struct AllLoopsTests {
    /// The summary as `summarize --format json` writes it, parsed as a script would.
    static func json(_ summary: TraceSummary) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(SummaryReport.json(summary).utf8)) as? [String: Any])
    }

    static func allLoops(_ document: [String: Any]) throws -> [[String: Any]] {
        try #require(document["allLoops"] as? [[String: Any]], "no allLoops")
    }

    /// Keys every loop has, with a figure or null (the not-available ones null, and said why once); `kernel` is
    /// there with a kernel view only, as everywhere in the summary.
    static let shared = ["kind", "detailsAt", "processID", "process", "threadID", "loopID", "name", "durationNanoseconds", "iterations",
                         "utilization", "busyNanoseconds", "stalls", "worstStallNanoseconds", "wakeLatencyP99Nanoseconds",
                         "lostEventsAffecting"]

    @Test func aRunLoopCoreLoopIsListedWithItsSharedFigures() throws {
        let summary = try OneModelTests.oneTimer().summarize()
        let document = try Self.json(summary)
        let loops = try Self.allLoops(document)
        #expect(loops.count == 1)
        let loop = try #require(loops.first)
        for field in Self.shared { #expect(loop[field] != nil, "\(field) missing: \(loop)") }
        #expect(loop["kind"] as? String == "RunLoopCore")
        #expect(loop["detailsAt"] as? String == "loops[0]")
        let own = try #require(summary.loops.first)
        #expect(loop["iterations"] as? Int == Int(own.iterations))
        #expect(loop["durationNanoseconds"] as? Int == Int(own.wallNanoseconds))
        #expect(loop["wakeLatencyP99Nanoseconds"] as? Int == Int(own.wakeLatency.timer.p99), "the timers' lateness is its wake-up latency")
        let reasons = try #require(document["allLoopsNotAvailable"] as? [String: [String: String]])
        #expect(reasons["processID"] == ["RunLoopCore": TraceSummary.processIDNotInTrace], "these events carry no process id: \(reasons)")
        #expect(reasons["wakeLatencyP99Nanoseconds"] == nil, "a RunLoopCore loop has wake-up latencies: \(reasons)")
    }

    @Test func nioLoopsAreInTheSameListWithTheirTicksAsIterations() throws {
        let summary = try AdaptedLoopSummaryTests.threeLoops().summarize()
        let document = try Self.json(summary)
        let loops = try Self.allLoops(document)
        let nio = try #require(summary.nio)
        #expect(loops.count == nio.loops.count)
        for (index, loop) in loops.enumerated() {
            for field in Self.shared { #expect(loop[field] != nil, "\(field) missing: \(loop)") }
            #expect(loop["kind"] as? String == "NIO")
            #expect(loop["detailsAt"] as? String == "nio.loops[\(index)]")
            #expect(loop["iterations"] as? Int == Int(nio.loops[index].ticks))
            #expect(loop["stalls"] as? Int == Int(nio.loops[index].stalls))
            #expect(loop["wakeLatencyP99Nanoseconds"] is NSNull)
        }
        #expect(loops.contains { ($0["worstStallNanoseconds"] as? Int ?? 0) >= 200_000_000 }, "the 200 ms read is a stall")
        // Said once for the kind, not on each of its three loops.
        let reasons = try #require(document["allLoopsNotAvailable"] as? [String: [String: String]])
        #expect(reasons["wakeLatencyP99Nanoseconds"] == ["NIO": TraceSummary.fieldsNotAvailable[.nio]!["wakeLatencyP99Nanoseconds"]!])
        let text = try SummaryReport.json(summary)
        #expect(text.components(separatedBy: "NIO does not report per-task lateness (see the lateness probe").count == 2, "the reason is written once")
    }

    @Test func waitLoopsAreInTheSameListWithTheirProcess() throws {
        let summary = try WaitLoopSummaryTests.nodeLoop().summarize()
        let document = try Self.json(summary)
        let loops = try Self.allLoops(document)
        let waits = try #require(summary.waits)
        #expect(loops.count == waits.loops.count)
        let loop = try #require(loops.first)
        for field in Self.shared { #expect(loop[field] != nil, "\(field) missing: \(loop)") }
        #expect(loop["kind"] as? String == "wait")
        #expect(loop["detailsAt"] as? String == "waits.loops[0]")
        #expect(loop["processID"] as? Int == 4242 && loop["process"] as? String == "node")
        #expect(loop["iterations"] as? Int == Int(waits.loops[0].iterations))
        #expect(loop["worstStallNanoseconds"] as? Int == 30_000_000)
        let reasons = try #require(document["allLoopsNotAvailable"] as? [String: [String: String]])
        #expect(reasons["loopID"]?.keys.sorted() == ["wait"], "\(reasons)")
        #expect(reasons["processID"] == nil, "a wait loop knows its process: \(reasons)")
    }

    @Test func aFoundationLoopIsListedAsFoundationWithoutWakeUpLatencies() throws {
        let summary = try AdaptedLoopSummaryTests.foundationLoop().summarize()
        let loops = try Self.allLoops(try Self.json(summary))
        let loop = try #require(loops.first)
        #expect(loops.count == 1 && loop["kind"] as? String == "Foundation", "\(loops)")
        #expect(loop["wakeLatencyP99Nanoseconds"] is NSNull)
        #expect(try #require(Self.json(summary)["allLoopsNotAvailable"] as? [String: [String: String]])["wakeLatencyP99Nanoseconds"]?["Foundation"] != nil)
    }

    /// A summary written before `allLoops` existed still loads, and is the same summary without it.
    @Test func aSummaryWithoutAllLoopsStillLoads() throws {
        let summary = try AdaptedLoopSummaryTests.threeLoops().summarize()
        var document = try Self.json(summary)
        document["allLoops"] = nil
        document["allLoopsNotAvailable"] = nil
        document["verdict"] = nil   // added later still, in the JSON alone
        let old = try JSONDecoder().decode(TraceSummary.self, from: JSONSerialization.data(withJSONObject: document))
        var expected = summary
        expected.allLoops = nil
        expected.allLoopsNotAvailable = nil
        expected.verdict = nil
        #expect(old == expected)
        #expect(old.loopsOfEveryKind == summary.allLoops, "the list can be made again from the old shape")
    }
}

@testable import Analysis
import Foundation
import RunLoopCore
import Testing
import TestSupport
import TraceReading

/// Main-queue servicings (rule 38) in the analyses: a callout kind of their own (`main_queue`) with its metrics,
/// a wake reason, and a slice in the exports.
@Suite struct MainQueueSummaryTests {
    /// Two servicings of 3 ms and 1 ms, each after a sleep that main-queue work ended.
    static func twoServicings() -> TraceBuilder {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .entry)
        t.activity(0, .beforeTimers)
        t.activity(0, .beforeSources)
        t.sleep(from: 0, to: 10, reason: .mainQueue)
        t.add(10, .mainQueueBegin(loopID: 1))
        t.add(13, .mainQueueEnd(loopID: 1))
        t.activity(13, .beforeTimers)
        t.activity(13, .beforeSources)
        t.sleep(from: 13, to: 20, reason: .mainQueue)
        t.add(20, .mainQueueBegin(loopID: 1))
        t.add(21, .mainQueueEnd(loopID: 1))
        t.activity(21, .exit)
        t.runEnd(21, .stopped)
        return t
    }

    @Test func servicingsAreCalloutsOfTheirOwnKindAndAWakeReason() throws {
        let s = try Self.twoServicings().summarize()
        let loop = try #require(s.loops.first)
        let durations = loop.calloutDuration(of: .mainQueue)
        #expect(durations.count == 2)
        // Within the HDR histogram's 3 significant digits.
        #expect(abs(Double(durations.min) - 1e6) <= 1e3 && abs(Double(durations.max) - 3e6) <= 3e3, "\(durations)")
        #expect(loop.wakeReasons == ["main_queue": 2])
        #expect(loop.slowestCallouts.map(\.label) == ["main_queue", "main_queue"])
        #expect(loop.slowestCallouts.map(\.kind) == ["main_queue", "main_queue"])


        let metric = try #require(Metric.named("callout.main_queue.max"))
        #expect(metric.isMeasured(in: s))
        #expect(metric.value(in: s) == Double(durations.max))
        let text = SummaryReport.text(s)
        #expect(text.contains("woken by: main_queue 2"), "\(text)")
        #expect(text.contains("main_queue"), "\(text)")
    }

    @Test func exportsShowServicingsAsSlicesAndRows() throws {
        let events = Self.twoServicings().events
        let path = NSTemporaryDirectory() + "main-queue-export-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer {
            for suffix in [".json", ".csv"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        var reader = ArrayReader(events)
        _ = try TraceExporter.export(&reader, format: .chrome, to: path + ".json")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path + ".json"))) as? [String: Any]
        #expect(try ChromeTraceFile(path: path + ".json").violations() == [])
        let chrome = try #require(object?["traceEvents"] as? [[String: Any]])
        let slices = chrome.filter { ($0["cat"] as? String) == "callout" }.map { "\($0["ph"] ?? "") \($0["name"] ?? "")" }
        #expect(slices == ["B run kCFRunLoopDefaultMode", "B main queue", "E ", "B main queue", "E ", "E run"])

        var csvReader = ArrayReader(events)
        _ = try TraceExporter.export(&csvReader, format: .csv, to: path + ".csv")
        let rows = try String(contentsOfFile: path + ".csv", encoding: .utf8).split(separator: "\n")
            .filter { $0.contains(",main_queue_") }.map { $0.split(separator: ",", omittingEmptySubsequences: false).prefix(4).joined(separator: ",") }
        #expect(rows == ["10000000,7,main_queue_begin,1", "13000000,7,main_queue_end,1",
                         "20000000,7,main_queue_begin,1", "21000000,7,main_queue_end,1"])
    }
}

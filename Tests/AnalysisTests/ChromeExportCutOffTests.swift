import Analysis
import Foundation
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// The Chrome export of a trace whose ends or begins are missing still nests: viewers see every slice closed.
@Suite struct ChromeExportCutOffTests {
    @Test func slicesOfACutOffTraceAreBalanced() throws {
        var t = TraceBuilder()
        // A flight-recorder ring: the first events end a callout and a run whose begins were overwritten.
        t.add(1, .timerFireEnd(loopID: 1, timerID: 5))
        t.activity(1.5, .exit)
        t.runEnd(2)
        // Then a run that a kill cuts off inside a timer callout.
        t.runBegin(3)
        t.activity(3, .beforeTimers)
        t.add(4, .timerFireBegin(loopID: 1, timerID: 6, scheduled: 4_000_000, tolerance: 0, interval: 0, missed: 0))
        t.activity(4.5, .beforeTimers)   // the last event
        var reader = ArrayReader(t.events)
        let path = NSTemporaryDirectory() + "chrome-cut-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try TraceExporter.export(&reader, format: .chrome, to: path)

        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        let events = try #require(object?["traceEvents"] as? [[String: Any]])
        var depth = 0
        for event in events {
            switch event["ph"] as? String {
            case "B": depth += 1
            case "E":
                depth -= 1
                #expect(depth >= 0, "an end with no begin: \(event)")
            default: break
            }
        }
        #expect(depth == 0, "every slice closed")
        let cutOff = events.filter { ($0["args"] as? [String: Any])?["did_not_end"] != nil }
        #expect(cutOff.count == 2, "the run and the timer callout did not end")
        #expect(cutOff.allSatisfy { $0["ts"] as? Double == 3500 || "\($0["ts"]!)" == "3500.000" }, "closed at the thread's last event: \(cutOff)")
    }
}

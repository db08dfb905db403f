import Analysis
import Foundation
import Glibc
import RunLoopCore
import Testing
import TestSupport
import TraceModel
import TraceReading

/// Actor jobs (job_begin/job_end, rule 39) in the summary, the metrics, the reports and the exports.
@Suite struct JobSummaryTests {
    /// One iteration woken by two jobs (3 ms and 1 ms) and a block between them.
    static func trace() -> TraceBuilder {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .entry)
        t.activity(0, .beforeTimers)
        t.activity(0, .beforeSources)
        t.sleep(from: 1, to: 10, reason: .manual)
        t.add(10, .jobBegin(loopID: 1, jobID: 40, enqueued: 9_000_000, priority: 25))
        t.add(13, .jobEnd(loopID: 1, jobID: 40))
        t.block(41, enqueued: 9, at: 13, until: 14)
        t.add(14, .jobBegin(loopID: 1, jobID: 42, enqueued: 9_500_000, priority: 21))
        t.add(15, .jobEnd(loopID: 1, jobID: 42))
        t.activity(15, .exit)
        t.runEnd(15)
        return t
    }

    @Test func jobsAreCalloutsOfTheirOwnKind() throws {
        let s = try Self.trace().summarize()
        let loop = try #require(s.loops.first)
        let jobs = loop.calloutDuration(of: .job)
        #expect(jobs.count == 2)
        #expect(abs(Double(jobs.max) - 3_000_000) < 3_000, "the histogram's precision")
        #expect(loop.calloutDuration(of: .block).count == 1)
        #expect(loop.busyNanoseconds == 1_000_000 + 5_000_000, "busy: before the sleep, and the callouts after it")
        #expect(Metric.named("callout.job.max")?.value(in: s) == Double(jobs.max))
        #expect(Metric.named("callout.job.p50")?.value(in: s) == Double(jobs.p50))
        #expect(loop.slowestCallouts.first?.label == "job")
        // Enqueue → run: 1 ms and 4.5 ms.
        let latency = try #require(loop.wakeLatency.job)
        #expect(latency.count == 2 && abs(Double(latency.max) - 4_500_000) < 5_000)
        #expect(Metric.named("wake.job.max")?.value(in: s) == Double(s.overall.wakeLatency.jobOrEmpty.max))
        #expect(SummaryReport.text(s).contains("job enqueue → run"))
        #expect(SummaryReport.markdown(s).contains("| job enqueue → run |"))
        #expect(SummaryReport.text(s).contains("  job"))
        #expect(try SummaryReport.json(s).contains("\"job\""))
    }

    @Test func aSummaryWithoutJobsEncodesAndDecodesAsBefore() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.block(1, enqueued: 0, at: 1, until: 2)
        t.runEnd(3)
        let s = try t.summarize()
        #expect(s.overall.wakeLatency.job == nil)
        let json = try SummaryReport.json(s)
        #expect(!json.contains("\"job\""), "no job key when no job ran: older readers see the same JSON")
        let decoded = try JSONDecoder().decode(TraceSummary.self, from: Data(json.utf8))
        #expect(decoded.overall.wakeLatency.job == nil)
    }

    @Test func exportsShowJobsAsSlicesAndRows() throws {
        let events = Self.trace().events
        let base = NSTemporaryDirectory() + "jobs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { for ext in ["json", "csv", "jsonl"] { try? FileManager.default.removeItem(atPath: "\(base).\(ext)") } }

        var reader = ArrayReader(events)
        try TraceExporter.export(&reader, format: .chrome, to: base + ".json")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: base + ".json"))) as? [String: Any]
        #expect(try ChromeTraceFile(path: base + ".json").violations() == [])
        let chrome = try #require(object?["traceEvents"] as? [[String: Any]])
        let jobSlices = chrome.filter { $0["name"] as? String == "job" && $0["ph"] as? String == "B" }
        #expect(jobSlices.count == 2)
        #expect((jobSlices.first?["args"] as? [String: Any])?["priority"] as? Int == 25)
        #expect((jobSlices.first?["args"] as? [String: Any])?["queued_ns"] as? Int == 1_000_000)
        #expect(chrome.filter { $0["ph"] as? String == "B" }.count == chrome.filter { $0["ph"] as? String == "E" }.count)

        reader = ArrayReader(events)
        try TraceExporter.export(&reader, format: .csv, to: base + ".csv")
        let csv = try String(contentsOfFile: base + ".csv", encoding: .utf8).split(separator: "\n")
        let header = csv[0].split(separator: ",", omittingEmptySubsequences: false)
        let priority = try #require(header.firstIndex(of: "priority"))
        let job = try #require(csv.first { $0.contains(",job_begin,") }).split(separator: ",", omittingEmptySubsequences: false)
        #expect(job.count == header.count)
        #expect(job[priority] == "25")
        #expect(job[header.firstIndex(of: "enqueued_ns")!] == "9000000")

        reader = ArrayReader(events)
        try TraceExporter.export(&reader, format: .jsonl, to: base + ".jsonl")
        let lines = try String(contentsOfFile: base + ".jsonl", encoding: .utf8).split(separator: "\n")
        let ends = lines.filter { $0.contains("\"event\":\"job_end\"") }
        #expect(ends.count == 2 && ends.allSatisfy { $0.contains("\"loop_id\":1") } && ends.last?.contains("\"id\":42") == true)
        #expect(lines.contains { $0.contains("\"event\":\"job_begin\"") && $0.contains("\"priority\":21") })
    }
}

@testable import Analysis
import Foundation
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// One model per number: a figure is computed once and reads the same wherever a report shows it.
@Suite struct OneModelTests {
    /// One timer on one loop whose 200 firings are 1.000…200.999 ms late (spread so that a coarser histogram
    /// rounds p50 and p99 differently from the HDR histogram).
    static func oneTimer() -> TraceBuilder {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        for firing in 0..<200 {
            let scheduled = Double(firing) * 250
            let late = Double(firing + 1) + Double(firing) * 0.004_99
            t.timer(1, scheduled: scheduled, at: scheduled + late, until: scheduled + late + 0.01)
        }
        t.activity(50_500, .exit)
        t.runEnd(50_500)
        return t
    }

    @Test func aTimersPercentilesAreTheSameInTheTimerAndLoopSections() throws {
        let s = try Self.oneTimer().summarize()
        let timer = try #require(s.timers.first)
        let loop = try #require(s.loops.first)
        #expect(timer.lateness.count == 200)
        #expect(timer.lateness.p50 == loop.timerLateness.p50, "timer p50 \(timer.lateness.p50), loop \(loop.timerLateness.p50)")
        #expect(timer.lateness.p99 == loop.timerLateness.p99, "timer p99 \(timer.lateness.p99), loop \(loop.timerLateness.p99)")
        #expect(timer.lateness.p90 == s.overall.timerLateness.p90)
        #expect(timer.lateness.max == s.overall.timerLateness.max)
        #expect(timer.beyondTolerance.p99 == loop.timerBeyondTolerance.p99)
        // The HDR histogram's 3 significant digits, not 6 %: the 100th of 200 values is 100.494 ms late.
        #expect(abs(Double(timer.lateness.p50) - 100_494_010) <= 100_494_010 / 1000)
    }

    @Test func timerWakeUpLatencyIsTheTimerLatenessAndBothMetricNamesReadIt() throws {
        let s = try Self.oneTimer().summarize()
        #expect(s.overall.wakeLatency.timer == s.overall.timerLateness)
        for statistic in Metric.statistics {
            let canonical = try #require(Metric.named("timer.lateness.\(statistic)"))
            let alias = try #require(Metric.named("wake.timer.\(statistic)"))
            #expect(alias.value(in: s) == canonical.value(in: s))
            #expect(alias.isMeasured(in: s) && canonical.isMeasured(in: s))
            #expect(alias.help.hasPrefix("alias of timer.lateness"))
        }
    }

    @Test func everyCalloutKindHasItsMetrics() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.block(1, enqueued: 0, at: 1, until: 4)
        t.activity(5, .exit)
        t.runEnd(5)
        let s = try t.summarize()
        for kind in CalloutKind.allCases {
            let metric = try #require(Metric.named("callout.\(kind.name).max"), "\(kind)")
            #expect(metric.isMeasured(in: s) == (kind == .block), "\(kind)")
        }
        #expect(Metric.named("callout.block.max")?.value(in: s) == Double(s.overall.calloutDuration(of: .block).max))
        #expect(s.overall.calloutDuration(of: .block).count == 1)
    }

    /// Per-timer statistics merge into their loop's totals: the loop counts what its timers count.
    @Test func aLoopsTimerFiguresAreItsTimersMerged() throws {
        var t = TraceBuilder()
        t.add(0, .itemLabel(itemID: 9, kind: .source, label: "parse"))
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.timer(1, scheduled: 0, at: 0.5, until: 0.6, tolerance: 1, missed: 2)   // within its tolerance
        t.source(9, signaled: 0, at: 1, until: 9)
        t.timer(2, scheduled: 2, at: 9, until: 9.1)                           // 7 ms late: source parse
        t.timer(1, scheduled: 3, at: 9.2, until: 9.3, tolerance: 1)           // 6.2 ms late, 5.2 beyond
        t.activity(10, .exit)
        t.runEnd(10)
        let s = try t.summarize()
        let loop = s.loops[0]
        #expect(s.timers.map(\.firings).reduce(0, +) == loop.timerFirings)
        #expect(loop.timerFirings == 3 && loop.timerMissed == 2 && loop.timerLateFirings == 2)
        #expect(loop.lateFiringCauses == ["source parse": 2])
        #expect(loop.timerFiringsWithTolerance == 2 && loop.timerWithinTolerance == 0.5)
        #expect(loop.timerLateness.count == 3 && loop.timerBeyondTolerance.count == 3)
        let one = try #require(s.timers.first { $0.timerID == 1 })
        #expect(one.withinTolerance == 0.5 && one.lateFirings == 1 && one.missed == 2)
        #expect(s.overall.timerLateness == loop.timerLateness)
    }

    /// The Chrome export and the summary read one lateness per firing.
    @Test func theChromeExportShowsTheSummarysLateness() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.timer(1, scheduled: 1, at: 1.25, until: 2, tolerance: 0.1)
        t.timer(2, scheduled: 5, at: 4.5, until: 6)                            // an early stamp: never negative
        t.timer(3, scheduled: 7, at: 19.25, until: 19.5)
        t.activity(20, .exit)
        t.runEnd(20)
        let summary = try t.summarize()
        var reader = ArrayReader(t.events)
        let path = NSTemporaryDirectory() + "chrome-lateness-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try TraceExporter.export(&reader, format: .chrome, to: path)
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        let events = try #require(object?["traceEvents"] as? [[String: Any]])
        let exported = events.compactMap { ($0["args"] as? [String: Any])?["lateness_ns"] as? NSNumber }.map(\.uint64Value)
        #expect(exported == [250_000, 0, 12_250_000])
        // One firing per timer: its mean is the exact lateness of that firing.
        let summarized = [1, 2, 3].map { id in summary.timers.first { $0.timerID == id }.map { UInt64($0.lateness.mean) } }
        #expect(summarized == exported.map { Optional($0) })
        for event in t.events {
            guard let firing = TimerFiring(event) else { continue }
            #expect(exported.contains(firing.lateness))
        }
    }

    /// Values kept aside before a histogram is worth its memory give the same figures as a histogram would.
    @Test func aHistogramsFiguresDoNotDependOnHowItWasFilled() {
        var whole = LatencyHistogram(), merged = LatencyHistogram()
        var parts = [LatencyHistogram](repeating: LatencyHistogram(), count: 7)
        for value in 0..<3_000 {
            let nanoseconds = UInt64(value) * 7_919 % 5_000_011 + 1_000
            whole.record(nanoseconds)
            parts[value % parts.count].record(nanoseconds)
        }
        for part in parts { merged.merge(part) }
        #expect(whole.summary == merged.summary)
        var few = LatencyHistogram(), fewMerged = LatencyHistogram()
        for value: UInt64 in [5, 1_234_567, 3_000, 999_999_999] { few.record(value) }
        fewMerged.merge(few)
        #expect(few.summary == fewMerged.summary && few.summary.count == 4 && few.summary.min == 5)
        // Zero is a value (an on-time firing, an empty backlog): it was recorded as 1.
        var zeros = LatencyHistogram()
        for value: UInt64 in [0, 0, 0, 7] { zeros.record(value) }
        #expect([zeros.summary.min, zeros.summary.p50, zeros.summary.max] == [0, 0, 7])
        #expect(zeros.summary.buckets.first == .init(upTo: 1, count: 3))
    }

    /// The summary's health is the reader's TraceHealth, written in the JSON shape summaries always had.
    @Test func healthIsTheReadersAndKeepsItsJSONShape() throws {
        var health = TraceHealth()
        health.eventsLost = 3
        health.packetsLost = 1
        health.lossWindows = [.init(stream: "tid 7", from: 1_000, to: 2_000, events: 3)]
        var summary = try Self.oneTimer().summarize(health: health)
        #expect(summary.health.trace.lossWindows == health.lossWindows && summary.health.eventsRead == 404)
        summary.health.runsCutOff = nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(summary.health), as: UTF8.self)
        #expect(json.contains(#""lossWindows":[{"events":3,"fromNanoseconds":1000,"stream":"tid 7","toNanoseconds":2000}]"#), "\(json)")
        #expect(json.contains(#""eventsLost":3,"eventsRead":404,"#) && json.contains(#""packetsLost":1,"#), "\(json)")
        #expect(!json.contains("runsCutOff"), "\(json)")
        #expect(try JSONDecoder().decode(TraceSummary.Health.self, from: Data(json.utf8)) == summary.health)
    }
}

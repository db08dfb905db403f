@testable import Analysis
import Foundation
import RunLoopCore
import Testing
import TraceModel

/// The report page and the timeline it draws, on traces built in virtual time (ChromeExportTests' trace: a loop
/// that sleeps 3.5–10 ms and 41–50 ms, a 31 ms stall from 10 ms, 3 events lost at 45–46 ms).
@Suite struct HTMLReportTests {
    static func summary(timelineBuckets: Int = 600) throws -> TraceSummary {
        let (events, health) = ChromeExportTests.trace()
        return try summarized(events, health: health, timelineBuckets: timelineBuckets)
    }

    /// `events` summarized with a timeline, as `rlctl report` summarizes.
    static func summarized(_ events: [TraceEvent], health: TraceHealth = TraceHealth(), timelineBuckets: Int = 600) throws -> TraceSummary {
        var reader = ArrayReader(events, health: health)
        var options = TraceSummarizer.Options()
        options.timelineBuckets = timelineBuckets
        return try TraceSummarizer.summarize(&reader, options: options)
    }

    @Test func theTimelineIsTheLoopsBusyShareInEachMillisecond() throws {
        let timeline = try #require(try Self.summary().timeline)
        #expect(timeline.originNanoseconds == 0 && timeline.bucketNanoseconds == 1_000_000 && timeline.buckets == 52)
        let line = try #require(timeline.loops.first)
        #expect(line.name == "loop 1 main" && line.kind == "runloop")
        // Busy 0–3.5 ms, asleep to 10, busy to 41, asleep to 50, busy to 51 (its last event).
        let expected: [Double?] = [1, 1, 1, 0.5] + Array(repeating: 0, count: 6) + Array(repeating: 1, count: 31)
            + Array(repeating: 0, count: 9) + [1, nil]
        #expect(line.utilization == expected)
        // The stall, in the bucket where its iteration began.
        #expect(line.stalls.map { [$0.index, Int($0.count), Int($0.worstBusyNanoseconds)] } == [[10, 1, 31_000_000]])
        #expect(line.stalls.first?.worstCause?.isEmpty == false)
    }

    @Test func theTimelineKeepsEachTimersFiringsAndWidensByMergingBuckets() throws {
        let timeline = try #require(try Self.summary().timeline)
        let late = try #require(timeline.timers.first { $0.timerID == 2 })
        #expect(late.buckets == [.init(index: 40, firings: 1, lowest: 28_500_000, highest: 28_500_000, missed: 0)])
        // With at most 20 buckets, 51 ms takes 4 ms buckets (1 → 2 → 4): timer 2's firing is in bucket 10, and the
        // loop's sleep is summed exactly (bucket 2 = 8–12 ms: asleep 8–10 of it).
        let wide = try #require(try Self.summary(timelineBuckets: 20).timeline)
        #expect(wide.bucketNanoseconds == 4_000_000 && wide.buckets == 13)
        #expect(wide.timers.first { $0.timerID == 2 }?.buckets.map(\.index) == [10])
        #expect(wide.loops.first?.utilization[2] == 0.5)
        #expect(wide.loops.first?.utilization[0] == 0.875, "0–4 ms: asleep 3.5–4 of it")
    }

    @Test func thePageShowsTheSummarysNumbersAndLoadsNothing() throws {
        let summary = try Self.summary()
        let page = HTMLReport.summary(summary, context: .init(title: "a <test> & \"page\"", about: ["trace: t"]))
        let loop = try #require(summary.loops.first)
        #expect(page.contains(">\(formatPercent(loop.utilization))</span>"), "the loop's utilization, as summarize prints it")
        #expect(page.contains("<title>a &lt;test&gt; &amp; &quot;page&quot;</title>"), "text is escaped")
        // The stall: a mark on the utilization line that links to its table row, with its culprit.
        #expect(page.contains("href=\"#stall-1-0\"") && page.contains("<tr id=\"stall-1-0\">"))
        #expect(page.contains("<td>31.0ms</td>"))
        // The loss window, shaded on the time axis, and said in the health section.
        #expect(page.contains("class=\"loss\""))
        #expect(page.contains("3 events and 0 packets lost in 1 window(s)"))
        // Self-contained: no address is loaded (the only URL is the Perfetto instruction's text).
        #expect(!page.contains("src=") && !page.contains("url(") && !page.contains("@import") && !page.contains("<link"))
        let hrefs = page.components(separatedBy: "href=\"").dropFirst().map { $0.prefix(1) }
        #expect(hrefs.allSatisfy { $0 == "#" })
    }

    /// The loops' own stall and hang reports get a section of their own, with the culprit's label escaped.
    @Test func theLoopsOwnReportsHaveTheirSection() throws {
        let (events, health) = ChromeExportTests.trace()
        let stallAt = events.last!.timestamp
        let reports = [
            TraceEvent(timestamp: stallAt, threadID: events[0].threadID, payload: .loopStall(.init(
                loopID: 1, mode: "kCFRunLoopDefaultMode", iteration: 7, start: stallAt - 31_000_000, busy: 31_000_000,
                threshold: 20_000_000, culpritKind: .timer, culpritID: 9, culpritDuration: 30_000_000, culpritLabel: "<render>"))),
            TraceEvent(timestamp: stallAt, threadID: 99, payload: .loopHang(loopID: 1, iteration: 7, busy: 25_000_000, threshold: 20_000_000)),
        ]
        let page = HTMLReport.summary(try Self.summarized(events + reports, health: health), context: .init(title: "reported"))
        #expect(page.contains("What the loops reported"))
        #expect(page.contains("1 stall(s) busier than 20.0ms"))
        #expect(page.contains("timer &#39;&lt;render&gt;&#39; (30.0ms)"))
        #expect(page.contains("1 hang(s) the watchdog saw while they lasted"))
        #expect(!HTMLReport.summary(try Self.summary(), context: .init(title: "none")).contains("What the loops reported"))
    }

    @Test func anEmptyTraceGivesAPageThatSaysSo() throws {
        let page = HTMLReport.summary(try Self.summarized([]), context: .init(title: "empty"))
        #expect(page.contains("the trace holds no events"))
        #expect(page.contains("No loop in this input"))
    }

    /// NIO and wait loops get their lines too, named as their sections head them, with their stalls.
    @Test func nioAndWaitLoopsHaveTheirLinesAndStalls() throws {
        var options = TraceSummarizer.Options()
        options.timelineBuckets = 600
        var nioReader = ArrayReader(AdaptedLoopSummaryTests.threeLoops().events)
        let nio = try TraceSummarizer.summarize(&nioReader, options: options)
        let nioLines = try #require(nio.timeline).loops
        #expect(Set(nioLines.map(\.kind)) == ["nio"])
        #expect(nioLines.map(\.name).sorted() == (nio.nio?.loops ?? []).map { "NIO loop \($0.loopID)" + ($0.name.map { " \($0)" } ?? "") }.sorted())
        #expect((nio.nio?.overall.stalls ?? 0) > 0)
        #expect(nioLines.reduce(0) { $0 + $1.stalls.reduce(0) { $0 + $1.count } } == nio.nio?.overall.stalls)
        let nioPage = HTMLReport.summary(nio, context: .init(title: "nio"))
        #expect(!nioPage.contains("no sleep or event of this loop in the timeline"))

        var waitReader = ArrayReader(WaitLoopSummaryTests.nodeLoop().sorted)
        let waits = try TraceSummarizer.summarize(&waitReader, options: options)
        let waitLine = try #require(waits.timeline?.loops.first)
        #expect(waitLine.kind == "wait" && waitLine.name == waits.waits?.loops.first?.name)
        // The node loop's two stalls: 30 ms from 20.6 ms and 20 ms later on, each in its bucket.
        #expect(waits.waits?.loops.first?.stalls == 2)
        #expect(waitLine.stalls.reduce(0) { $0 + $1.count } == 2)
        let waitPage = HTMLReport.summary(waits, context: .init(title: "node"))
        #expect(!waitPage.contains("no sleep or event of this loop in the timeline"))
        #expect(waitPage.contains("Not available for this loop"))
    }

    /// The line is busy ÷ time in runs, as the summary's utilization: outside runs there is no value, and a trace
    /// that ends long after its last sleep still fits the bucket limit.
    @Test func theLineCountsOnlyTimeInRunsAndFitsTheLimitToTheEnd() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.sleep(from: 1, to: 9)
        t.activity(10, .exit)
        t.runEnd(10)
        t.runBegin(90)
        t.activity(90, .beforeTimers)
        t.sleep(from: 91, to: 99)
        t.activity(100, .exit)
        t.runEnd(100)
        var reader = ArrayReader(t.events)
        var options = TraceSummarizer.Options()
        options.timelineBuckets = 600
        let summary = try TraceSummarizer.summarize(&reader, options: options)
        let line = try #require(summary.timeline?.loops.first)
        #expect(summary.loops.first?.utilization == 0.2)
        let values = line.utilization.compactMap { $0 }
        #expect(values.count == 20 && line.utilization[10..<90].allSatisfy { $0 == nil })
        #expect(abs(values.reduce(0, +) / Double(values.count) - 0.2) < 1e-9, "the mean of equal buckets is the summary's figure")

        var long = TraceBuilder()
        long.runBegin(0)
        long.activity(0, .beforeTimers)
        long.sleep(from: 1, to: 2)
        long.block(1, enqueued: 2, at: 2, until: 10_000)
        long.runEnd(10_000)
        var longReader = ArrayReader(long.events)
        let timeline = try #require(try TraceSummarizer.summarize(&longReader, options: options).timeline)
        #expect(timeline.buckets <= 600 && timeline.bucketNanoseconds == 32_000_000)
    }

    /// A count distribution's first bucket holds 0 (a NIO tick that ran no task): the page says 0, not 1.
    @Test func aBucketOfZerosIsLabelledZero() {
        var histogram = LatencyHistogram()
        for value: UInt64 in [0, 0, 3] { histogram.record(value) }
        let page = Chart.histogram(histogram.summary, title: "tasks per tick", unit: { "\(Int($0.rounded()))" }).rendered
        #expect(page.contains("<title>0: 2 (66.7%)</title>"), "\(page)")
        #expect(page.contains("<title>2–3: 1 (33.3%)</title>"))
    }
}

import Analysis
import Foundation
import Glibc
import RunLoopCore
import Testing
import TestSupport
import TraceReading
import Tracing

/// `rlctl top`'s running totals come from a summarizer that keeps no distribution
/// (``TraceSummarizer/Options/figures`` `.totals`) and summaries without buckets: the totals it differences
/// must be exactly the full summary's.
@Suite struct LiveTotalsTests {
    @Test func aSummaryWithoutDistributionsHasTheSameTotals() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let folder = temporaryPath("live-totals")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let loopID = Shared<UInt64>(0)
        _ = try Recording.run(.embedded(), into: folder) { _ in
            onThread {
                let loop = Loop.current
                loopID.value = loop.id
                let count = Shared(0)
                let timer = LoopTimer(after: .milliseconds(2), interval: .milliseconds(2), label: "tick") { timer in
                    let fired = count.mutate { $0 += 1; return $0 }
                    if fired % 5 == 0 { usleep(20_000) }
                    for _ in 0..<3 { loop.perform {} }
                    if fired == 30 { timer.invalidate() }
                }
                loop.add(timer, forMode: .default)
                while timer.isValid { loop.run(mode: .default, timeout: .seconds(2)) }
            }
        }
        var options = TraceSummarizer.Options()
        options.stallThreshold = 10_000_000
        var full = try EmbeddedTraceReader(path: folder)
        let whole = try TraceSummarizer.summarize(&full, options: options)
        options.figures = .totals
        var light = try EmbeddedTraceReader(path: folder)
        let totals = try TraceSummarizer.summarize(&light, options: options)

        // The recorder takes the loops other tests run meanwhile too: this test's loop is judged.
        let a = try #require(whole.loops.first { $0.loopID == loopID.value }, "\(whole.loops.map(\.loopID))")
        let b = try #require(totals.loops.first { $0.loopID == loopID.value })
        // One iteration per firing at least: the blocks a callout performs run in the same step 9 (rules 31, 33).
        #expect(a.iterations >= 30)
        #expect(b.iterations == a.iterations && b.wallNanoseconds == a.wallNanoseconds && b.busyNanoseconds == a.busyNanoseconds)
        // Every 5th of 30 firings burns 20 ms; a preemption past 10 ms on a loaded machine adds one.
        #expect(b.stalls == a.stalls && a.stalls >= 6, "\(a.stalls) stalls")
        #expect(b.worstStalls.map(\.busyNanoseconds) == a.worstStalls.map(\.busyNanoseconds))
        #expect(b.worstStalls.map(\.cause) == a.worstStalls.map(\.cause))
        // What it leaves out, it leaves out whole: no distribution is half-filled.
        #expect(b.busyPerIteration.count == 0 && a.busyPerIteration.count == a.iterations)
        #expect(a.busyPerIteration.buckets.isEmpty == false)
    }
}

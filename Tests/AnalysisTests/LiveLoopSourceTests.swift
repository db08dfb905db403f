@testable import Analysis
import Foundation
import Testing
import TraceModel

/// `rlctl top`'s rows from a live source, interval by interval, in virtual time: what each interval counted (the
/// figures `top --serve` adds into its counters) is the difference of the running totals, exactly.
@Suite struct LiveLoopSourceTests {
    @Test func aWaitLoopsIntervalsCountItsIterationsBusyTimeStallsAndLateness() throws {
        let events = WaitLoopSummaryTests.nodeLoop().sorted
        let source = LiveLoopSource(host: "h", session: "embedded /t", stallThresholdNanoseconds: 16 * WaitLoopSummaryTests.ms)
        // Attached after the thread was named: the naming is learned, and the rows carry its process.
        let naming = try #require(events.first { if case .waitThread = $0.payload { true } else { false } })
        source.learnName(naming)
        let waits = events.filter { if case .waitThread = $0.payload { false } else { true } }
        // The first three waits (to 20.6 ms), then the rest.
        let split = try #require(waits.firstIndex { $0.timestamp > 20_600 * WaitLoopSummaryTests.us })
        let ms = WaitLoopSummaryTests.ms, us = WaitLoopSummaryTests.us

        source.consume(Array(waits[..<split]))
        let first = try #require(source.takeInterval().first)
        #expect(first.kind == "wait" && first.processID == 4242 && first.threadID == 20 && first.name == "node" && first.loopID == 5)
        #expect(first.iterations == 2)
        #expect(first.busyNanoseconds == 2_100 * us && first.coveredNanoseconds == 20_600 * us)
        #expect(first.stalls == 0 && first.worstStallNanoseconds == nil)
        #expect(first.wakeLatencyP99Nanoseconds == WaitLoopSummaryTests.distribution([500 * us]).p99, "the 10 ms wait woke 0.5 ms late")

        source.consume(Array(waits[split...]))
        let second = try #require(source.takeInterval().first)
        // The whole loop: 7 iterations, 54 ms busy of 110 (WaitLoopSummaryTests): the rest is this interval's.
        #expect(second.iterations == 5)
        #expect(second.busyNanoseconds == 54 * ms - 2_100 * us && second.coveredNanoseconds == 110 * ms - 20_600 * us)
        #expect(second.stalls == 2 && second.worstStallNanoseconds == 30 * ms)
        #expect(second.wakeLatencyP99Nanoseconds == WaitLoopSummaryTests.distribution([2 * ms, 0]).p99, "2 ms late, and on time")
        #expect(source.takeInterval().isEmpty, "nothing new: no row")
    }
}

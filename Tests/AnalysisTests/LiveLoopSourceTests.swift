@testable import Analysis
import Foundation
import Testing
import TestSupport
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

    /// A Node-like loop's 10 ms wait woken 2 ms late (KernelCauseTests.waitLoopsCarryTheSameFacet): the kernel's
    /// records of it come after the loop's own events, as they do in `rlctl top`.
    static func lateWait() -> (loop: [TraceEvent], kernel: [TraceEvent]) {
        let us = WaitLoopSummaryTests.us
        var w = WaitLoopSummaryTests.Waits()
        w.named(20, pid: 4242, process: "node", name: "node")
        w.wait(20, timeout: 10_000, from: 0, to: 12_000, ready: 0)
        w.wait(20, timeout: -1, from: 30_000, to: 40_000, ready: 1)
        var kernel = [TraceEvent(timestamp: 0, threadID: 0, processID: 4242, payload: .kernelBegin(pid: 4242, command: ""))]
        func offCPU(_ reason: KernelOffCPUReason, left: UInt64, woken: UInt64? = nil, back: UInt64, timer: (UInt64, UInt64, UInt64)? = nil) {
            if let timer {
                kernel.append(TraceEvent(timestamp: back * us, threadID: 20, processID: 4242,
                                         payload: .kernelTimer(threadID: 20, due: timer.0 * us, latest: timer.1 * us, fired: timer.2 * us)))
            }
            kernel.append(TraceEvent(timestamp: back * us, threadID: 20, processID: 4242,
                                     payload: .kernelOffCPU(.init(threadID: 20, reason: reason, syscall: reason.leftRunnable ? -1 : 232,
                                                                  left: left * us, woken: (woken ?? left) * us, back: back * us, cpu: 2,
                                                                  wakerThreadID: 0, throttled: 0))))
        }
        offCPU(.sleeping, left: 100, woken: 11_000, back: 11_800, timer: (10_000, 10_050, 10_500))
        offCPU(.preempted, left: 15_000, back: 25_000)
        offCPU(.sleeping, left: 30_100, woken: 39_000, back: 39_500)
        let loop = w.sorted.map { TraceEvent(timestamp: $0.timestamp, threadID: $0.threadID, processID: 4242, payload: $0.payload) }
        return (loop, kernel)
    }

    /// `top --serve`'s late-time counter: the loop's events wait for the kernel's side of their time, then the
    /// interval counts where the late wake-up's 2 ms went, by cause, adding up to its lateness.
    @Test func aLateWakeUpsTimeIsCountedByCauseOnceTheKernelsSideCame() throws {
        let us = WaitLoopSummaryTests.us
        let (loop, kernel) = Self.lateWait()
        let source = LiveLoopSource(host: "h", session: "embedded /t", stallThresholdNanoseconds: 16 * WaitLoopSummaryTests.ms)
        source.consume(Array(loop.prefix(1)))   // the thread's naming: the process is known
        source.consumeKernel(Array(kernel.prefix(1)), completeThrough: 0)
        source.consume(Array(loop.dropFirst()))
        // The kernel's records up to 12 ms are not all in: the loop's totals wait for them.
        source.consumeKernel([], completeThrough: 11_000 * us)
        let held = source.takeInterval()
        #expect(held.allSatisfy { $0.iterations == 0 && ($0.lateTime?.totalNanoseconds ?? 0) == 0 }, "\(held)")

        source.consumeKernel(Array(kernel.dropFirst()), completeThrough: 50_000 * us)
        let row = try #require(source.takeInterval().first)
        let late = try #require(row.lateTime)
        #expect(late.explained == 1 && late.totalNanoseconds == 2_000 * us, "the causes add up to the lateness")
        #expect(late.slackNanoseconds == 50 * us)
        #expect(late.wakePathNanoseconds == (450 + 500 + 200) * us, "interrupt delivery, wake-up, return to user space")
        #expect(late.runQueueNanoseconds == 800 * us)
        #expect(late.throttledNanoseconds == 0 && late.blockedNanoseconds == 0 && late.loopWorkNanoseconds == 0)
        #expect(row.iterations == 1 && row.stalls == 1, "the 18 ms of work between the waits")

        #expect(source.takeInterval().allSatisfy { $0.lateTime == nil || $0.lateTime?.totalNanoseconds == 0 }, "counted once")
    }

    /// A recording that ends while its last events wait for the kernel's records: they go into the totals at its
    /// end, for the next interval (the late wake-up among them, its kernel records not in, is not counted).
    @Test func theEventsHeldForTheKernelAreCountedWhenTheRecordingEnds() throws {
        let us = WaitLoopSummaryTests.us
        let (loop, kernel) = Self.lateWait()
        let source = LiveLoopSource(host: "h", session: "embedded /t", stallThresholdNanoseconds: 16 * WaitLoopSummaryTests.ms)
        source.consume(Array(loop.prefix(1)))
        source.consumeKernel(Array(kernel.prefix(1)), completeThrough: 0)
        source.consume(Array(loop.dropFirst()))
        source.consumeKernel([], completeThrough: 11_000 * us)
        #expect(source.takeInterval().allSatisfy { $0.iterations == 0 }, "held")

        source.end("the recording ended")
        let row = try #require(source.takeInterval().first)
        #expect(row.iterations == 1 && row.stalls == 1, "the waits' iteration, counted at the end")
        #expect((row.lateTime?.totalNanoseconds ?? 0) == 0, "not explained: no kernel records of it came")
    }

    /// A source whose reading ended (a recording that finished, a session that closed) still gives the interval
    /// that ends next the events of its last read: `rlctl top --serve` counts a program's last moments.
    @Test func aFollowedSourcesLastEventsReachTheIntervalAfterItsReadingEnded() throws {
        let (loop, _) = Self.lateWait()
        let followers = LiveFollowers(relistEvery: .seconds(1))
        let ended = Shared(false)
        followers.follow([1], key: { "recording-\($0)" },
                         source: { _ in LiveLoopSource(host: "h", session: "embedded /t", stallThresholdNanoseconds: 16 * WaitLoopSummaryTests.ms) },
                         endsForGood: { _ in
                             ended.value = true
                             return true
                         },
                         read: { _, source in
                             source.consume(loop)
                             return "the recording ended"
                         })
        for _ in 0..<2_000 where !ended.value { usleep(10_000) }
        #expect(ended.value)
        let (rows, sources) = followers.takeInterval()
        #expect(sources == 0, "no longer followed")
        #expect(rows.count == 1 && rows.first?.iterations == 1, "\(rows)")
        #expect(followers.takeInterval().rows.isEmpty, "given once")
    }

    /// Without the kernel view (no `kernel_begin` for the process) nothing is held and no late time is counted.
    @Test func withoutTheKernelViewTheLoopsTotalsAreNotHeldAndHaveNoLateTime() throws {
        let (loop, _) = Self.lateWait()
        let source = LiveLoopSource(host: "h", session: "embedded /t", stallThresholdNanoseconds: 16 * WaitLoopSummaryTests.ms)
        source.consume(loop)
        let row = try #require(source.takeInterval().first)
        #expect(row.iterations == 1 && row.lateTime == nil)
    }

    /// A RunLoopCore timer due while its loop slept, fired 2.5 ms late (KernelCauseTests): the running totals, which
    /// keep few figures, still split its lateness as the whole summary does.
    @Test func aRunLoopCoreTimersLateTimeIsSplitInTheRunningTotalsToo() throws {
        var t = KernelCauseTests.lateTimerWakeUp()
        t.activity(13, .beforeWaiting)
        let events = t.inTimeOrder.events.map { TraceEvent(timestamp: $0.timestamp, threadID: $0.threadID, processID: 7, payload: $0.payload) }
        func isKernel(_ e: TraceEvent) -> Bool {
            switch e.payload {
            case .kernelBegin, .kernelTask, .kernelTimer, .kernelRunQueue, .kernelOffCPU, .kernelLost: true
            default: false
            }
        }
        let source = LiveLoopSource(host: "h", session: "embedded /t", stallThresholdNanoseconds: 16_000_000)
        let loop = events.filter { !isKernel($0) }
        source.consume(Array(loop.prefix(1)))
        source.consumeKernel(events.filter(isKernel), completeThrough: TraceBuilder.ns(20))
        source.consume(Array(loop.dropFirst()))
        let row = try #require(source.takeInterval().first)
        let late = try #require(row.lateTime)
        let ms = { (v: Double) in TraceBuilder.ns(v) }
        #expect(late.explained == 1 && late.totalNanoseconds == ms(2.5))
        #expect(late.slackNanoseconds == ms(0.25), "armed 0.2 ms late, 0.05 ms of slack")
        #expect(late.wakePathNanoseconds == ms(0.15) + ms(0.5) + ms(0.1))
        #expect(late.runQueueNanoseconds == ms(0.8) + ms(0.1) && late.throttledNanoseconds == ms(0.3))
        #expect(late.loopWorkNanoseconds == ms(0.3))
    }
}

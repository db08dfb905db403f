@testable import Analysis
import Foundation
import Testing
import TestSupport
import TraceModel

/// Any program's wait loops (`rlctl record --any`): the interposer's wait_begin/wait_end/wait_thread events, built by
/// hand in virtual time, and what the summary, its renderings, the budget metrics and the Chrome export make of them.
@Suite struct WaitLoopSummaryTests {
    static let us: UInt64 = 1_000
    static let ms: UInt64 = 1_000_000

    /// Events with times in microseconds, sorted by time (then by the order added) when summarized.
    struct Waits {
        var events: [TraceEvent] = []

        mutating func add(_ at: UInt64, _ thread: Int32, _ payload: TraceEvent.Payload) {
            events.append(TraceEvent(timestamp: at * WaitLoopSummaryTests.us, threadID: thread, payload: payload))
        }

        mutating func named(_ thread: Int32, at: UInt64 = 0, pid: Int32, process: String, name: String) {
            add(at, thread, .waitThread(pid: pid, ppid: 1, thread: name, process: process))
        }

        /// One wait from `from` to `to` (µs); `timeout` in µs, -1 for none.
        mutating func wait(_ thread: Int32, _ call: WaitCall = .epollPwait, fd: Int32 = 5, events: UInt32 = 64, timeout: Int64, from: UInt64,
                           to: UInt64, ready: Int32, error: Int32 = 0) {
            add(from, thread, .waitBegin(call: call, target: call.isEpoll ? fd : -1, setSize: events, timeout: timeout < 0 ? -1 : timeout * 1_000))
            add(to, thread, .waitEnd(ready: ready, error: error))
        }

        var sorted: [TraceEvent] {
            events.enumerated().sorted { ($0.element.timestamp, $0.offset) < ($1.element.timestamp, $1.offset) }.map(\.element)
        }

        func summarize(stall: UInt64 = 16 * WaitLoopSummaryTests.ms, health: TraceHealth = TraceHealth()) throws -> TraceSummary {
            var reader = ArrayReader(sorted, health: health)
            var options = TraceSummarizer.Options()
            options.stallThreshold = stall
            return try TraceSummarizer.summarize(&reader, options: options)
        }
    }

    /// The distribution a histogram holding exactly `values` gives: the expectation for a list of hand-computed values.
    static func distribution(_ values: [UInt64]) -> DistributionSummary {
        var histogram = LatencyHistogram()
        for value in values { histogram.record(value) }
        return histogram.summary
    }

    /// Node's main thread (tid 20, pid 4242) waiting on epoll fd 5: every wake cause, a non-blocking check, two
    /// stalls (30 ms and 20 ms of work between waits), 110 ms from the first wait's begin to the last one's end.
    static func nodeLoop() -> Waits {
        var w = Waits()
        w.named(20, pid: 4242, process: "node", name: "node")
        w.wait(20, timeout: 10_000, from: 0, to: 10_500, ready: 0)                // timed out 0.5 ms late
        w.wait(20, timeout: -1, from: 12_000, to: 20_000, ready: 3)               // ready; busy 1.5 ms
        w.wait(20, timeout: 0, from: 20_500, to: 20_600, ready: 1)                // non-blocking check; busy 0.5 + 0.1 ms
        w.wait(20, timeout: 5_000, from: 50_600, to: 57_600, ready: 0)            // stall 30 ms; timed out 2 ms late
        w.wait(20, timeout: 100_000, from: 58_000, to: 60_000, ready: -1, error: 4)  // EINTR; busy 0.4 ms
        w.wait(20, timeout: -1, from: 61_000, to: 61_500, ready: -1, error: 9)    // EBADF; busy 1 ms
        w.wait(20, timeout: -1, from: 62_000, to: 70_000, ready: 1)               // busy 0.5 ms
        w.wait(20, timeout: 20_000, from: 90_000, to: 110_000, ready: 0)          // stall 20 ms; timed out on time
        return w
    }

    @Test func iterationsBusySleepAndUtilizationOfALoop() throws {
        let s = try Self.nodeLoop().summarize()
        let waits = try #require(s.waits)
        #expect(waits.loops.count == 1 && waits.rareWaiters.isEmpty && waits.unmatchedEnds == 0)
        let l = try #require(waits.loops.first)
        #expect(l.threadID == 20 && l.pid == 4242 && l.ppid == 1 && l.process == "node" && l.thread == "node")
        #expect(l.family == "epoll" && l.target == 5 && l.calls == ["epoll_pwait": 8])
        #expect(l.name == "node (pid 4242) thread node, epoll fd 5")
        #expect(l.waits == 8 && l.iterations == 7)
        #expect(l.busyNanoseconds == 54 * Self.ms && l.sleepNanoseconds == 56 * Self.ms && l.spanNanoseconds == 110 * Self.ms)
        #expect(l.utilization == 54.0 / 110.0)
        #expect(l.iterationsPerSecond == 7 / 0.110)
        let us = Self.us
        #expect(l.busyPerIteration == Self.distribution([1_500 * us, 600 * us, 30_000 * us, 400 * us, 1_000 * us, 500 * us, 20_000 * us]))
        // The non-blocking check is not a sleep.
        #expect(l.sleep == Self.distribution([10_500 * us, 8_000 * us, 7_000 * us, 2_000 * us, 500 * us, 8_000 * us, 20_000 * us]))
        #expect(!l.waitingAtEnd && l.chainBreaks == 0 && !l.affectedByLoss)
        #expect(s.loops.isEmpty && s.nio == nil && s.overall.iterations == 0)
        #expect(s.health.firstEventNanoseconds == 0)
    }

    @Test func everyWakeCauseIsCountedAndNonBlockingChecksApart() throws {
        let l = try #require(try Self.nodeLoop().summarize().waits?.loops.first)
        #expect(l.wakeCauses == TraceSummary.WakeCauses(ready: 2, timedOut: 3, interrupted: 1, failed: 1, emptyWithoutTimeout: 0,
                                                        nonBlockingChecks: 1, nonBlockingChecksReady: 1))
        #expect(l.wakeCauses.calls == 8 && l.wakeCauses.share(l.wakeCauses.timedOut) == 3.0 / 8.0)
        // Ready events per wake-up: blocking waits that returned events only (not the check's 1).
        #expect(l.readyPerWakeUp == Self.distribution([3, 1]))
    }

    /// libuv with idle-time metrics: an empty zero-timeout check straight before each blocking wait. Each pair is
    /// one iteration, whose work includes the check.
    @Test func anEmptyCheckStraightBeforeAWaitIsPartOfItsIteration() throws {
        var w = Waits()
        w.named(20, pid: 4242, process: "node", name: "node")
        var t: UInt64 = 0
        for _ in 0..<5 {
            w.wait(20, timeout: 0, from: t, to: t + 2, ready: 0)                  // check, 2 µs
            w.wait(20, timeout: 5_000, from: t + 3, to: t + 5_003, ready: 0)      // 1 µs later: the blocking wait
            t += 5_003 + 1_000                                                    // 1 ms of work
        }
        let l = try #require(try w.summarize().waits?.loops.first)
        // One iteration per blocking wait: the first runs from the first check, which begins the chain (1 µs).
        #expect(l.waits == 10 && l.iterations == 5)
        #expect(l.wakeCauses.nonBlockingChecks == 5 && l.wakeCauses.timedOut == 5)
        // Each later one: 1 ms of work, the 2 µs check, the 1 µs before the wait.
        #expect(l.busyPerIteration == Self.distribution([1 * Self.us] + Array(repeating: 1_003 * Self.us, count: 4)))
        #expect(l.busyNanoseconds == (1 + 4 * 1_003 + 2) * Self.us)   // and the first check's own 2 µs
    }

    /// A loop that only checks: each empty check is a turn of its own when work comes between, and two checks in
    /// a row are at most one iteration, so that such a loop never becomes one long stall.
    @Test func aLoopOfChecksIsOneIterationPerCheck() throws {
        var w = Waits()
        var t: UInt64 = 0
        for _ in 0..<6 {
            w.wait(20, timeout: 0, from: t, to: t + 2, ready: 0)
            t += 2 + 500                                                          // 0.5 ms of work: beyond the gap
        }
        for _ in 0..<6 {
            w.wait(20, timeout: 0, from: t, to: t + 2, ready: 0)
            t += 2 + 1                                                            // back to back
        }
        let l = try #require(try w.summarize(stall: 400 * Self.us).waits?.loops.first)
        // The first check begins the chain; the next five end a turn of 0.5 ms each; the first back-to-back check
        // joins the turn the last of those began (0.5 ms: a sixth), and the other five pair up: 2 more turns.
        #expect(l.waits == 12 && l.wakeCauses.nonBlockingChecks == 12)
        #expect(l.iterations == 8)
        #expect(l.stalls == 6)
    }

    @Test func latenessComesOnlyFromWaitsThatTimedOutWithATimeout() throws {
        let l = try #require(try Self.nodeLoop().summarize().waits?.loops.first)
        // 0.5 ms, 2 ms and 0: not the ready, interrupted, failed or non-blocking ones.
        #expect(l.lateness == Self.distribution([500 * Self.us, 2 * Self.ms, 0]))
        #expect(l.lateWakeUps == 1)
    }

    @Test func stallsAreIterationsBusierThanTheThresholdWithTheirStartThreadAndProcess() throws {
        let s = try Self.nodeLoop().summarize()
        let l = try #require(s.waits?.loops.first)
        #expect(l.stalls == 2)
        #expect(l.worstStalls == [
            TraceSummary.WaitStall(threadID: 20, pid: 4242, process: "node", thread: "node", family: "epoll", target: 5,
                                   iteration: 3, atNanoseconds: 20_600 * Self.us, busyNanoseconds: 30 * Self.ms),
            TraceSummary.WaitStall(threadID: 20, pid: 4242, process: "node", thread: "node", family: "epoll", target: 5,
                                   iteration: 7, atNanoseconds: 70 * Self.ms, busyNanoseconds: 20 * Self.ms),
        ])
        #expect(s.waits?.overall.worstStalls == l.worstStalls && s.waits?.overall.stalls == 2)
        let relaxed = try Self.nodeLoop().summarize(stall: 25 * Self.ms)
        #expect(relaxed.waits?.loops.first?.stalls == 1 && relaxed.waits?.loops.first?.worstStalls.first?.iteration == 3)
    }

    /// Python on one thread with two epoll descriptors, the second checked between waits on the first (a nested
    /// loop): two loops, each with its own iterations; the other loop's wait counts as busy time. Its poll and
    /// ppoll calls on another thread are one poll/select loop.
    /// A thread waiting when the trace ends: the work before that wait is busy time, and a stall when it is one (a
    /// tokio worker's last burn was lost so); the wait's iteration, which it would end, is not counted, nor its sleep.
    @Test func theWorkBeforeAWaitInProgressAtTheEndIsBusyAndCanBeAStall() throws {
        var w = Waits()
        w.named(20, pid: 4242, process: "node", name: "node")
        for index in UInt64(0)..<10 { w.wait(20, timeout: 1_000, from: index * 2_000, to: index * 2_000 + 1_000, ready: 0) }
        // 40 ms of work after the tenth wait's end (19 ms), then a wait that has not ended when the trace does.
        w.add(59_000, 20, .waitBegin(call: .epollPwait, target: 5, setSize: 64, timeout: -1))
        w.add(90_000, 21, .waitThread(pid: 4242, ppid: 1, thread: "other", process: "node"))   // the trace goes on
        let loop = try #require(try w.summarize().waits?.loops.first)
        #expect(loop.waitingAtEnd == true)
        #expect(loop.iterations == 9)
        #expect(loop.busyNanoseconds == 9 * Self.ms + 40 * Self.ms)
        #expect(loop.sleepNanoseconds == 10 * Self.ms)
        #expect(loop.stalls == 1 && loop.worstStalls.first?.busyNanoseconds == 40 * Self.ms, "\(loop.worstStalls)")
        #expect(loop.busyPerIteration.count == 9)
    }

    @Test func twoEpollDescriptorsOnOneThreadAreTwoLoopsAndPollCallsOneLoop() throws {
        var w = Waits()
        w.named(30, pid: 500, process: "python3", name: "python3")
        w.wait(30, fd: 3, timeout: -1, from: 0, to: 10_000, ready: 1)
        w.wait(30, fd: 7, timeout: 5_000, from: 10_500, to: 11_500, ready: 1)
        w.wait(30, fd: 3, timeout: -1, from: 12_000, to: 20_000, ready: 2)
        w.wait(30, fd: 7, timeout: 5_000, from: 20_500, to: 21_500, ready: 1)
        w.wait(30, fd: 3, timeout: -1, from: 22_000, to: 30_000, ready: 1)
        w.named(31, pid: 500, process: "python3", name: "worker")
        w.wait(31, .poll, timeout: 1_000, from: 1_000, to: 2_000, ready: 0)
        w.wait(31, .ppoll, timeout: 1_000, from: 3_000, to: 4_000, ready: 0)
        let waits = try #require(try w.summarize().waits)
        #expect(waits.loops.count == 3 && waits.rareWaiters.isEmpty)
        let fd3 = try #require(waits.loops.first { $0.threadID == 30 && $0.target == 3 })
        #expect(fd3.waits == 3 && fd3.iterations == 2)
        #expect(fd3.busyNanoseconds == 4 * Self.ms && fd3.sleepNanoseconds == 26 * Self.ms && fd3.utilization == 4.0 / 30.0)
        #expect(fd3.busyPerIteration == Self.distribution([2 * Self.ms, 2 * Self.ms]))
        let fd7 = try #require(waits.loops.first { $0.threadID == 30 && $0.target == 7 })
        #expect(fd7.waits == 2 && fd7.iterations == 1)
        #expect(fd7.busyNanoseconds == 9 * Self.ms && fd7.sleepNanoseconds == 2 * Self.ms && fd7.utilization == 9.0 / 11.0)
        let poll = try #require(waits.loops.first { $0.threadID == 31 })
        #expect(poll.family == "poll/select" && poll.target == -1 && poll.calls == ["poll": 1, "ppoll": 1])
        #expect(poll.iterations == 1 && poll.busyNanoseconds == 1 * Self.ms && poll.name == "python3 (pid 500) thread worker, poll/select")
        // Busiest first.
        #expect(waits.loops.map(\.target) == [7, -1, 3])
        #expect(waits.overall.loops == 3 && waits.overall.iterations == 4)
        #expect(waits.overall.utilizationMax == 9.0 / 11.0 && waits.overall.busiestLoop == "python3 (pid 500) thread python3, epoll fd 7")
        #expect(waits.overall.utilizationMean == (4.0 / 30.0 + 9.0 / 11.0 + 1.0 / 3.0) / 3)
    }

    /// Redis's main loop (12 waits) beside a thread pool's idle waits over 5 s: 2 waits, then one that lasts to
    /// the end; and a thread whose only wait never ended.
    static func withRareWaiters() -> Waits {
        var w = Waits()
        w.named(60, pid: 70, process: "redis-server", name: "redis-server")
        for i in UInt64(0)..<12 { w.wait(60, fd: 4, timeout: 100_000, from: i * 400_000, to: i * 400_000 + 100_000, ready: 0) }
        w.named(61, at: 10, pid: 70, process: "redis-server", name: "bio_close_file")
        w.wait(61, .poll, timeout: -1, from: 100, to: 2_000_000, ready: 1)
        w.wait(61, .poll, timeout: -1, from: 2_000_100, to: 2_500_000, ready: 1)
        w.add(2_500_100, 61, .waitBegin(call: .poll, target: -1, setSize: 1, timeout: -1))
        w.named(62, at: 20, pid: 70, process: "redis-server", name: "bio_aof")
        w.add(30, 62, .waitBegin(call: .epollWait, target: 9, setSize: 1, timeout: -1))
        w.add(5_000_000, 60, .waitThread(pid: 70, ppid: 1, thread: "redis-server", process: "redis-server"))
        return w
    }

    @Test func threadsThatWaitedRarelyAreListedApartNotAsLoops() throws {
        let waits = try #require(try Self.withRareWaiters().summarize().waits)
        #expect(waits.loops.map(\.threadID) == [60])
        #expect(waits.loops.first?.iterations == 11 && waits.loops.first?.stalls == 11)
        #expect(waits.rareWaiters == [
            TraceSummary.RareWaiter(threadID: 61, pid: 70, process: "redis-server", thread: "bio_close_file", family: "poll/select",
                                    target: -1, waits: 2, sleepNanoseconds: 2_499_800 * Self.us, waitingAtEnd: true),
            TraceSummary.RareWaiter(threadID: 62, pid: 70, process: "redis-server", thread: "bio_aof", family: "epoll",
                                    target: 9, waits: 0, sleepNanoseconds: 0, waitingAtEnd: true),
        ])
        #expect(waits.overall.loops == 1 && waits.overall.iterations == 11)
        let text = SummaryReport.text(try Self.withRareWaiters().summarize())
        #expect(text.contains("""
            threads that waited rarely (fewer than 10 waits and less than one per second; not loops):
              redis-server (pid 70) thread bio_close_file, poll/select: 2 waits, asleep 2.50s, still waiting at the end
              redis-server (pid 70) thread bio_aof, epoll fd 9: 0 waits, asleep 0ns, still waiting at the end
            """), "\(text)")
        #expect(!text.contains("wait loop: redis-server (pid 70) thread bio"), "\(text)")
    }

    /// Events lost on a thread (a loss window of its stream), a wait whose end was lost, and a stream that starts
    /// with a wait's end (a flight-recorder ring overwrote its begin): no busy or sleep across any of those gaps.
    @Test func lossesAndMissingEventsBreakTheIterationChain() throws {
        var w = Waits()
        w.named(20, pid: 4242, process: "node", name: "node")
        w.wait(20, timeout: -1, from: 0, to: 10_000, ready: 1)
        w.wait(20, timeout: -1, from: 12_000, to: 20_000, ready: 1)
        // Lost: 20 ms to 40 ms.
        w.wait(20, timeout: -1, from: 45_000, to: 50_000, ready: 1)
        w.wait(20, timeout: -1, from: 52_000, to: 60_000, ready: 1)
        // A wait whose end was lost, on thread 22.
        w.wait(22, timeout: -1, from: 0, to: 2_000, ready: 1)
        w.add(3_000, 22, .waitBegin(call: .epollPwait, target: 5, setSize: 64, timeout: -1))
        w.wait(22, timeout: -1, from: 6_000, to: 9_000, ready: 1)
        w.wait(22, timeout: -1, from: 10_000, to: 12_000, ready: 1)
        // A ring that starts with an end, on thread 21.
        w.add(1_000, 21, .waitEnd(ready: 1, error: 0))
        w.wait(21, timeout: -1, from: 2_000, to: 3_000, ready: 1)
        w.wait(21, timeout: -1, from: 4_000, to: 5_000, ready: 1)
        var health = TraceHealth()
        health.eventsLost = 5
        health.lossWindows = [.init(stream: "tid 20", from: 20 * Self.ms, to: 45 * Self.ms, events: 5)]
        let s = try w.summarize(health: health)
        let waits = try #require(s.waits)
        let lossy = try #require(waits.loops.first { $0.threadID == 20 })
        #expect(lossy.waits == 4 && lossy.iterations == 2 && lossy.chainBreaks == 1)
        #expect(lossy.busyNanoseconds == 4 * Self.ms && lossy.sleepNanoseconds == 31 * Self.ms)
        #expect(lossy.busyPerIteration == Self.distribution([2 * Self.ms, 2 * Self.ms]) && lossy.stalls == 0)
        #expect(lossy.affectedByLoss && lossy.lostEventsAffecting == 5 && lossy.lossWindowsAffecting == 1)
        let lostEnd = try #require(waits.loops.first { $0.threadID == 22 })
        #expect(lostEnd.waits == 3 && lostEnd.iterations == 1 && lostEnd.chainBreaks == 1)
        #expect(lostEnd.busyNanoseconds == 1 * Self.ms && lostEnd.sleepNanoseconds == 7 * Self.ms && !lostEnd.affectedByLoss)
        let ring = try #require(waits.loops.first { $0.threadID == 21 })
        #expect(ring.waits == 2 && ring.iterations == 1 && ring.busyNanoseconds == 1 * Self.ms && ring.process == nil)
        #expect(ring.name == "thread 21, epoll fd 5")
        #expect(waits.unmatchedEnds == 1)

        let text = SummaryReport.text(s)
        #expect(text.contains("wait loop: node (pid 4242) thread node (tid 20), epoll fd 5 — epoll_pwait 4 (!) 5 lost events in its window\n"), "\(text)")
        #expect(text.contains("wait loop: thread 21, epoll fd 5 — epoll_pwait 2\n"), "\(text)")
        #expect(text.contains("  iteration chain broken 1× at lost or missing events: no busy or sleep counted across those gaps"), "\(text)")
        #expect(text.contains("  1 wait end(s) without their begin left out (a flight-recorder ring overwrote it, or it was lost)"), "\(text)")
    }

    /// A reader reports a loss window while it reads (before the events after it): the chain breaks there too.
    @Test func aLossWindowReportedWhileReadingBreaksTheChain() throws {
        struct LateHealthReader: TraceEventReader {
            var events: [TraceEvent]
            var window: TraceHealth.LossWindow
            var index = 0
            var health = TraceHealth()
            mutating func next() throws(TraceReadError) -> TraceEvent? {
                guard index < events.count else { return nil }
                defer { index += 1 }
                // As the embedded reader: the window appears as the last event before the gap is delivered.
                if events[index].timestamp == window.from { health.lossWindows.append(window) }
                health.eventsRead += 1
                return events[index]
            }
        }
        var w = Waits()
        w.wait(20, timeout: -1, from: 0, to: 10_000, ready: 1)
        w.wait(20, timeout: -1, from: 12_000, to: 20_000, ready: 1)
        w.wait(20, timeout: -1, from: 45_000, to: 50_000, ready: 1)
        var reader = LateHealthReader(events: w.sorted, window: .init(stream: "tid 20", from: 20 * Self.ms, to: 45 * Self.ms, events: 2))
        let s = try TraceSummarizer.summarize(&reader)
        let l = try #require(s.waits?.loops.first)
        #expect(l.iterations == 1 && l.chainBreaks == 1 && l.busyNanoseconds == 2 * Self.ms && l.sleepNanoseconds == 23 * Self.ms)
    }

    /// The same waits as LTTng's wait_batch events (several waits to an event, sent after the last one ended, the
    /// last one still waiting at the end) summarize exactly as the wait-by-wait events do.
    @Test func waitsInBatchesSummarizeAsWaitByWait() throws {
        var waitByWait = Self.nodeLoop()
        waitByWait.add(120_000, 20, .waitBegin(call: .epollPwait, target: 5, setSize: 64, timeout: -1))   // still waiting
        var batched = Waits()
        batched.named(20, pid: 4242, process: "node", name: "node")
        var waits: [TraceEvent.WaitBatch.Wait] = []
        var open: TraceEvent?
        for event in waitByWait.sorted where event.threadID == 20 {
            switch event.payload {
            case .waitBegin: open = event
            case .waitEnd(let ready, let error):
                guard let begin = open, case .waitBegin(let call, let target, let setSize, let timeout) = begin.payload else { continue }
                waits.append(.init(call: call, target: target, setSize: setSize, timeout: timeout, begin: begin.timestamp,
                                   end: event.timestamp, ready: ready, error: error))
                open = nil
            default: continue
            }
        }
        if let begin = open, case .waitBegin(let call, let target, let setSize, let timeout) = begin.payload {
            waits.append(.init(call: call, target: target, setSize: setSize, timeout: timeout, begin: begin.timestamp, end: nil, ready: 0, error: 0))
        }
        // Sent by another thread (the interposer's flusher) in batches of 3, each 5 µs after its last wait.
        for start in stride(from: 0, to: waits.count, by: 3) {
            let part = Array(waits[start..<min(start + 3, waits.count)])
            batched.add((part.last!.end ?? part.last!.begin) / Self.us + 5, 99, .waitBatch(.init(threadID: 20, waits: part)))
        }
        let expected = try #require(try waitByWait.summarize().waits), actual = try #require(try batched.summarize().waits)
        #expect(actual.loops == expected.loops)
        #expect(actual.loops.first?.waitingAtEnd == true && actual.loops.first?.iterations == 7)
    }

    /// A loss window of a per-CPU stream (LTTng) before a batch breaks the thread's chain before the batch's waits,
    /// even where the window starts after the batch's first wait began: the lost event may have been the thread's
    /// previous batch, sent after that.
    @Test func aLossBeforeABatchBreaksTheChainBeforeItsWaits() throws {
        var w = Waits()
        func wait(_ from: UInt64, _ to: UInt64) -> TraceEvent.WaitBatch.Wait {
            .init(call: .epollWait, target: 5, setSize: 64, timeout: -1, begin: from * Self.us, end: to * Self.us, ready: 1, error: 0)
        }
        w.add(21_000, 20, .waitBatch(.init(threadID: 20, waits: [wait(0, 10_000), wait(12_000, 20_000)])))
        // The batch of 20–40 ms is lost, in a window that starts at 41 ms; this batch's first wait began at 40.5 ms.
        w.add(61_000, 20, .waitBatch(.init(threadID: 20, waits: [wait(40_500, 50_000), wait(52_000, 60_000)])))
        var health = TraceHealth()
        health.eventsLost = 1
        health.lossWindows = [.init(stream: "channel0_1", from: 41 * Self.ms, to: 61 * Self.ms, events: 1)]
        let l = try #require(try w.summarize(health: health).waits?.loops.first)
        #expect(l.waits == 4 && l.iterations == 2 && l.chainBreaks == 1)
        #expect(l.busyNanoseconds == 4 * Self.ms, "2 ms before each batch's second wait, nothing across the loss")
    }

    /// A wait already in progress when `rlctl record --pid` attached (begin all ones: its start is unknown) is no sleep of
    /// its loop, but its end starts the loop's chain: the first iteration's busy time counts from there, and the
    /// summary says the loop was waiting at the start.
    @Test func aWaitInProgressAtTheAttachStartsTheChainAndIsMarked() throws {
        var w = Waits()
        w.named(20, pid: 4242, process: "go-server", name: "go-server")
        func wait(_ from: UInt64, _ to: UInt64, timeout: Int64 = 5_000_000) -> TraceEvent.WaitBatch.Wait {
            .init(call: .epollPwait, target: 4, setSize: 128, timeout: timeout, begin: from * Self.us, end: to * Self.us, ready: 1, error: 0)
        }
        var inProgress = wait(0, 3_000, timeout: -1)
        inProgress.begin = .max
        w.add(12_000, 20, .waitBatch(.init(threadID: 20, waits: [inProgress, wait(4_000, 8_000), wait(8_500, 12_000)])))
        let l = try #require(try w.summarize().waits?.loops.first)
        #expect(l.waitingAtStart == true)
        #expect(l.waits == 2 && l.iterations == 2 && l.chainBreaks == 0)
        #expect(l.busyNanoseconds == 1_500 * Self.us, "1 ms after the wait in progress ended, 0.5 ms after the next")
        #expect(l.sleepNanoseconds == 7_500 * Self.us, "the wait in progress is not a sleep of known length")
        #expect(SummaryReport.text(try w.summarize()).contains("already waiting when the recording began"))
    }

    /// A thread outside its waits when `rlctl record --pid` attached: its first iteration's busy time counts from the
    /// attach (its earlier part is unknown), and the summary says so; a burn in it is a stall.
    @Test func aThreadOutsideItsWaitsAtTheAttachCountsItsFirstIterationFromThere() throws {
        var w = Waits()
        w.named(20, pid: 4242, process: "go-server", name: "go-server")
        func wait(_ from: UInt64, _ to: UInt64) -> TraceEvent.WaitBatch.Wait {
            .init(call: .epollPwait, target: 4, setSize: 128, timeout: -1, begin: from * Self.us, end: to * Self.us, ready: 1, error: 0)
        }
        w.add(70_000, 20, .waitBatch(.init(threadID: 20, waits: [
            .outsideWaits(at: 1_000 * Self.us, call: .epollPwait, target: 4), wait(41_000, 50_000), wait(51_000, 70_000),
        ])))
        let s = try w.summarize()
        let l = try #require(s.waits?.loops.first)
        #expect(l.busyAtStart == true && l.waitingAtStart == nil)
        #expect(l.waits == 2 && l.iterations == 2 && l.busyNanoseconds == 41 * Self.ms && l.stalls == 1)
        #expect(SummaryReport.text(s).contains("outside its wait when the recording began (its first iteration counts from then"))
    }

    /// Two threads of one process taking turns at one epoll descriptor (Go's netpoller, tokio's workers): one wait
    /// set, listed as one loop with its threads as well as thread by thread. With the kernel view, the time a thread
    /// was blocked outside the wait (parked on a futex while the other held the loop) is parked, not busy, and is no
    /// stall; the other thread's 28 ms on the CPU is one.
    @Test(arguments: [true, false])
    func threadsTakingTurnsAtOneEpollSetAreOneLoopAndParkedTimeIsNotBusy(kernelView: Bool) throws {
        var w = Waits()
        if kernelView { w.add(0, 0, .kernelBegin(pid: 4242, command: "server")) }
        w.named(20, pid: 4242, process: "server", name: "server")
        w.named(21, pid: 4242, process: "server", name: "worker")
        w.wait(20, timeout: -1, from: 0, to: 10_000, ready: 1)
        w.wait(21, timeout: -1, from: 1_000, to: 12_000, ready: 1)
        if kernelView {
            // Thread 20 parks on a futex (202) from 11 to 19 ms while thread 21 runs the loop.
            w.add(19_000, 0, .kernelOffCPU(.init(threadID: 20, reason: .sleeping, syscall: 202, left: 11_000 * Self.us, woken: 19_000 * Self.us,
                                                 back: 19_000 * Self.us, cpu: 0, wakerThreadID: 21, throttled: 0)))
        }
        w.wait(20, timeout: -1, from: 20_000, to: 30_000, ready: 1)
        w.wait(21, timeout: -1, from: 40_000, to: 50_000, ready: 1)   // 28 ms of work on the CPU before it
        w.wait(20, timeout: -1, from: 31_000, to: 52_000, ready: 1)
        let waits = try #require(try w.summarize().waits)
        let set = try #require(waits.sets?.first)
        #expect(waits.sets?.count == 1)
        #expect(set.pid == 4242 && set.target == 5 && set.threads == [20, 21] && set.threadNames == ["server", "worker"])
        #expect(set.iterations == 3 && set.stalls == 1 && set.worstStalls.first?.threadID == 21 && set.worstStalls.first?.busyNanoseconds == 28 * Self.ms)
        let server = try #require(waits.loops.first { $0.threadID == 20 })
        #expect(server.sharedWith == [21])
        if kernelView {
            #expect(server.parkedNanoseconds == 8 * Self.ms && server.parkedSeparated == true)
            #expect(server.busyNanoseconds == 3 * Self.ms, "10 → 20 ms less 8 ms parked, then 30 → 31 ms")
            #expect(server.stalls == 0)
            #expect(set.parkedNanoseconds == 8 * Self.ms && set.parkedSeparated)
            #expect(set.busyNanoseconds == 31 * Self.ms)
        } else {
            // Without the kernel view the parked time cannot be told apart: it is busy, and the summary says so.
            #expect(server.parkedNanoseconds == 0 && server.parkedSeparated == false)
            #expect(server.busyNanoseconds == 11 * Self.ms)
            #expect(!set.parkedSeparated)
        }
        let text = SummaryReport.text(try w.summarize())
        #expect(text.contains("wait set: server (pid 4242), epoll fd 5 — one loop, waited on by 2 threads: server (tid 20), worker (tid 21)"))
        #expect(text.contains("shares its wait set with thread 21 (the wait set above)"))
        #expect(text.contains("could not be told from busy time") == !kernelView)
    }

    /// A thread of a shared set that ran 30 ms after its last wait, then parked until the end (the other thread held
    /// the loop): its last iteration, which no wait ended, is counted up to its last return to a CPU, its work a
    /// stall, its parking not busy.
    @Test func aParkedThreadsLastIterationIsCountedUpToItsLastReturnToACPU() throws {
        var w = Waits()
        w.add(0, 0, .kernelBegin(pid: 4242, command: "server"))
        w.named(20, pid: 4242, process: "server", name: "server")
        w.named(21, pid: 4242, process: "server", name: "worker")
        w.wait(20, timeout: -1, from: 0, to: 10_000, ready: 1)
        w.wait(21, timeout: -1, from: 1_000, to: 12_000, ready: 1)
        w.wait(21, timeout: -1, from: 13_000, to: 50_000, ready: 1)
        w.wait(20, timeout: -1, from: 11_000, to: 60_000, ready: 1)
        // Thread 21 works from 50 to 80 ms, then parks on a futex until 100 ms, and never waits again.
        w.add(100_000, 0, .kernelOffCPU(.init(threadID: 21, reason: .sleeping, syscall: 202, left: 80_000 * Self.us, woken: 99_000 * Self.us,
                                              back: 100_000 * Self.us, cpu: 0, wakerThreadID: 20, throttled: 0)))
        w.wait(20, timeout: -1, from: 61_000, to: 110_000, ready: 1)
        let s = try w.summarize()
        let worker = try #require(s.waits?.loops.first { $0.threadID == 21 })
        #expect(worker.lastIterationUnended == true)
        #expect(worker.iterations == 2 && worker.stalls == 1 && worker.worstStalls.first?.busyNanoseconds == 31 * Self.ms)
        #expect(worker.parkedNanoseconds == 19 * Self.ms)
        #expect(SummaryReport.text(s).contains("its last iteration had not ended (parked outside its wait until the end)"))
    }

    /// The same descriptor number in two processes is two sets of their own: nothing is shared across processes.
    @Test func theSameDescriptorInTwoProcessesIsNotOneSet() throws {
        var w = Waits()
        w.named(20, pid: 4242, process: "a", name: "a")
        w.named(30, pid: 4343, process: "b", name: "b")
        for start in stride(from: UInt64(0), to: 100_000, by: 10_000) {
            w.wait(20, timeout: -1, from: start, to: start + 8_000, ready: 1)
            w.wait(30, timeout: -1, from: start + 1_000, to: start + 9_000, ready: 1)
        }
        let waits = try #require(try w.summarize().waits)
        #expect(waits.sets == nil)
        #expect(waits.loops.allSatisfy { $0.sharedWith == nil && $0.parkedNanoseconds == nil })
    }

    /// Go's 5 ms ticker, as its netpoller waits for it: `epoll_pwait` for 128 events with whole milliseconds, rounded
    /// down, so each tick is a 4 ms wait that times out before the tick, then, 15 µs later, a 1 ms rest for the
    /// remaining fraction, taken by whichever runtime thread polls next.
    static func goTicker(events: UInt32 = 128, threads: [Int32] = [20, 21]) -> Waits {
        var w = Waits()
        for thread in threads { w.named(thread, pid: 4242, process: "ticker", name: "ticker") }
        var at: UInt64 = 0
        for tick in 0..<10 {
            let first = threads[tick % threads.count], second = threads[(tick + 1) % threads.count]
            w.wait(first, events: events, timeout: 4_000, from: at, to: at + 4_050, ready: 0)
            w.wait(second, events: events, timeout: 1_000, from: at + 4_065, to: at + 5_100, ready: 0)
            at += 5_200
        }
        return w
    }

    /// Both waits of each tick are on time, yet the tick is late: the rests are named as Go's rounding (issue 29,
    /// item 3), on the set and on the thread that took each.
    @Test func goNetpollersMillisecondRestsAreNamedOnTheSetAndTheThreadThatTookThem() throws {
        let summary = try Self.goTicker().summarize()
        let waits = try #require(summary.waits)
        let set = try #require(waits.sets?.first)
        #expect(set.millisecondRests == 10 && set.blockingWaits == 20)
        #expect(waits.loops.map { $0.millisecondRests } == [5, 5])
        let text = SummaryReport.text(summary)
        #expect(text.contains("rounded up to a millisecond (Go's netpoller, by its shape: threads taking turns at epoll_pwait for 128 events): 10 of 20 blocking waits (50.0%) were a 1 ms rest right after a longer wait timed out"), "\(text)")
        #expect(text.contains("128 events): 5 of 10 blocking waits (50.0%)"))
        #expect(SummaryReport.markdown(summary).contains("ticker (pid 4242), epoll fd 5, rounded up to a millisecond"))
        #expect(HTMLReport.summary(summary, context: .init(title: "ticker")).contains("1 ms rests (Go&#39;s rounding)"))
    }

    /// The kernel recorder sends each thread's waits in batches, read thread by thread: here every rest of thread 21
    /// is read before the timed-out wait of thread 20 it follows, and the pairs are the same.
    @Test func restsPairWithTheirWaitsWhateverTheOrderTheyAreRead() throws {
        let ticker = Self.goTicker()
        var batched = Waits()
        batched.named(20, pid: 4242, process: "ticker", name: "ticker")
        batched.named(21, pid: 4242, process: "ticker", name: "ticker")
        for (sentAt, thread) in [(UInt64(60_000), Int32(21)), (60_001, 20)] {
            var waits: [TraceEvent.WaitBatch.Wait] = []
            var open: TraceEvent?
            for event in ticker.sorted where event.threadID == thread {
                if case .waitBegin = event.payload { open = event }
                if case .waitEnd(let ready, let error) = event.payload, let begin = open,
                   case .waitBegin(let call, let target, let setSize, let timeout) = begin.payload {
                    waits.append(.init(call: call, target: target, setSize: setSize, timeout: timeout, begin: begin.timestamp,
                                       end: event.timestamp, ready: ready, error: error))
                }
            }
            batched.add(sentAt, thread, .waitBatch(.init(threadID: thread, waits: waits)))
        }
        let waits = try #require(try batched.summarize().waits)
        #expect(waits.sets?.first?.millisecondRests == 10)
        #expect(waits.loops.map { $0.millisecondRests } == [5, 5])
    }

    /// The same waits in a loop that is not Go's netpoller (another set size, or one thread alone at its
    /// descriptor) are no named cause: two deadlines 1 ms apart make them too (libuv's timers).
    @Test(arguments: [true, false])
    func theSameWaitsElsewhereAreNoNamedCause(otherSetSize: Bool) throws {
        let summary = try (otherSetSize ? Self.goTicker(events: 64) : Self.goTicker(threads: [20])).summarize()
        #expect(summary.waits?.loops.allSatisfy { $0.millisecondRests == nil } == true)
        #expect(summary.waits?.sets?.allSatisfy { $0.millisecondRests == nil } ?? true)
        #expect(!SummaryReport.text(summary).contains("rounded up to a millisecond"))
    }

    /// What is not a rest, even in Go's shape: a 1 ms wait after a wait that returned events, one begun after work
    /// (more than 100 µs later), one after a 1 ms wait (each its own deadline).
    @Test func oneMillisecondWaitsThatRoundNothingAreNoRests() throws {
        var w = Waits()
        w.named(20, pid: 4242, process: "server", name: "server")
        w.named(21, pid: 4242, process: "server", name: "server")
        var at: UInt64 = 0
        for _ in 0..<5 {
            w.wait(20, events: 128, timeout: 1_000, from: at, to: at + 1_060, ready: 0)
            at += 1_080
        }
        w.wait(21, events: 128, timeout: 4_000, from: at, to: at + 2_000, ready: 2)
        w.wait(20, events: 128, timeout: 1_000, from: at + 2_010, to: at + 3_020, ready: 0)
        w.wait(21, events: 128, timeout: 4_000, from: at + 3_030, to: at + 7_040, ready: 0)
        w.wait(20, events: 128, timeout: 1_000, from: at + 7_300, to: at + 8_310, ready: 0)
        let summary = try w.summarize()
        #expect(summary.waits?.sets?.count == 1)
        #expect(summary.waits?.loops.allSatisfy { $0.millisecondRests == nil } == true)
        #expect(!SummaryReport.text(summary).contains("rounded up to a millisecond"))
    }

    @Test func theTextReportHasASectionPerLoopAndSaysWhatIsNotAvailableOnce() throws {
        var w = Self.nodeLoop()
        w.named(21, pid: 4242, process: "node", name: "libuv-worker")
        w.wait(21, fd: 6, timeout: -1, from: 1_000, to: 5_000, ready: 1)
        w.wait(21, fd: 6, timeout: -1, from: 6_000, to: 9_000, ready: 1)
        let s = try w.summarize()
        let text = SummaryReport.text(s)
        #expect(text == """
            verdict:
              2 stalls (iterations busier than 16.0ms); worst 30.0ms on wait loop node (pid 4242) thread node, epoll fd 5
              1 wait woke later than 1.00ms past its timeout (worst 2.00ms)
            trace: 22 events, none lost, every run complete

            wait loop: node (pid 4242) thread node (tid 20), epoll fd 5 — epoll_pwait 8
              iterations 7 (63.6/s), busy 54.0ms, asleep 56.0ms, utilization 49.1%
              busy per iteration (wait end → next wait): n=7  min 400us  p50 1.00ms  p90 30.0ms  p99 30.0ms  p99.9 30.0ms  max 30.0ms
                   ≤ 524us ██████████████████████████████ 2
                  ≤ 1.05ms ██████████████████████████████ 2
                  ≤ 2.10ms ███████████████ 1
                  ≤ 33.6ms ██████████████████████████████ 2
              sleep (one blocking wait): n=7  min 500us  p50 8.00ms  p90 20.0ms  p99 20.0ms  p99.9 20.0ms  max 20.0ms
              wake causes: ready 2 (25.0%), timed out 3 (37.5%), interrupted (EINTR) 1 (12.5%), failed 1 (12.5%); non-blocking checks (timeout 0, not sleeps) 1 (12.5%, 1 found events)
              wake lateness (sleep − timeout of waits that timed out): n=3  min 0ns  p50 500us  p90 2.00ms  p99 2.00ms  p99.9 2.00ms  max 2.00ms; 1 woke more than 1.00ms late
              ready events per wake-up: p50 1  p99 3  max 3  mean 2.00  (n=2)
              stalls (> threshold): 2 iterations busier than 16.0ms; worst: 30.0ms at +20.6ms, 20.0ms at +70.0ms

            wait loop: node (pid 4242) thread libuv-worker (tid 21), epoll fd 6 — epoll_pwait 2
              iterations 1 (125/s), busy 1.00ms, asleep 7.00ms, utilization 12.5%
              busy per iteration (wait end → next wait): n=1  min 1.00ms  p50 1.00ms  p90 1.00ms  p99 1.00ms  p99.9 1.00ms  max 1.00ms
                  ≤ 1.05ms ██████████████████████████████ 1
              sleep (one blocking wait): n=2  min 3.00ms  p50 3.00ms  p90 4.00ms  p99 4.00ms  p99.9 4.00ms  max 4.00ms
              wake causes: ready 2 (100%), timed out 0 (0.00%), interrupted (EINTR) 0 (0.00%), failed 0 (0.00%); non-blocking checks (timeout 0, not sleeps) 0 (0.00%, 0 found events)
              wake lateness (sleep − timeout of waits that timed out): none (no wait timed out with a timeout > 0)
              ready events per wake-up: p50 1  p99 1  max 1  mean 1.00  (n=2)
              stalls (> threshold): 0 iterations busier than 16.0ms

            all wait loops: 2 loop(s), 8 iterations, utilization mean 30.8%, max 49.1% (node (pid 4242) thread node, epoll fd 5), 2 stalls; worst: 30.0ms at +20.6ms in node (pid 4242) thread node, epoll fd 5, 20.0ms at +70.0ms in node (pid 4242) thread node, epoll fd 5
              not available: callout-level figures for wait loops (which callout ran or stalled, timers, sources, wake-up latency: from outside the program only its wait calls show)
            """, "\(text)")
        #expect(text.components(separatedBy: "not available").count == 2, "said once")
    }

    @Test func markdownAndJSONHaveTheWaitLoopsAndNoEmptyRunLoopFigures() throws {
        let s = try Self.withRareWaiters().summarize()
        let markdown = SummaryReport.markdown(s)
        #expect(markdown.contains("#### Wait loops (any program)"), "\(markdown)")
        #expect(markdown.contains("| redis-server (pid 70) thread redis-server (tid 60), epoll fd 4 | epoll_pwait 12 | 2.44 |"), "\(markdown)")
        #expect(markdown.contains("| 0 / 12 / 0 / 0 / 0 |"), "\(markdown)")
        #expect(markdown.contains("- threads that waited rarely (fewer than 10 waits and less than one per second; not loops): redis-server (pid 70) thread bio_close_file, poll/select (2 waits, still waiting at the end); redis-server (pid 70) thread bio_aof, epoll fd 9 (0 waits, still waiting at the end)."), "\(markdown)")
        #expect(markdown.components(separatedBy: "not available").count == 2, "\(markdown)")
        // No RunLoopCore or Foundation loop: no run figures, rather than a 0% utilization of nothing.
        #expect(!markdown.contains("Utilization **") && !markdown.contains("| metric |"), "\(markdown)")
        let text = SummaryReport.text(s)
        #expect(!text.contains("\nloop ") && !text.contains("NIO"), "\(text)")

        let json = try SummaryReport.json(s)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let waits = try #require(object["waits"] as? [String: Any])
        #expect((waits["notAvailable"] as? [String]) == TraceSummary.NotAvailable.wait)
        let loops = try #require(waits["loops"] as? [[String: Any]])
        #expect(loops.first?["iterations"] as? Int == 11 && (loops.first?["wakeCauses"] as? [String: Any])?["timedOut"] as? Int == 12)
        #expect((waits["rareWaiters"] as? [[String: Any]])?.count == 2)
        #expect(try JSONDecoder().decode(TraceSummary.self, from: Data(json.utf8)) == s)
        // A summary written before wait loops existed still loads, with none.
        var old = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        old["waits"] = nil
        let decoded = try JSONDecoder().decode(TraceSummary.self, from: try JSONSerialization.data(withJSONObject: old))
        #expect(decoded.waits == nil)
    }

    private func check(_ budget: String, _ summary: TraceSummary) throws -> BudgetCheck {
        BudgetCheck(budget: try Budget(text: budget, file: "test.budget"), report: RunReport(workload: "w", tracer: "embedded", repetitions: [summary]))
    }

    @Test func metricsReadTheWaitLoops() throws {
        let s = try Self.nodeLoop().summarize()
        func value(_ name: String) throws -> Double {
            let metric = try #require(Metric.named(name), "\(name)")
            #expect(metric.isMeasured(in: s), "\(name)")
            return metric.value(in: s)
        }
        #expect(try value("wait.iterations") == 7)
        #expect(try value("wait.utilization.mean") == 54.0 / 110.0 && value("wait.utilization.max") == 54.0 / 110.0)
        #expect(try value("wait.stalls.count") == 2 && value("wait.stalls.worst") == Double(30 * Self.ms))
        #expect(try value("wait.late_wakeups") == 1)
        let us = Self.us
        #expect(try value("wait.busy.max") == Double(Self.distribution([1_500 * us, 600 * us, 30_000 * us, 400 * us, 1_000 * us, 500 * us, 20_000 * us]).max))
        #expect(try value("wait.sleep.p50") == Double(Self.distribution([10_500 * us, 8_000 * us, 7_000 * us, 2_000 * us, 500 * us, 8_000 * us, 20_000 * us]).p50))
        #expect(try value("wait.lateness.max") == Double(Self.distribution([500 * us, 2 * Self.ms, 0]).max))
        #expect(try value("wait.ready_per_wakeup.max") == 3 && value("wait.ready_per_wakeup.mean") == 2)
        #expect(Metric.named("wait.ready_per_wakeup.p50")?.unit == .count)
        // The stall rules judge the wait loops of a trace that has nothing else.
        #expect(try value("stalls.count") == 2 && value("stalls.worst") == Double(30 * Self.ms))
        let failing = try check("stalls.count == 0\nwait.stalls.count == 0\n", s)
        #expect(failing.verdicts.map(\.passed) == [false, false] && !failing.verdicts.contains(where: \.noData) && failing.failed == 2)
        // `check --stall 50ms`: the same trace summarized with a higher threshold has no stall.
        let passing = try check("stalls.count == 0\nwait.stalls.count == 0\nwait.utilization.max <= 50%\nwait.lateness.max <= 3ms\n",
                                try Self.nodeLoop().summarize(stall: 50 * Self.ms))
        #expect(passing.passed, "\(passing.render(.text))")
    }

    /// A RunLoopCore run of one iteration on thread 7: `busy` ms of work, then asleep until `end`.
    static func runLoop(busy: Double, end: Double) -> TraceBuilder {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .entry)
        t.activity(0, .beforeTimers)
        t.sleep(from: busy, to: end)
        t.activity(end, .exit)
        t.runEnd(end)
        return t
    }

    @Test func waitMetricsOnATraceWithoutWaitLoopsHaveNoDataAndSaySo() throws {
        let runLoop = try Self.runLoop(busy: 2, end: 10).summarize()
        let result = try check("wait.stalls.count == 0\nwait.busy.p99 <= 10ms\n", runLoop)
        #expect(!result.passed && result.verdicts.allSatisfy(\.noData))
        #expect(result.incompleteness == ["no data for wait.stalls.count (no wait loop in the trace), wait.busy.p99 (no wait loop in the trace)"])
        // Rare waiters are no loops: a trace of them alone has no wait-loop figures either.
        var w = Waits()
        w.wait(61, .poll, timeout: -1, from: 0, to: 2_000_000, ready: 1)
        w.add(5_000_000, 61, .waitBegin(call: .poll, target: -1, setSize: 1, timeout: -1))
        let rare = try w.summarize()
        #expect(rare.waits?.loops.isEmpty == true && rare.waits?.rareWaiters.count == 1)
        #expect(try check("wait.iterations >= 1\n", rare).verdicts.first?.noDataReason == "no wait loop in the trace")
        #expect(try check("stalls.count == 0\n", rare).verdicts.first?.noData == true)
        #expect(SummaryReport.text(rare).contains("all wait loops: none (no thread waited often enough to be a loop)"))
    }

    /// A RunLoopCore loop also recorded through its waits (`--any` on a program that traces itself) is one loop:
    /// stalls.count counts its stalls once, from its own events; a wait loop on another thread counts too.
    @Test func stallRulesCountALoopTracedBothWaysOnce() throws {
        var events = Self.runLoop(busy: 20, end: 28).events
        // The same thread (7) seen through its wait calls: the 20 ms of work is a stall there too.
        events.append(TraceEvent(timestamp: 0, threadID: 7, payload: .waitBegin(call: .epollWait, target: 3, setSize: 8, timeout: -1)))
        events.append(TraceEvent(timestamp: 1 * Self.ms, threadID: 7, payload: .waitEnd(ready: 1, error: 0)))
        events.append(TraceEvent(timestamp: 21 * Self.ms, threadID: 7, payload: .waitBegin(call: .epollWait, target: 3, setSize: 8, timeout: -1)))
        events.append(TraceEvent(timestamp: 28 * Self.ms, threadID: 7, payload: .waitEnd(ready: 1, error: 0)))
        // Another program's loop on thread 8 with a 30 ms stall.
        events.append(TraceEvent(timestamp: 0, threadID: 8, payload: .waitBegin(call: .poll, target: -1, setSize: 8, timeout: -1)))
        events.append(TraceEvent(timestamp: 2 * Self.ms, threadID: 8, payload: .waitEnd(ready: 1, error: 0)))
        events.append(TraceEvent(timestamp: 32 * Self.ms, threadID: 8, payload: .waitBegin(call: .poll, target: -1, setSize: 8, timeout: -1)))
        events.append(TraceEvent(timestamp: 33 * Self.ms, threadID: 8, payload: .waitEnd(ready: 1, error: 0)))
        let sorted = events.enumerated().sorted { ($0.element.timestamp, $0.offset) < ($1.element.timestamp, $1.offset) }.map(\.element)
        var reader = ArrayReader(sorted)
        let s = try TraceSummarizer.summarize(&reader)
        #expect(s.overall.stalls == 1 && s.waits?.overall.stalls == 2, "\(s.overall.worstStalls)")
        #expect(Metric.named("stalls.count")?.value(in: s) == Double(s.overall.stalls + 1))
        #expect(Metric.named("stalls.worst")?.value(in: s) == Double(30 * Self.ms))
    }

    @Test func theChromeExportHasASlicePerWaitThreadNamesAndAUtilizationCounter() throws {
        let path = temporaryPath("wait-chrome.json")
        defer { try? FileManager.default.removeItem(atPath: path) }
        var w = Self.nodeLoop()
        w.add(111_000, 20, .waitBegin(call: .epollPwait, target: 5, setSize: 64, timeout: -1))   // still waiting at the end
        w.add(112_000, 21, .waitEnd(ready: 1, error: 0))                                            // an end without its begin
        w.add(113_000, 21, .waitEnd(ready: 1, error: 0))
        var reader = ArrayReader(w.sorted)
        try TraceExporter.export(&reader, format: .chrome, to: path)
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        #expect(try ChromeTraceFile(path: path).violations() == [])
        let events = try #require(object?["traceEvents"] as? [[String: Any]])
        let slices = events.filter { ($0["cat"] as? String) == "wait" }
        #expect(slices.count == 9 && slices.allSatisfy { ($0["ph"] as? String) == "X" && ($0["tid"] as? Int) == 20 })
        #expect(slices.first?["name"] as? String == "wait epoll_pwait")
        let first = try #require(slices.first?["args"] as? [String: Any])
        #expect(first["timeout_ns"] as? Int == 10_000_000 && first["ready"] as? Int == 0 && first["error"] as? Int == 0 && first["target"] as? Int == 5)
        #expect("\(slices.first?["dur"] ?? "")" == "10500" || slices.first?["dur"] as? Double == 10500)
        let interrupted = try #require(slices.first { ($0["args"] as? [String: Any])?["error"] as? Int == 4 })
        #expect((interrupted["args"] as? [String: Any])?["ready"] as? Int == -1)
        #expect((slices.last?["args"] as? [String: Any])?["did_not_end"] as? String == "trace ended")
        // Complete slices only: nothing for viewers to pair up wrongly.
        #expect(!events.contains { ["B", "E"].contains($0["ph"] as? String) })
        let names = events.filter { ($0["name"] as? String) == "thread_name" }.compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
        #expect(names.contains("node (4242) node"), "\(names)")
        let counters = events.filter { ($0["ph"] as? String) == "C" }.map {
            "\($0["name"] ?? "") \(($0["args"] as? [String: Any])?["busy"] ?? "")"
        }
        // The first 100 ms window closes at the last wait's end (110 ms): 54 ms busy of 110.
        #expect(counters == ["utilization tid 20 epoll fd 5 0.491"], "\(counters)")
    }
}

import Analysis
import Exporter
import Foundation
import Glibc
import Testing

/// The live view's rows as Prometheus series (`rlctl top --serve`), on synthetic intervals with exact figures.
@Suite struct LoopSeriesTests {
    static func row(thread: Int32, kind: String = "RunLoopCore", iterations: UInt64, busy: UInt64, covered: UInt64, stalls: UInt64 = 0,
                    p99: UInt64? = nil, runQueue: UInt64? = nil, throttled: UInt64? = nil, lost: UInt64 = 0, program: String? = nil) -> LiveLoopRow {
        var row = LiveLoopRow(host: "h", session: "embedded /t", processID: 4242, threadID: thread, loopID: 1,
                              name: "main", kind: kind, utilization: Double(busy) / Double(covered), lostEvents: lost)
        row.program = program
        row.wakeLatencyP99Nanoseconds = p99
        row.iterations = iterations
        row.busyNanoseconds = busy
        row.coveredNanoseconds = covered
        row.stalls = stalls
        row.runQueueNanoseconds = runQueue
        row.throttledNanoseconds = throttled
        return row
    }

    static func interval(_ rows: [LiveLoopRow], kernel: Bool = false, kernelLost: UInt64 = 0) -> LiveInterval {
        var interval = LiveInterval(rows: rows, sessions: 1, problem: nil, nothingToWatch: "")
        if kernel { interval.kernel = .on }
        interval.kernelLostRecords = kernelLost
        return interval
    }

    /// The value of the one sample whose line starts with `series`.
    static func sample(_ exposition: String, _ series: String) -> Double? {
        exposition.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    static let labels = #"host="h",pid="4242",program="",runloop_thread="7",runloop_id="1",runloop_name="main",runloop_kind="RunLoopCore""#

    @Test func countersAddEveryIntervalAndGaugesTakeTheLast() {
        let series = LoopSeries()
        let start = ContinuousClock.now
        series.update(with: Self.interval([Self.row(thread: 7, iterations: 100, busy: 250_000_000, covered: 1_000_000_000, stalls: 1, p99: 40_000)]), now: start)
        series.update(with: Self.interval([Self.row(thread: 7, iterations: 60, busy: 500_000_000, covered: 1_000_000_000, stalls: 2)]), now: start + .seconds(1))
        let text = String(decoding: series.exposition(), as: UTF8.self)
        let l = Self.labels
        #expect(Self.sample(text, "runloop_iterations{\(l)}") == 160)
        #expect(Self.sample(text, "runloop_stalls{\(l)}") == 3)
        #expect(Self.sample(text, "runloop_time{\(l),runloop_state=\"active\"}") == 0.75)
        #expect(Self.sample(text, "runloop_time{\(l),runloop_state=\"idle\"}") == 1.25)
        #expect(Self.sample(text, "runloop_utilization{\(l)}") == 0.5, "the last interval's")
        // The second interval measured no wake-up: no figure, not the first one's, not a zero.
        #expect(Self.sample(text, "runloop_wakeup_delay_p99{\(l)}")?.isNaN == true, "\(text)")
        #expect(Self.sample(text, "rlctl_loops") == 1)
        #expect(Self.sample(text, "rlctl_kernel_view") == 0)
        #expect(!text.contains("runloop_runqueue_time"), "no kernel view: no run-queue series at all")
        #expect(text.contains("# TYPE runloop_iterations counter") && text.contains("# TYPE runloop_utilization gauge"))
    }

    @Test func theKernelViewAddsRunQueueAndThrottledTimeAndItsLosses() {
        let series = LoopSeries()
        series.update(with: Self.interval([Self.row(thread: 7, iterations: 1, busy: 1, covered: 2, runQueue: 300_000_000, throttled: 200_000_000)],
                                          kernel: true, kernelLost: 3))
        series.update(with: Self.interval([Self.row(thread: 7, iterations: 1, busy: 1, covered: 2, runQueue: 100_000_000, throttled: 0)],
                                          kernel: true, kernelLost: 2))
        let text = String(decoding: series.exposition(), as: UTF8.self)
        #expect(Self.sample(text, "runloop_runqueue_time{\(Self.labels)}") == 0.4)
        #expect(Self.sample(text, "runloop_throttled_time{\(Self.labels)}") == 0.2)
        #expect(Self.sample(text, "rlctl_kernel_records_lost") == 5)
        #expect(Self.sample(text, "rlctl_kernel_view") == 1)
    }

    @Test func lossesAreCountedOncePerSessionNotOncePerLoop() {
        let series = LoopSeries()
        series.update(with: Self.interval([Self.row(thread: 7, iterations: 1, busy: 1, covered: 2, lost: 4),
                                           Self.row(thread: 8, iterations: 1, busy: 1, covered: 2, lost: 4)]))
        let text = String(decoding: series.exposition(), as: UTF8.self)
        #expect(Self.sample(text, #"rlctl_events_lost{session="h embedded /t"}"#) == 4)
    }

    @Test func aLoopNotSeenForTheExpiryOrWhoseProcessIsGoneHasNoSeriesLeft() {
        let series = LoopSeries(expireAfter: .seconds(60))
        let start = ContinuousClock.now
        series.update(with: Self.interval([Self.row(thread: 7, iterations: 1, busy: 1, covered: 2)]), now: start)
        series.update(with: Self.interval([]), now: start + .seconds(59))
        #expect(String(decoding: series.exposition(), as: UTF8.self).contains("runloop_iterations{"), "not expired yet")
        series.update(with: Self.interval([]), now: start + .seconds(60))
        var text = String(decoding: series.exposition(), as: UTF8.self)
        #expect(!text.contains("runloop_"), "every series of the loop ended: \(text)")
        #expect(Self.sample(text, "rlctl_loops") == 0)

        // This machine's loop (its program named) of a process that is gone: its last figures stay for goneAfter
        // (15 s), for a scrape to read them, then end.
        var dead = pid_t(0)
        repeat { dead = pid_t.random(in: 4_000_000...4_100_000) } while kill(dead, 0) == 0 || errno != ESRCH
        var row = Self.row(thread: 7, iterations: 1, busy: 1, covered: 2, program: "gone")
        row.processID = dead
        series.update(with: Self.interval([row]), now: start + .seconds(61))
        series.update(with: Self.interval([]), now: start + .seconds(75))
        text = String(decoding: series.exposition(), as: UTF8.self)
        #expect(text.contains("runloop_iterations{"), "gone 14 s ago: still there")
        series.update(with: Self.interval([]), now: start + .seconds(76))
        text = String(decoding: series.exposition(), as: UTF8.self)
        #expect(!text.contains("runloop_iterations{"), "\(text)")
    }

    @Test func loopsPastTheLimitAreCountedNotExported() {
        let series = LoopSeries(loopLimit: 2)
        series.update(with: Self.interval((1...3).map { Self.row(thread: $0, iterations: 1, busy: 1, covered: 2) }))
        let text = String(decoding: series.exposition(), as: UTF8.self)
        #expect(text.split(separator: "\n").filter { $0.hasPrefix("runloop_iterations{") }.count == 2)
        #expect(Self.sample(text, "rlctl_loops") == 2)
        #expect(Self.sample(text, "rlctl_loops_not_exported") == 1)
    }

    /// The kernel view's late time, one counter per cause, added interval by interval; a loop without it has none.
    @Test func lateTimeIsCountedByCause() {
        let series = LoopSeries()
        var late = TraceSummary.LateTimeByCause()
        late.runQueueNanoseconds = 30_000_000
        late.slackNanoseconds = 1_000_000
        late.explained = 2
        var row = Self.row(thread: 7, iterations: 1, busy: 1, covered: 2, runQueue: 0, throttled: 0)
        row.lateTime = late
        series.update(with: Self.interval([row, Self.row(thread: 8, iterations: 1, busy: 1, covered: 2)], kernel: true))
        late.runQueueNanoseconds = 10_000_000
        late.loopWorkNanoseconds = 5_000_000
        row.lateTime = late
        series.update(with: Self.interval([row], kernel: true))
        let text = String(decoding: series.exposition(), as: UTF8.self)
        let l = Self.labels
        #expect(Self.sample(text, "runloop_late_time{\(l),cause=\"run_queue\"}") == 0.04)
        #expect(Self.sample(text, "runloop_late_time{\(l),cause=\"slack\"}") == 0.002)
        #expect(Self.sample(text, "runloop_late_time{\(l),cause=\"loop_work\"}") == 0.005)
        #expect(Self.sample(text, "runloop_late_time{\(l),cause=\"throttled\"}") == 0)
        #expect(text.contains("# TYPE runloop_late_time counter"))
        #expect(!text.contains(#"runloop_thread="8",runloop_id="1",runloop_name="main",runloop_kind="RunLoopCore",cause"#), "no kernel figure, no series")
    }
}

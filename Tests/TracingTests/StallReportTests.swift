import Dispatch
import Foundation
@_spi(VirtualTime) import RunLoopCore
import Testing
import TraceReading
import Tracing

/// A sink that keeps one loop's stall reports, hang reports and the start of each iteration (virtual time).
private final class StallLog: LoopEventSink, @unchecked Sendable {
    let loopID = Shared<UInt64>(0)
    let kernel: VirtualKernel?
    let stalls = Shared<[(iteration: UInt64, start: UInt64, busy: UInt64, threshold: UInt64, culprit: Culprit)]>([])
    let hangs = Shared<[(loopID: UInt64, iteration: UInt64, busy: UInt64, threshold: UInt64)]>([])
    /// Iteration number → the virtual time its beforeTimers was reported at.
    let iterationStarts = Shared<[UInt64: UInt64]>([:])

    init(kernel: VirtualKernel? = nil) {
        self.kernel = kernel
    }

    override func activity(_ activity: Loop.Activity, _ context: Context) {
        guard context.loopID == loopID.value, activity == .beforeTimers, let kernel else { return }
        iterationStarts.mutate { $0[context.iteration] = kernel.now.nanoseconds }
    }

    override func loopStall(_ context: Context, start: UInt64, busy: UInt64, threshold: UInt64, culprit: Culprit) {
        guard context.loopID == loopID.value else { return }
        stalls.mutate { $0.append((context.iteration, start, busy, threshold, culprit)) }
    }

    override func loopHang(loopID: UInt64, iteration: UInt64, busy: UInt64, threshold: UInt64) {
        guard loopID == self.loopID.value else { return }
        hangs.mutate { $0.append((loopID, iteration, busy, threshold)) }
    }
}

private let ms: UInt64 = 1_000_000

/// Runs `body` on a new thread whose loop runs on a virtual kernel, with a ``StallLog`` installed for that loop and
/// `threshold` as ``Loop/stallThreshold``; returns the log.
private func tracedVirtualLoop(threshold: Duration?, _ body: @escaping @Sendable (VirtualKernel, Loop) -> Void) -> StallLog {
    recordingLock.lock()
    defer { recordingLock.unlock() }
    let kernel = VirtualKernel()
    let sink = StallLog(kernel: kernel)
    LoopEventSink.install(sink)
    defer { LoopEventSink.install(nil) }
    Loop.stallThreshold = threshold
    defer { Loop.stallThreshold = nil }
    onThread {
        let loop = Loop.makeCurrent(on: kernel)
        sink.loopID.value = loop.id
        body(kernel, loop)
    }
    return sink
}

/// Issue 15, item 1: a loop reports its own stalls (`loop_stall`) when an iteration's busy time passes
/// ``Loop/stallThreshold``, with the callout that ran longest; a watchdog reports a loop still stuck.
@Suite(.serialized) struct StallReportTests {
    /// In virtual time, so every figure is exact: busy time is the iteration's time minus its sleeps (a nested
    /// run's included), the culprit is the longest callout, and iterations at or under the threshold say nothing.
    @Test func anIterationBusierThanTheThresholdIsReportedWithItsLongestCallout() throws {
        let ids = Shared<(render: UInt64, nest: UInt64, spin: UInt64, start: UInt64)>((0, 0, 0, 0))

        let sink = tracedVirtualLoop(threshold: .milliseconds(50)) { kernel, loop in
            let start = kernel.now
            // Iteration A: sleeps 10 ms, then `render` (80 ms) queues a 30 ms block that runs in the same pass:
            // 110 ms busy, the culprit `render`.
            let render = LoopTimer(fireAt: start.advanced(by: .milliseconds(10)), label: "render") { _ in
                kernel.advanceTime(by: .milliseconds(80))
                Loop.current.perform { kernel.advanceTime(by: .milliseconds(30)) }
            }
            // Iteration B: `nest` runs a nested run that sleeps 100 ms, then works 20 ms: 20 ms busy, no report.
            let nest = LoopTimer(fireAt: start.advanced(by: .milliseconds(300)), label: "nest") { _ in
                let inner = Loop.Mode("inner")
                let keepAlive = LoopSource {}
                Loop.current.add(keepAlive, forMode: inner)
                Loop.current.run(mode: inner, timeout: .milliseconds(100))
                Loop.current.remove(keepAlive, forMode: inner)
                kernel.advanceTime(by: .milliseconds(20))
            }
            // Iteration C: exactly the threshold is not a stall; D: one nanosecond more is.
            let atThreshold = LoopTimer(fireAt: start.advanced(by: .milliseconds(600)), label: "at-threshold") { _ in
                kernel.advanceTime(by: .milliseconds(50))
            }
            let spin = LoopTimer(fireAt: start.advanced(by: .milliseconds(900)), label: "spin") { _ in
                kernel.advanceTime(by: .nanoseconds(50_000_001))
            }
            ids.value = (render.id, nest.id, spin.id, start.nanoseconds)
            let keepAlive = LoopSource {}
            loop.add(keepAlive, forMode: .default)
            for timer in [render, nest, atThreshold, spin] { loop.add(timer, forMode: .default) }
            loop.run(mode: .default, timeout: .seconds(1))
        }

        let stalls = sink.stalls.value
        try #require(stalls.count == 2, "\(stalls.map { ($0.iteration, $0.busy, $0.culprit.label) })")
        let starts = sink.iterationStarts.value
        let base = ids.value.start
        // A: began at the run's start (its first iteration), slept 10 ms, 110 ms busy.
        #expect(stalls[0].start == base)
        #expect(starts[stalls[0].iteration] == base)
        #expect(stalls[0].busy == 110 * ms)
        #expect(stalls[0].threshold == 50 * ms)
        #expect(stalls[0].culprit == .init(kind: .timer, id: ids.value.render, duration: 80 * ms, label: "render"))
        // D: 50 ms + 1 ns, the only callout of its iteration.
        #expect(stalls[1].busy == 50 * ms + 1)
        #expect(starts[stalls[1].iteration] == stalls[1].start)
        #expect(stalls[1].culprit == .init(kind: .timer, id: ids.value.spin, duration: 50 * ms + 1, label: "spin"))
    }

    @Test func withoutAThresholdNothingIsReported() throws {
        let sink = tracedVirtualLoop(threshold: nil) { kernel, loop in
            loop.add(LoopTimer(after: .zero, label: "slow") { _ in kernel.advanceTime(by: .seconds(5)) }, forMode: .default)
            loop.add(LoopSource {}, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(10))
        }
        #expect(sink.stalls.value.isEmpty)
    }

    /// The watchdog reports a loop stuck in one callout while it is still stuck: from the first look that saw it
    /// busy, once per iteration, on the loop's own (virtual) clock; a loop that waits is not stuck.
    @Test func theWatchdogReportsALoopStillStuckOncePerIteration() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let kernel = VirtualKernel()
        let sink = StallLog()
        LoopEventSink.install(sink)
        defer { LoopEventSink.install(nil) }
        let reports = Shared<[LoopWatchdog.Hang]>([])
        let watchdog = LoopWatchdog(threshold: .milliseconds(100), startsThread: false) { hang in
            reports.mutate { $0.append(hang) }
        }
        let inCallout = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let loopReady = DispatchSemaphore(value: 0)
        let loopBox = Shared<Loop?>(nil)
        let thread = JoinableThread {
            let loop = Loop.makeCurrent(on: kernel)
            sink.loopID.value = loop.id
            loopBox.value = loop
            loop.add(LoopSource {}, forMode: .default)
            loop.add(LoopTimer(fireAt: kernel.now.advanced(by: .milliseconds(10)), label: "stuck") { _ in
                inCallout.signal()
                release.wait()
            }, forMode: .default)
            loopReady.signal()
            loop.run(mode: .default, timeout: .milliseconds(500))
        }
        thread.start()
        loopReady.wait()
        let loop = try #require(loopBox.value)
        watchdog.watch(loop)
        inCallout.wait()
        watchdog.check()                                   // first look: busy since now
        kernel.advanceTime(by: .milliseconds(60))
        watchdog.check()                                   // 60 ms: not yet
        #expect(reports.value.isEmpty)
        kernel.advanceTime(by: .milliseconds(50))
        watchdog.check()                                   // 110 ms: reported
        kernel.advanceTime(by: .milliseconds(200))
        watchdog.check()                                   // still the same iteration: not again
        release.signal()
        thread.join()
        watchdog.check()                                   // the run is over: nothing to report
        watchdog.stop()

        let hangs = reports.value
        try #require(hangs.count == 1, "\(hangs)")
        #expect(hangs[0].loopID == loop.id)
        #expect(hangs[0].threadID == loop.threadID)
        #expect(hangs[0].busyAtLeast == .milliseconds(110))
        #expect(hangs[0].threshold == .milliseconds(100))
        #expect(sink.hangs.value.count == 1)
        #expect(sink.hangs.value.first?.busy == 110 * ms)
        #expect(sink.hangs.value.first?.iteration == hangs[0].iteration)
    }

    /// Real time, through the embedded recorder: the stall events land in the trace with the culprit's label, and
    /// the watchdog's thread reports a hang while the loop is still in the slow callout.
    @Test func stallAndHangEventsAreRecordedAndReadBack() throws {
        let loopID = Shared<UInt64>(0)
        // The iterations of the slow callouts, as the watchdog reported them: a preemption on a loaded machine may
        // make other stalls and hangs, which this test does not count.
        let slowIterations = Shared<Set<UInt64>>([])
        let (folder, summary) = try record("stall-events") {
            // Inside the recording lock: the threshold is process-wide.
            Loop.stallThreshold = .milliseconds(20)
            defer { Loop.stallThreshold = nil }
            let reported = Shared<[UInt64]>([])
            let watchdog = LoopWatchdog(threshold: .milliseconds(15), checkInterval: .milliseconds(2)) { hang in
                reported.mutate { $0.append(hang.iteration) }
            }
            let thread = JoinableThread {
                let loop = Loop.current
                loopID.value = loop.id
                watchdog.watch(loop)
                let firings = Shared(0)
                loop.add(LoopTimer(after: .milliseconds(1), interval: .milliseconds(5), label: "frame") { timer in
                    firings.value += 1
                    if firings.value % 3 == 0 {
                        // 40 ms, and longer if the watchdog's thread has not had its look yet (a loaded machine).
                        let before = reported.value.count
                        usleep(40_000)
                        // Bounded well inside the run's 5 s: an iteration the watchdog had already reported
                        // (a preemption just before the callout) is not reported again.
                        _ = eventually(timeout: .seconds(2)) { reported.value.count > before }
                        if let iteration = reported.value.last { slowIterations.mutate { $0.insert(iteration) } }
                    }
                    if firings.value == 9 { timer.invalidate() }
                }, forMode: .default)
                loop.run(mode: .default, timeout: .seconds(5))
            }
            thread.start()
            thread.join()
            watchdog.stop()
        }
        #expect(summary.eventsLost == 0)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        let stalls = events.compactMap { event -> TraceEvent.LoopStall? in
            if case .loopStall(let stall) = event.payload, stall.loopID == loopID.value { return stall }
            return nil
        }
        #expect(slowIterations.value.count == 3, "each slow callout's iteration reported once: \(slowIterations.value)")
        let slow = stalls.filter { slowIterations.value.contains($0.iteration) }
        #expect(slow.count == 3, "\(stalls)")
        for stall in slow {
            #expect(stall.culpritKind == .timer)
            #expect(stall.culpritLabel == "frame")
            #expect(stall.culpritDuration >= 40 * ms && stall.culpritDuration <= stall.busy)
            #expect(stall.threshold == 20 * ms)
            #expect(stall.mode == "kCFRunLoopDefaultMode")
        }
        let hangs = events.filter {
            if case .loopHang(let loop, let iteration, _, _) = $0.payload { return loop == loopID.value && slowIterations.value.contains(iteration) }
            return false
        }
        // Each 40 ms callout passes the 15 ms watchdog threshold while it runs: one report each, before its stall.
        #expect(hangs.count == 3, "\(hangs)")
        for (hang, stall) in zip(hangs, slow) {
            guard case .loopHang(_, let iteration, let busy, _) = hang.payload else { continue }
            #expect(iteration == stall.iteration)
            #expect(busy >= 15 * ms && busy < stall.busy)
        }
    }
}

@testable import Analysis
import Foundation
import RunLoopCore
import Testing
import TraceModel

/// The kernel view's events, added to a TraceBuilder trace (thread 7) in milliseconds.
extension TraceBuilder {
    /// Kernel events come from the kernel recorder's stream, not the loop's thread: their own thread id is not 7.
    private mutating func kernel(_ ms: Double, _ payload: TraceEvent.Payload) {
        events.append(TraceEvent(timestamp: Self.ns(ms), threadID: 0, payload: payload))
    }

    mutating func kernelBegin(_ ms: Double, pid: Int32 = 7, command: String = "jank") { kernel(ms, .kernelBegin(pid: pid, command: command)) }

    mutating func task(_ tid: Int32, pid: Int32, _ command: String) { kernel(0, .kernelTask(threadID: tid, pid: pid, command: command)) }

    /// One time `thread` was off its CPU, stamped at `back`, with the timer that woke it and who held its CPU just
    /// before it, as the kernel recorder writes them. `woken` defaults to `left` (it left runnable).
    mutating func offCPU(_ reason: KernelOffCPUReason, left: Double, woken: Double? = nil, back: Double, cpu: Int32 = 0, syscall: Int32 = -1,
                         throttled: Double = 0, timer: (due: Double, latest: Double, fired: Double)? = nil,
                         culprits: [(tid: Int32, ms: Double)] = [], others: Double = 0, thread: Int32 = 7) {
        if let timer {
            kernel(back, .kernelTimer(threadID: thread, due: Self.ns(timer.due), latest: Self.ns(timer.latest), fired: Self.ns(timer.fired)))
        }
        if !culprits.isEmpty || others > 0 {
            kernel(back, .kernelRunQueue(.init(threadID: thread, cpu: cpu, others: Self.ns(others),
                                                culprits: culprits.map { .init(threadID: $0.tid, nanoseconds: Self.ns($0.ms)) })))
        }
        kernel(back, .kernelOffCPU(.init(threadID: thread, reason: reason, syscall: syscall, left: Self.ns(left), woken: Self.ns(woken ?? left),
                                         back: Self.ns(back), cpu: cpu, wakerThreadID: reason.leftRunnable ? -1 : 0, throttled: Self.ns(throttled))))
    }

    /// A trace whose kernel view began at 0 and names `tasks`, with a run of thread 7's loop begun at 0 (its
    /// first BeforeTimers).
    static func kernelViewedRun(naming tasks: [(tid: Int32, pid: Int32, command: String)]) -> TraceBuilder {
        var t = TraceBuilder()
        t.kernelBegin(0)
        for task in tasks { t.task(task.tid, pid: task.pid, task.command) }
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        return t
    }

    mutating func kernelLost(_ records: UInt64, from: Double, at: Double) { kernel(at, .kernelLost(records: records, from: Self.ns(from))) }

    /// The events in time order (the order a reader merges streams in), equal times in the order added.
    var inTimeOrder: TraceBuilder {
        var copy = self
        copy.events = events.enumerated().sorted { ($0.element.timestamp, $0.offset) < ($1.element.timestamp, $1.offset) }.map(\.element)
        return copy
    }
}

@Suite struct KernelCauseTests {
    static func ms(_ value: Double) -> UInt64 { TraceBuilder.ns(value) }

    /// `jank` beside two CPU hogs: a 41 ms timer callout that ran 5 ms and waited 36 ms for CPU 0, held by two `sh`.
    static func jankBesideHogs() -> TraceBuilder {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.task(4242, pid: 4242, "sh")
        t.task(4243, pid: 4243, "sh")
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.add(0, .itemLabel(itemID: 1, kind: .timer, label: "jank-1"))
        t.offCPU(.sleeping, left: 0.6, woken: 9.95, back: 9.98, syscall: 232, timer: (9.9, 9.95, 9.95), culprits: [(4242, 0.03)])
        t.sleep(from: 0.5, to: 10)
        t.timer(1, scheduled: 10, at: 10, until: 51)
        t.offCPU(.preempted, left: 11, back: 23, culprits: [(4242, 12)])
        t.offCPU(.preempted, left: 24, back: 36, culprits: [(4243, 12)])
        t.offCPU(.preempted, left: 38, back: 50, culprits: [(4242, 8), (4243, 4)])
        t.activity(51, .beforeTimers)
        t.activity(52, .exit)
        t.runEnd(52)
        return t.inTimeOrder
    }

    @Test func aCalloutBesideHogsIsItsTimeOnTheCPUAndItsWaitForOne() throws {
        let s = try Self.jankBesideHogs().summarize()
        let loop = try #require(s.loops.first)
        let callout = try #require(loop.slowestCallouts.first)
        #expect(callout.durationNanoseconds == Self.ms(41))
        let k = try #require(callout.kernel)
        #expect(k.onCPUNanoseconds == Self.ms(5) && k.runQueueNanoseconds == Self.ms(36))
        #expect(k.throttledNanoseconds == 0 && k.blockedNanoseconds == 0 && k.asleepNanoseconds == nil && k.incomplete == nil)
        #expect(k.cpu == 0)
        #expect(k.culprits == [.init(threadID: 4242, pid: 4242, command: "sh", nanoseconds: Self.ms(20), cpu: 0),
                               .init(threadID: 4243, pid: 4243, command: "sh", nanoseconds: Self.ms(16), cpu: 0)])
        // The stall is the iteration: 41.5 ms busy (51 − 9.5 asleep), of which 36 ms waiting for the CPU.
        let stall = try #require(loop.worstStalls.first)
        #expect(stall.busyNanoseconds == Self.ms(41.5))
        #expect(stall.kernel?.onCPUNanoseconds == Self.ms(5.5) && stall.kernel?.runQueueNanoseconds == Self.ms(36))
        let facet = try #require(loop.kernel)
        #expect(facet.coversWholeLoop && facet.onCPUPerCallout == WaitLoopSummaryTests.distribution([Self.ms(5)]))
        #expect(facet.runQueuePerWakeUp == WaitLoopSummaryTests.distribution([Self.ms(0.03)]))
        // Two iterations: the jank one, and the second from 51 to the exit at 52.
        #expect(facet.onCPUPerIteration == WaitLoopSummaryTests.distribution([Self.ms(5.5), Self.ms(1)]))
        #expect(facet.busy.onCPUNanoseconds == Self.ms(6.5) && facet.busy.runQueueNanoseconds == Self.ms(36))
        // Utilization 42.5 / 52; of the busy time 6.5 of 42.5 ms on the CPU.
        #expect(abs(facet.onCPUShare - 6.5 / 52) < 1e-12)
        let text = SummaryReport.text(s)
        #expect(text.contains("kernel view: on, 1 thread followed, 4 records, 0 lost"))
        #expect(text.contains("wall 52.0ms, busy 42.5ms, asleep 9.50ms, utilization 81.7% (on CPU 12.5%)"))
        #expect(text.contains("slowest callouts (by time on CPU): timer jank-1 5.00ms on CPU of 41.0ms"))
        #expect(text.contains("worst: 41.5ms in timer jank-1 (5.50ms on CPU, 36.0ms waiting for CPU 0 behind sh (pid 4242) 20.0ms and sh (pid 4243) 16.0ms, 0 blocked)"))
        #expect(s.kernel?.overall?.onCPUPerCallout == facet.onCPUPerCallout)
        // The rlctl that recorded it knows how many records the probe rebuilt from the scheduler's counters, and
        // says so; the trace alone does not (the line above).
        var told = s
        told.noteKernelRecordsRebuilt(3)
        #expect(SummaryReport.text(told).contains("kernel view: on, 1 thread followed, 4 records (3 rebuilt from the scheduler's counters), 0 lost"))
        #expect(told.kernel?.rebuiltRecords == 3 && s.kernel?.rebuiltRecords == nil)
    }

    @Test func slowestCalloutsRankByTimeOnTheCPU() throws {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.add(0, .itemLabel(itemID: 1, kind: .timer, label: "waits"))
        t.add(0, .itemLabel(itemID: 2, kind: .timer, label: "works"))
        t.timer(1, scheduled: 0, at: 0, until: 20)           // 20 ms, 2 on the CPU
        t.offCPU(.preempted, left: 1, back: 19)
        t.timer(2, scheduled: 20, at: 20, until: 30)         // 10 ms, all on the CPU
        t.activity(30, .exit)
        t.runEnd(30)
        let s = try t.inTimeOrder.summarize()
        #expect(s.loops[0].slowestCallouts.map(\.label) == ["timer works", "timer waits"])
        #expect(s.overall.slowestCallouts.map(\.label) == ["timer works", "timer waits"])
        #expect(s.loops[0].slowestCallouts[1].kernel?.othersNanoseconds == Self.ms(18))
    }

    /// A timer due at 10 ms while the loop slept, called out at 12.5 ms: every part of its 2.5 ms, in order.
    /// A timer due at 10 ms while its loop slept, called out at 12.5 ms: every part of the way has some of the 2.5 ms.
    static func lateTimerWakeUp() -> TraceBuilder {
        var t = TraceBuilder.kernelViewedRun(naming: [(9, 0, "kworker/1:0")])
        t.offCPU(.sleeping, left: 0.05, woken: 10.9, back: 12.0, cpu: 1, syscall: 232, throttled: 0.3, timer: (10.2, 10.25, 10.4),
                 culprits: [(9, 0.8)])
        t.sleep(from: 0, to: 12.1)
        t.offCPU(.preempted, left: 12.2, back: 12.3, cpu: 1, culprits: [(9, 0.1)])
        t.timer(1, scheduled: 10, at: 12.5, until: 12.6)
        return t
    }

    @Test func aLateWakeUpSplitsIntoPartsThatAddUpToItsLateness() throws {
        var t = Self.lateTimerWakeUp()
        t.activity(13, .exit)
        t.runEnd(13)
        let s = try t.inTimeOrder.summarize()
        #expect(s.timers[0].lateFiringCauses == [LoopTracker.asleep: 1])
        let late = try #require(s.loops[0].kernel?.lateWakeUps)
        #expect(late.count == 1 && late.explained == 1 && late.incomplete == 0)
        #expect(late.latenessNanoseconds == s.timers[0].lateness.max || late.latenessNanoseconds == Self.ms(2.5))
        #expect(late.latenessNanoseconds == Self.ms(2.5))
        let p = late.parts
        #expect(p.armedLateNanoseconds == Self.ms(0.2))
        #expect(p.timerSlackNanoseconds == Self.ms(0.05))
        #expect(p.interruptDeliveryNanoseconds == Self.ms(0.15))
        #expect(p.wakePathNanoseconds == Self.ms(0.5))
        #expect(p.runQueueNanoseconds == Self.ms(0.8))
        #expect(p.throttledNanoseconds == Self.ms(0.3))
        #expect(p.returnPathNanoseconds == Self.ms(0.1))
        #expect(p.loopWork.onCPUNanoseconds == Self.ms(0.3) && p.loopWork.runQueueNanoseconds == Self.ms(0.1))
        #expect(p.totalNanoseconds == late.latenessNanoseconds, "the parts add up exactly to the lateness")
        #expect(late.culprits == [.init(threadID: 9, pid: 0, command: "kworker/1:0", nanoseconds: Self.ms(0.9), cpu: 1)])
        let text = SummaryReport.text(s)
        #expect(text.contains("late wake-ups: 1, 2.50ms late in all: armed late (tolerance, coalescing) 200us (8.00%), timer slack 50.0us (2.00%), interrupt delivery 150us (6.00%), wake path 500us (20.0%), waiting for a CPU 800us (32.0%) behind kworker/1:0 (kernel thread), throttled 300us (12.0%), return path 100us (4.00%), loop's own work on CPU 300us (12.0%), loop's own work waiting for a CPU 100us (4.00%)"))
    }

    @Test func aSourceSignalledWhileTheLoopSleptIsALateWakeUpToo() throws {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.offCPU(.sleeping, left: 0.1, woken: 5.5, back: 8.5, syscall: 232, others: 3)
        t.sleep(from: 0, to: 9)
        t.source(2, signaled: 5, at: 9.5, until: 10)
        t.activity(11, .exit)
        t.runEnd(11)
        let late = try #require(try t.inTimeOrder.summarize().loops[0].kernel?.lateWakeUps)
        #expect(late.count == 1 && late.latenessNanoseconds == Self.ms(4.5))
        #expect(late.parts.wakePathNanoseconds == Self.ms(0.5) && late.parts.runQueueNanoseconds == Self.ms(3))
        #expect(late.parts.returnPathNanoseconds == Self.ms(0.5) && late.parts.loopWork.onCPUNanoseconds == Self.ms(0.5))
        #expect(late.parts.totalNanoseconds == late.latenessNanoseconds)
    }

    @Test func throttlingIsItsOwnPart() throws {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.timer(1, scheduled: 10, at: 10, until: 30)
        t.offCPU(.throttled, left: 12, back: 22, throttled: 10)
        t.activity(31, .exit)
        t.runEnd(31)
        let s = try t.inTimeOrder.summarize()
        let k = try #require(s.loops[0].slowestCallouts.first?.kernel)
        #expect(k.onCPUNanoseconds == Self.ms(10) && k.throttledNanoseconds == Self.ms(10) && k.runQueueNanoseconds == 0)
        #expect(s.loops[0].kernel?.busy.throttledNanoseconds == Self.ms(10))
        #expect(SummaryReport.text(s).contains("worst: 31.0ms in timer (21.0ms on CPU, 0 waiting for a CPU, 10.0ms throttled (CPU quota), 0 blocked)"))
        let share = try #require(Metric.named("kernel.throttled_share"))
        #expect(share.isMeasured(in: s) && abs(share.value(in: s) - 10.0 / 31) < 1e-12)
    }

    @Test func blockingNamesItsSystemCallOrAPageFault() throws {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.timer(1, scheduled: 10, at: 10, until: 30)
        t.offCPU(.sleeping, left: 11, woken: 15, back: 15.5, syscall: 0)
        t.offCPU(.diskSleep, left: 20, woken: 22, back: 22)
        t.activity(31, .exit)
        t.runEnd(31)
        let s = try t.inTimeOrder.summarize()
        let k = try #require(s.loops[0].slowestCallouts.first?.kernel)
        #expect(k.blockedNanoseconds == Self.ms(6) && k.runQueueNanoseconds == Self.ms(0.5) && k.onCPUNanoseconds == Self.ms(13.5))
        #expect(k.blockedIn == [KernelNames.syscall(0): Self.ms(4), "page fault or I/O": Self.ms(2)])
        #expect(SummaryReport.text(s).contains("slowest callouts (by time on CPU): timer 13.5ms on CPU of 20.0ms"))
        #expect(SummaryReport.text(s).contains("in timer (24.5ms on CPU, 500us waiting for CPU 0, 6.00ms blocked in read and 1 more)"))
        #expect(Metric.named("kernel.blocked")?.value(in: s) == Double(Self.ms(6)))
    }

    @Test func aTraceWithoutTheKernelViewReadsAsBefore() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.sleep(from: 0, to: 12)
        t.timer(1, scheduled: 10, at: 12, until: 40)
        t.activity(41, .exit)
        t.runEnd(41)
        let s = try t.summarize()
        #expect(s.kernel == nil && s.loops[0].kernel == nil && s.loops[0].slowestCallouts[0].kernel == nil && s.loops[0].worstStalls[0].kernel == nil)
        #expect(!SummaryReport.text(s).contains("kernel") && !SummaryReport.markdown(s).contains("ernel"))
        #expect(!(try SummaryReport.json(s)).contains("kernel"))
        // Its kernel metrics are not available, and a rule on them cannot pass.
        let metric = try #require(Metric.named("kernel.oncpu_per_callout.p99"))
        #expect(!metric.isMeasured(in: s) && metric.missingReason == Metric.noKernelView)
        let check = BudgetCheck(budget: try Budget(text: "kernel.oncpu_per_callout.p99 <= 10ms\n", file: "b"),
                                report: RunReport(workload: "w", tracer: "embedded", repetitions: [s]))
        #expect(!check.passed && check.verdicts[0].noData && check.verdicts[0].noDataReason == Metric.noKernelView)
        // rlctl tried and could not: said once, with why.
        var tried = s
        tried.noteKernelViewUnavailable("not root and no CAP_BPF")
        #expect(SummaryReport.text(tried).contains("kernel view: not available — not root and no CAP_BPF"))
        #expect(try SummaryReport.json(tried).contains("\"unavailableReason\" : \"not root and no CAP_BPF\""))
        var off = s
        off.noteKernelViewNotRecorded()
        #expect(SummaryReport.text(off).contains("\nkernel view: not recorded\n"))
    }

    @Test func lostKernelRecordsMarkTheCausesOverTheirWindow() throws {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.add(0, .itemLabel(itemID: 1, kind: .timer, label: "one"))
        t.add(0, .itemLabel(itemID: 2, kind: .timer, label: "two"))
        t.timer(1, scheduled: 10, at: 10, until: 30)
        t.offCPU(.preempted, left: 12, back: 14)
        t.kernelLost(3, from: 20, at: 25)
        t.timer(2, scheduled: 30, at: 30, until: 40)
        t.activity(41, .exit)
        t.runEnd(41)
        let s = try t.inTimeOrder.summarize()
        let callouts = s.loops[0].slowestCallouts
        #expect(callouts.first { $0.label == "timer one" }?.kernel?.incomplete == true)
        #expect(callouts.first { $0.label == "timer two" }?.kernel?.incomplete == nil)
        // The loops' own events are all there: only the kernel figures over the window are incomplete.
        #expect(s.health.eventsLost == 0 && !s.loops[0].affectedByLoss && s.kernel?.lostRecords == 3)
        #expect(s.loops[0].kernel?.lostRecordsAffecting == 3)
        let report = RunReport(workload: "w", tracer: "embedded", repetitions: [s])
        let wallClock = BudgetCheck(budget: try Budget(text: "loop.utilization <= 100%\n", file: "b"), report: report)
        #expect(wallClock.passed && wallClock.incompleteness.isEmpty, "\(wallClock.incompleteness)")
        let onKernel = BudgetCheck(budget: try Budget(text: "kernel.oncpu_share <= 100%\n", file: "b"), report: report)
        #expect(!onKernel.passed && onKernel.incompleteForbidden && onKernel.incompleteness == ["3 kernel records lost"])
        let allowed = BudgetCheck(budget: try Budget(text: "kernel.oncpu_share <= 100%\nkernel.lost <= 5\n", file: "b"), report: report)
        #expect(allowed.passed, "\(allowed.incompleteness)")
        let text = SummaryReport.text(s)
        #expect(text.contains("kernel view: on, 1 thread followed, 1 records, 3 lost (causes over those windows are marked (!): incomplete)"))
        #expect(text.contains("(!) incomplete: kernel records missing in it"))
        #expect(Metric.named("kernel.lost")?.value(in: s) == 3)
    }

    @Test func aKernelViewThatBeganLateCoversOnlyItsWindow() throws {
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.add(0, .itemLabel(itemID: 1, kind: .timer, label: "one"))
        t.add(0, .itemLabel(itemID: 2, kind: .timer, label: "two"))
        t.timer(1, scheduled: 10, at: 10, until: 15)
        t.kernelBegin(20)
        t.timer(2, scheduled: 25, at: 25, until: 30)
        t.offCPU(.preempted, left: 26, back: 27)
        t.activity(41, .exit)
        t.runEnd(41)
        let s = try t.inTimeOrder.summarize()
        let callouts = s.loops[0].slowestCallouts
        #expect(callouts.first { $0.label == "timer one" }?.kernel == nil, "before the kernel view: not available, not zero")
        #expect(callouts.first { $0.label == "timer two" }?.kernel?.onCPUNanoseconds == Self.ms(4))
        let facet = try #require(s.loops[0].kernel)
        #expect(!facet.coversWholeLoop && facet.followedSinceNanoseconds == Self.ms(20))
        #expect(facet.onCPUPerCallout.count == 1)
        let text = SummaryReport.text(s)
        #expect(text.contains("it began at +20.0ms, after the loops started: kernel causes cover only the time since"))
        #expect(text.contains("kernel: busy time not available (its iterations began before the kernel view)"))
    }

    /// A wait loop (`--any`): the same facet, its timed-out wait's lateness split, its stall on the CPU.
    @Test func waitLoopsCarryTheSameFacet() throws {
        var w = WaitLoopSummaryTests.Waits()
        let us = WaitLoopSummaryTests.us
        func offCPU(_ reason: KernelOffCPUReason, left: UInt64, woken: UInt64? = nil, back: UInt64, syscall: Int32 = -1,
                    timer: (UInt64, UInt64, UInt64)? = nil) {
            if let timer { w.add(back, 0, .kernelTimer(threadID: 20, due: timer.0 * us, latest: timer.1 * us, fired: timer.2 * us)) }
            w.add(back, 0, .kernelOffCPU(.init(threadID: 20, reason: reason, syscall: syscall, left: left * us, woken: (woken ?? left) * us,
                                               back: back * us, cpu: 2, wakerThreadID: 0, throttled: 0)))
        }
        w.add(0, 0, .kernelBegin(pid: 4242, command: "node"))
        w.named(20, pid: 4242, process: "node", name: "node")
        w.wait(20, timeout: 10_000, from: 0, to: 12_000, ready: 0)         // 2 ms late
        offCPU(.sleeping, left: 100, woken: 11_000, back: 11_800, syscall: 232, timer: (10_000, 10_050, 10_500))
        offCPU(.preempted, left: 15_000, back: 25_000)                   // inside the 18 ms of work
        w.wait(20, timeout: -1, from: 30_000, to: 40_000, ready: 1)
        offCPU(.sleeping, left: 30_100, woken: 39_000, back: 39_500, syscall: 232)
        let s = try w.summarize()
        let loop = try #require(s.waits?.loops.first)
        let k = try #require(loop.kernel)
        #expect(k.notAvailable == TraceSummary.NotAvailable.kernelWait)
        let late = k.lateWakeUps
        #expect(late.count == 1 && late.latenessNanoseconds == 2_000 * us && late.parts.totalNanoseconds == 2_000 * us)
        #expect(late.parts.timerSlackNanoseconds == 50 * us && late.parts.interruptDeliveryNanoseconds == 450 * us)
        #expect(late.parts.wakePathNanoseconds == 500 * us && late.parts.runQueueNanoseconds == 800 * us && late.parts.returnPathNanoseconds == 200 * us)
        #expect(k.runQueuePerWakeUp == WaitLoopSummaryTests.distribution([800 * us, 500 * us]))
        let stall = try #require(loop.worstStalls.first)
        #expect(stall.kernel?.onCPUNanoseconds == 8_000 * us && stall.kernel?.runQueueNanoseconds == 10_000 * us)
        #expect(k.onCPUPerIteration == WaitLoopSummaryTests.distribution([8_000 * us]))
        #expect(s.kernel?.overall?.onCPUPerIteration == k.onCPUPerIteration)
        #expect(SummaryReport.text(s).contains("at +12.0ms (8.00ms on CPU, 10.0ms waiting for CPU 2, 0 blocked)"))
    }

    /// A SwiftNIO loop: the same facet, the wait told from the I/O inside NIO's sleep by the blocking.
    @Test func nioLoopsCarryTheSameFacet() throws {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.add(0, .loopAdapted(loopID: 5, adapter: .nio, groupID: 1))
        t.offCPU(.sleeping, left: 1, woken: 9.5, back: 9.9, syscall: 232)
        t.offCPU(.preempted, left: 10.5, back: 11.5)
        t.add(12, .nioTick(loopID: 5, start: Self.ms(10), end: Self.ms(12), sleep: Self.ms(10), tasks: 3))
        // The next iteration: a read handled before the tick, preempted 0.5 of its 2 ms, is a callout.
        t.offCPU(.sleeping, left: 12.1, woken: 20, back: 20.1, syscall: 232)
        t.offCPU(.preempted, left: 21, back: 21.5)
        t.add(22.2, .nioIO(loopID: 5, channelID: 3, event: .read, start: Self.ms(20.2), end: Self.ms(22.2)))
        t.add(23, .nioTick(loopID: 5, start: Self.ms(22.5), end: Self.ms(23), sleep: Self.ms(10.5), tasks: 1))
        let s = try t.inTimeOrder.summarize()
        let loop = try #require(s.nio?.loops.first)
        let k = try #require(loop.kernel)
        #expect(k.notAvailable == TraceSummary.NotAvailable.kernelNIO)
        #expect(k.runQueuePerWakeUp == WaitLoopSummaryTests.distribution([Self.ms(0.4), Self.ms(0.1)]))
        // Busy 2 ms with 1 ms preempted; then the read's 2 ms and the 0.5 ms tick, with 0.5 ms preempted.
        #expect(k.onCPUPerIteration == WaitLoopSummaryTests.distribution([Self.ms(1), Self.ms(2)]))
        #expect(k.onCPUPerCallout == WaitLoopSummaryTests.distribution([Self.ms(1.5)]))
        #expect(k.busy.runQueueNanoseconds == Self.ms(1.5) && k.busy.onCPUNanoseconds == Self.ms(3))
        #expect(SummaryReport.text(s).contains("kernel: busy 4.50ms = 3.00ms on CPU, 1.50ms waiting for CPU 0, 0 blocked"))
    }

    @Test func theJSONHasOneKernelShapeForEveryKindOfLoop() throws {
        let s = try Self.jankBesideHogs().summarize()
        let json = try SummaryReport.json(s)
        let decoded = try JSONDecoder().decode(TraceSummary.self, from: Data(json.utf8))
        #expect(decoded.kernel == s.kernel && decoded.loops[0].kernel == s.loops[0].kernel)
        #expect(decoded.loops[0].slowestCallouts == s.loops[0].slowestCallouts && decoded.loops[0].worstStalls == s.loops[0].worstStalls)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let kernel = try #require(object["kernel"] as? [String: Any])
        #expect(kernel["status"] as? String == "on" && kernel["records"] as? Int == 4)
        let loop = try #require((object["loops"] as? [[String: Any]])?.first?["kernel"] as? [String: Any])
        #expect(Set(loop.keys) == ["followedSinceNanoseconds", "coversWholeLoop", "busy", "onCPUShare", "onCPUPerIteration", "onCPUPerCallout",
                                   "runQueuePerWakeUp", "lateWakeUps", "lostRecordsAffecting"])
    }

    // ===== check and compare =====

    /// A repetition of a timer loop, 20 firings 10 ms apart: the loop sleeps until each is due, its wake-up waits
    /// `wakeQueue` ms for the CPU, its callout runs `handler` ms on the CPU and is preempted `preempted` ms inside.
    /// `jitter` varies repetitions a little.
    static func timerLoop(handler: Double, wakeQueue: Double, preempted: Double, jitter: Double) throws -> TraceSummary {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.task(77, pid: 77, "sh")
        t.runBegin(0)
        var start = 0.0
        for i in 1...20 {
            let due = Double(i) * 10
            t.activity(start, .beforeTimers)
            let back = due + 0.01 + wakeQueue + jitter
            t.offCPU(.sleeping, left: start + 0.05, woken: due + 0.01, back: back, syscall: 232, timer: (due, due, due + 0.005),
                     culprits: wakeQueue > 0.1 ? [(Int32(77), wakeQueue)] : [])
            t.sleep(from: start + 0.01, to: back + 0.01)
            let begin = back + 0.02
            let end = begin + handler + preempted
            if preempted > 0 { t.offCPU(.preempted, left: begin + 0.1, back: begin + 0.1 + preempted, culprits: [(77, preempted)]) }
            t.timer(1, scheduled: due, at: begin, until: end)
            start = end + 0.01
        }
        t.activity(start, .exit)
        t.runEnd(start)
        return try t.inTimeOrder.summarize()
    }

    static func report(handler: Double, wakeQueue: Double, preempted: Double) throws -> RunReport {
        let reps = try (0..<5).map { try timerLoop(handler: handler, wakeQueue: wakeQueue, preempted: preempted, jitter: Double($0) * 0.002) }
        return RunReport(workload: "timers", tracer: "embedded", repetitions: reps)
    }

    @Test func anAAComparisonBesideAHogPassesAndNamesTheContention() throws {
        let quiet = try Self.report(handler: 1, wakeQueue: 0.02, preempted: 0)
        let hog = try Self.report(handler: 1, wakeQueue: 2, preempted: 3)
        let c = try #require(ComparisonReport(baseline: quiet, current: hog, metrics: Comparison.defaultMetrics, threshold: 0.1, thresholdText: "10%"))
        #expect(c.contention != nil && !c.regressed)
        let explained = Set(c.explainedByContention.map(\.metric))
        #expect(explained == ["timer.lateness.p99", "timer.lateness.p50", "loop.busy_per_iteration.p99", "callout.timer.p99", "loop.utilization",
                              "kernel.run_queue_per_wakeup.p99"])
        #expect(c.results.first { $0.metric == "kernel.oncpu_per_callout.p99" }?.regressed == false)
        #expect(c.text.contains("explained by contention on this machine (the machine, not the code): kernel.run_queue_per_wakeup.p50"))
        #expect(c.text.contains("no regression beyond 10%; \(explained.count) metric(s) past it explained by contention on this machine (the machine, not the code)"))
        #expect(c.json.contains("\"explainedByContention\":true"))
    }

    @Test func aSlowerHandlerStillFailsBesideAHog() throws {
        let quiet = try Self.report(handler: 1, wakeQueue: 0.02, preempted: 0)
        let slower = try Self.report(handler: 1.3, wakeQueue: 2, preempted: 3)
        let c = try #require(ComparisonReport(baseline: quiet, current: slower, metrics: Comparison.defaultMetrics, threshold: 0.1, thresholdText: "10%"))
        #expect(c.contention == nil, "time on the CPU moved: the code did")
        #expect(c.regressed && c.regressions.contains { $0.metric == "kernel.oncpu_per_callout.p99" })
        #expect(c.regressions.contains { $0.metric == "callout.timer.p99" })
    }

    @Test func withoutTheKernelViewOnOneSideTheWallClockDecides() throws {
        let quiet = try Self.report(handler: 1, wakeQueue: 0.02, preempted: 0)
        var hog = try Self.report(handler: 1, wakeQueue: 2, preempted: 3)
        for index in hog.repetitions.indices { hog.repetitions[index].kernel = nil }
        let c = try #require(ComparisonReport(baseline: quiet, current: hog, metrics: Comparison.defaultMetrics, threshold: 0.1, thresholdText: "10%"))
        #expect(c.contention == nil && c.regressed)
        #expect(!c.results.contains { Metric.isKernel($0.metric) }, "a kernel metric is compared only where both sides have it")
    }
}

extension KernelCauseTests {
    /// A thread keeps its latest episodes only: a window reaching past them is marked incomplete, never silently short.
    @Test func aWindowOlderThanTheKeptEpisodesIsIncomplete() throws {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        let episodes = KernelThreadView.capacity + 10
        t.timer(1, scheduled: 1, at: 1, until: 2 + Double(episodes))
        for i in 0..<episodes { t.offCPU(.preempted, left: 1.5 + Double(i), back: 2 + Double(i)) }
        t.activity(3 + Double(episodes), .exit)
        t.runEnd(3 + Double(episodes))
        let s = try t.inTimeOrder.summarize()
        let k = try #require(s.loops[0].slowestCallouts.first?.kernel)
        #expect(k.incomplete == true)
        #expect(SummaryReport.text(s).contains("on CPU of \(formatNanoseconds(k.onCPUNanoseconds + k.offCPUNanoseconds))"))
        #expect(SummaryReport.text(s).contains("(!) incomplete: kernel records missing in it"))
    }
}

extension KernelCauseTests {
    /// `rlctl report`'s page: the kernel's side of each loop (bars of where its busy and late time went, who held its
    /// CPU), the slowest callouts by time on the CPU; a page of a trace without the kernel view has none of it.
    @Test func theReportPageDrawsTheKernelsSide() throws {
        let jank = HTMLReport.summary(try Self.jankBesideHogs().summarize(), context: .init(title: "jank"))
        #expect(jank.contains("<h3>The kernel&#39;s side</h3>"))
        #expect(jank.contains("Slowest callouts (by time on the CPU)"))
        #expect(jank.contains("<title>on CPU: 6.50ms (15.3%)</title>") && jank.contains("<title>waiting for a CPU: 36.0ms (84.7%)</title>"))
        #expect(jank.contains("<td>sh (pid 4242)</td><td>0</td><td>20.0ms</td><td>busy</td>"))
        let quiet = HTMLReport.summary(try HTMLReportTests.summary(), context: .init(title: "quiet"))
        #expect(!quiet.contains("kernel"))
    }
}

extension KernelCauseTests {
    /// Between the wait's return and the loop's wake-up event the loop may block on its own lock: the wake-up is the
    /// wait's (its last time in the call it blocked in first, after a spurious wake-up inside it), and the lock is
    /// part of the return path.
    @Test func theWakeUpIsTheWaitsNotALockOnTheWayBack() throws {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.offCPU(.sleeping, left: 0.1, woken: 4, back: 4.1, syscall: 232)                       // woken without an event
        t.offCPU(.sleeping, left: 4.2, woken: 10.5, back: 11, syscall: 232, timer: (10, 10, 10.5)) // the timer's wake-up
        t.offCPU(.sleeping, left: 11.2, woken: 11.6, back: 11.7, syscall: 202)                  // the state lock
        t.sleep(from: 0, to: 12)
        t.timer(1, scheduled: 10, at: 12.2, until: 12.3)
        t.activity(13, .exit)
        t.runEnd(13)
        let k = try #require(try t.inTimeOrder.summarize().loops[0].kernel)
        #expect(k.runQueuePerWakeUp == WaitLoopSummaryTests.distribution([Self.ms(0.5)]))
        let p = k.lateWakeUps.parts
        #expect(p.interruptDeliveryNanoseconds == Self.ms(0.5) && p.runQueueNanoseconds == Self.ms(0.5))
        #expect(p.returnPathNanoseconds == Self.ms(1) && p.loopWork.onCPUNanoseconds == Self.ms(0.2))
        #expect(p.totalNanoseconds == Self.ms(2.2))
    }
}

extension KernelCauseTests {
    /// Linux 6.18 throttles a task whose group is out of quota on its way back to user space: a loop woken by its
    /// timer gets the CPU, is stopped before its wait returns, and runs again once the quota is refilled. Those
    /// 40 ms are the quota's (a CPU quota beside a hog read "return path 99.4%" before), and a preemption there is
    /// the run queue's, with its culprit.
    @Test func throttledOnTheWayBackFromTheWaitIsThrottled() throws {
        var t = TraceBuilder.kernelViewedRun(naming: [(4242, 4242, "sh")])
        t.offCPU(.sleeping, left: 0.1, woken: 10.1, back: 10.2, syscall: 232, timer: (10, 10.05, 10.1))
        t.offCPU(.throttled, left: 10.3, back: 50.3, throttled: 40)
        t.offCPU(.preempted, left: 50.4, back: 51.4, culprits: [(4242, 1)])
        t.sleep(from: 0, to: 51.5)
        t.timer(1, scheduled: 10, at: 51.6, until: 51.7)
        t.activity(52, .exit)
        t.runEnd(52)
        let s = try t.inTimeOrder.summarize()
        let late = try #require(s.loops[0].kernel?.lateWakeUps)
        #expect(late.latenessNanoseconds == Self.ms(41.6))
        let p = late.parts
        #expect(p.timerSlackNanoseconds == Self.ms(0.05) && p.interruptDeliveryNanoseconds == Self.ms(0.05))
        #expect(p.runQueueNanoseconds == Self.ms(0.1 + 1) && p.throttledNanoseconds == Self.ms(40))
        #expect(p.returnPathNanoseconds == Self.ms(0.3) && p.loopWork.onCPUNanoseconds == Self.ms(0.1))
        #expect(p.totalNanoseconds == late.latenessNanoseconds)
        #expect(late.culprits.map(\.threadID) == [4242])
        // The loop's own figures are unchanged: the wait is its sleep, the iteration's busy time is its own.
        #expect(s.loops[0].kernel?.busy.throttledNanoseconds == 0)
    }

    /// A timer and run queue belong to the episode stamped at their time: when that episode's record was lost, the
    /// next episode does not take them.
    @Test func aLostEpisodesTimerIsNotTheNextOnes() throws {
        var t = TraceBuilder()
        t.kernelBegin(0)
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.offCPU(.sleeping, left: 1, woken: 2, back: 3, syscall: 232, timer: (2, 2, 2), culprits: [(9, 1)])
        t.events.removeLast()                        // the kernel_off_cpu at 3 ms: lost
        t.kernelLost(1, from: 2.5, at: 3.5)
        t.offCPU(.sleeping, left: 4, woken: 11, back: 11.5, syscall: 232)
        t.sleep(from: 3.8, to: 12)
        t.timer(1, scheduled: 10, at: 12.5, until: 12.6)
        t.activity(13, .exit)
        t.runEnd(13)
        let late = try #require(try t.inTimeOrder.summarize().loops[0].kernel?.lateWakeUps)
        #expect(late.explained == 1 && late.parts.timerSlackNanoseconds == 0 && late.parts.wakePathNanoseconds == Self.ms(1))
        #expect(late.culprits.isEmpty && late.parts.totalNanoseconds == Self.ms(2.5))
    }
}

import Glibc
@_spi(VirtualTime) import RunLoopCore
import Testing

/// Rules 31 and 33 on the loop's own thread, as CFRunLoop behaves (issue 30): `wakeUp()` counts before the wait of
/// the current iteration and is ignored from just after it until the next iteration starts; `perform` writes no
/// wake-up and costs no extra iteration. Each scenario keeps the default mode alive with a one-shot timer `T` at
/// +50 ms and runs it for 1 s: without a wake-up that counts, the run is `Entry BT BS BW AW T Exit` with one sleep.
@Suite struct OwnThreadWakeUpTests {
    /// What the loop's own thread does at one activity.
    enum Action: String, CaseIterable, Sendable {
        case wakeUp, perform
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let activity: Loop.Activity
        let action: Action
        /// The exact trace (`B` is the performed block).
        let trace: String
        /// The sleeps, as offsets from the run's start.
        let sleeps: [ClosedRange<Duration>]
        var testDescription: String { "\(action.rawValue) at \(activity.short)" }
    }

    private static let plain = [Duration.zero ... .milliseconds(50)]
    /// A wake-up that counts: the first wait returns at once (a sleep of zero), then the timer's sleep.
    private static let extra = [Duration.zero ... .zero, .zero ... .milliseconds(50)]

    static let cases: [Case] = [
        // Before the wait: CF writes its wake-up port, the first wait returns at once.
        Case(activity: .entry, action: .wakeUp, trace: "Entry BT BS BW AW BT BS BW AW T Exit", sleeps: extra),
        Case(activity: .beforeTimers, action: .wakeUp, trace: "Entry BT BS BW AW BT BS BW AW T Exit", sleeps: extra),
        Case(activity: .beforeSources, action: .wakeUp, trace: "Entry BT BS BW AW BT BS BW AW T Exit", sleeps: extra),
        Case(activity: .beforeWaiting, action: .wakeUp, trace: "Entry BT BS BW AW BT BS BW AW T Exit", sleeps: extra),
        // After the wait: ignored.
        Case(activity: .afterWaiting, action: .wakeUp, trace: "Entry BT BS BW AW T Exit", sleeps: plain),
        // A block performed before step 3 runs there: nothing to wake for.
        Case(activity: .entry, action: .perform, trace: "Entry BT BS B BW AW T Exit", sleeps: plain),
        Case(activity: .beforeTimers, action: .perform, trace: "Entry BT BS B BW AW T Exit", sleeps: plain),
        Case(activity: .beforeSources, action: .perform, trace: "Entry BT BS B BW AW T Exit", sleeps: plain),
        // Better than CF (rule 31): the wait after BeforeWaiting is a poll and the block runs in step 9; CF sleeps
        // until the timer (`Entry BT BS BW AW T B Exit`).
        Case(activity: .beforeWaiting, action: .perform, trace: "Entry BT BS BW AW B BT BS BW AW T Exit", sleeps: plain),
        // After the wait: step 9 runs it, after the due timers.
        Case(activity: .afterWaiting, action: .perform, trace: "Entry BT BS BW AW T B Exit", sleeps: plain),
    ]

    @Test(arguments: cases)
    func anObserverOnTheLoopsThread(_ scenario: Case) {
        let (trace, sleeps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(LoopObserver(activities: scenario.activity, repeats: false, order: -1) { _, _ in
                switch scenario.action {
                case .wakeUp: loop.wakeUp()
                case .perform: loop.perform(inMode: .default) { log.append("B") }
                }
            }, forMode: .default)
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(50))) { _ in log.append("T") }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, kernel.sleepOffsets(since: start))
        }
        #expect(trace == scenario.trace)
        #expect(sleeps == scenario.sleeps)
    }

    /// The sixth activity: a wake-up from an Exit observer is ignored (no run is active once it returns) and a
    /// block performed there runs at step 3 of the next run; neither costs the next run an iteration.
    @Test(arguments: Action.allCases)
    func anExitObserverLeavesTheNextRunAlone(_ action: Action) {
        let (trace, sleeps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let log = TraceLog()
            loop.add(LoopObserver(activities: .exit, repeats: false, order: -1) { _, _ in
                switch action {
                case .wakeUp: loop.wakeUp()
                case .perform: loop.perform(inMode: .default) { log.append("B") }
                }
            }, forMode: .default)
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopTimer(fireAt: kernel.now.advanced(by: .milliseconds(50))) { _ in log.append("T1") }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            log.append("|")
            let second = kernel.now
            loop.add(LoopTimer(fireAt: second.advanced(by: .milliseconds(50))) { _ in log.append("T2") }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, kernel.sleepOffsets(since: second))
        }
        let block = action == .perform ? " B" : ""
        #expect(trace == "Entry BT BS BW AW T1 Exit | Entry BT BS\(block) BW AW T2 Exit")
        #expect(sleeps == [.zero ... .milliseconds(50)])
    }

    /// Runs the default mode for 1 s with the trace observer, a timer `T1` at +10 ms that logs itself and calls
    /// `callout`, and `T2` at +50 ms; returns the trace and the sleeps.
    private func traceTimerCallout(_ callout: @escaping @Sendable (Loop, TraceLog) -> Void) -> (String, [ClosedRange<Duration>]) {
        onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10))) { _ in
                log.append("T1")
                callout(loop, log)
            }, forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(50))) { _ in log.append("T2") }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, kernel.sleepOffsets(since: start))
        }
    }

    /// The case: a timer callout that performs a block for the current mode and calls `wakeUp()`. CF runs
    /// `… BW AW T1 B BT BS BW AW T2 Exit`: the block runs in the same step 9, and the next wait sleeps.
    @Test func aTimerCalloutThatPerformsAndWakesCostsNoIteration() {
        let (trace, sleeps) = traceTimerCallout { loop, log in
            loop.perform(inMode: .default) { log.append("B") }
            loop.wakeUp()
        }
        #expect(trace == "Entry BT BS BW AW T1 B BT BS BW AW T2 Exit")
        #expect(sleeps == [.zero ... .milliseconds(10), .milliseconds(10) ... .milliseconds(50)])
    }

    /// A block performed by a block of step 9 runs at the next step 3; with a wake-up beside it, still one
    /// iteration and one sleep.
    @Test func aBlockFromAStep9BlockRunsAtTheNextStep3() {
        let (trace, sleeps) = traceTimerCallout { loop, log in
            loop.perform(inMode: .default) {
                log.append("B1")
                loop.perform(inMode: .default) { log.append("B2") }
                loop.wakeUp()
            }
        }
        #expect(trace == "Entry BT BS BW AW T1 B1 BT BS B2 BW AW T2 Exit")
        #expect(sleeps == [.zero ... .milliseconds(10), .milliseconds(10) ... .milliseconds(50)])
    }

    /// Rule 31, Better than CF (issue 30 point 3): a block performed by a block of step 3 runs in the same
    /// iteration, after a wait that is a poll; CF leaves it queued until something else wakes the loop (here the
    /// timer, 50 ms later). A block for another mode does not turn the wait into a poll for nothing more than once.
    @Test func aBlockFromAStep3BlockRunsInTheSameIteration() {
        let (trace, sleeps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(50))) { _ in log.append("T") }, forMode: .default)
            loop.perform(inMode: .default) {
                log.append("B1")
                loop.perform(inMode: .default) { log.append("B2") }
                loop.perform(inMode: "elsewhere") { log.append("never") }
            }
            loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, kernel.sleepOffsets(since: start))
        }
        #expect(trace == "Entry BT BS B1 BW AW B2 BT BS BW AW T Exit")
        #expect(sleeps == [.zero ... .milliseconds(50)])
    }

    /// A custom source's perform is step 4, before the wait: its wake-up counts, but the iteration polls anyway
    /// (a source ran), and the poll reads it. Its block runs right after the sources.
    @Test(arguments: Action.allCases)
    func aSourcePerform(_ action: Action) {
        let (trace, sleeps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let start = kernel.now
            let log = TraceLog()
            let source = LoopSource {
                log.append("S")
                switch action {
                case .wakeUp: loop.wakeUp()
                case .perform: loop.perform(inMode: .default) { log.append("B") }
                }
            }
            loop.add(traceObserver(log), forMode: .default)
            loop.add(source, forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(50))) { _ in
                log.append("T")
                source.invalidate()
            }, forMode: .default)
            source.signal()
            loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, kernel.sleepOffsets(since: start))
        }
        let block = action == .perform ? " B" : ""
        #expect(trace == "Entry BT BS S\(block) BT BS BW AW T Exit")
        #expect(sleeps == [.zero ... .milliseconds(50)])
    }

    /// A port handler runs in step 9, after the wait: its wake-up is ignored and its block runs in the same step.
    @Test(arguments: Action.allCases)
    func aPortHandler(_ action: Action) {
        let (trace, sleeps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let start = kernel.now
            let log = TraceLog()
            let port = LoopPort { port, _ in
                log.append("P")
                switch action {
                case .wakeUp: loop.wakeUp()
                case .perform: loop.perform(inMode: .default) { log.append("B") }
                }
                port.invalidate()
            }
            loop.add(traceObserver(log), forMode: .default)
            loop.add(port, forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(50))) { _ in log.append("T") }, forMode: .default)
            // A failed send leaves P out of the trace.
            try? port.send(msgid: 1)
            loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, kernel.sleepOffsets(since: start))
        }
        let block = action == .perform ? " B" : ""
        // The waiting message makes the first iteration a poll (rule 21a); the handler's wake-up adds nothing.
        #expect(trace == "Entry BT BS P\(block) BT BS BW AW T Exit")
        #expect(sleeps == [.zero ... .milliseconds(50)])
    }

    /// A run nested in a timer callout has its own window: a wake-up from its own timer callout is ignored, one
    /// from its BeforeTimers observer counts for its own first wait; the outer run, back in step 9, ignores both.
    @Test(arguments: [Loop.Activity.beforeTimers, .afterWaiting])
    func aNestedRunsCallouts(_ activity: Loop.Activity) {
        let (trace, sleeps) = onVirtualLoop { kernel, loop -> (String, [ClosedRange<Duration>]) in
            let start = kernel.now
            let log = TraceLog()
            loop.add(traceObserver(log), forMode: .default)
            loop.add(LoopObserver(activities: .all) { _, activity in log.append("n.\(activity.short)") }, forMode: "nested")
            loop.add(LoopObserver(activities: activity, repeats: false, order: -1) { _, _ in loop.wakeUp() }, forMode: "nested")
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(10))) { _ in
                log.append("T1")
                loop.add(LoopTimer(fireAt: kernel.now.advanced(by: .milliseconds(5))) { _ in
                    log.append("N")
                    loop.perform(inMode: "nested") { log.append("nB") }
                    loop.wakeUp()
                }, forMode: "nested")
                loop.run(mode: "nested", timeout: .seconds(1))
                loop.wakeUp()
            }, forMode: .default)
            loop.add(LoopTimer(fireAt: start.advanced(by: .milliseconds(50))) { _ in log.append("T2") }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(1))
            return (log.text, kernel.sleepOffsets(since: start))
        }
        let nestedExtra = activity == .beforeTimers ? "n.BT n.BS n.BW n.AW " : ""
        #expect(trace == "Entry BT BS BW AW T1 n.Entry \(nestedExtra)n.BT n.BS n.BW n.AW N nB n.Exit BT BS BW AW T2 Exit")
        let nestedSleeps: [ClosedRange<Duration>] = activity == .beforeTimers
            ? [.milliseconds(10) ... .milliseconds(10), .milliseconds(10) ... .milliseconds(15)]
            : [.milliseconds(10) ... .milliseconds(15)]
        #expect(sleeps == [.zero ... .milliseconds(10)] + nestedSleeps + [.milliseconds(15) ... .milliseconds(50)])
    }

    /// Another thread's wake-up written during steps 8-9 (a perform the timer callout waits for) is consumed
    /// with the step, as CF ignores wake-ups then: its block runs in step 9, and the next wait sleeps.
    @Test func anotherThreadsPerformDuringStep9CostsNoIteration() {
        let (trace, sleeps) = traceTimerCallout { loop, log in
            onThread { loop.perform(inMode: .default) { log.append("B") } }
        }
        #expect(trace == "Entry BT BS BW AW T1 B BT BS BW AW T2 Exit")
        #expect(sleeps == [.zero ... .milliseconds(10), .milliseconds(10) ... .milliseconds(50)])
    }

    /// Another thread's perform still wakes a sleeping loop at once (rule 31), in the iteration it wakes.
    @Test func anotherThreadsPerformWakesASleepingLoop() {
        let kernel = VirtualKernel(autoAdvance: false)
        let log = TraceLog()
        let background = BackgroundLoop(kernel: kernel) { loop in
            loop.add(LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in log.append(activity.short) },
                     forMode: .default)
        }
        eventually(timeout: .seconds(60)) { background.loop.isWaiting }
        background.loop.perform(inMode: .default) { log.append("B") }
        eventually(timeout: .seconds(60)) { log.events.contains("B") }
        let written = kernel.wakeUpsWritten
        background.stop()
        #expect(Array(log.events.prefix(3)) == ["BW", "AW", "B"])
        #expect(kernel.now == Loop.Instant(nanoseconds: 1_000_000_000), "no virtual time passed: the perform woke it")
        #expect(written == 1, "one eventfd write, for the one perform to a waiting loop")
    }
}

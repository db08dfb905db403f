import Analysis
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// What held the loop when a late timer came due, when a callout runs the loop nested in another mode (a modal
/// session, as the `modes` workload runs one).
@Suite struct NestedAttributionTests {
    static let modal = "rlctl.modal"
    static let asleep = "wake-up latency (the loop was asleep)"

    /// Outer run in the default mode; timer 2 ("mode-switch") is a callout from 10 to 40 ms that runs the loop in
    /// the modal mode from 10 to 39.5 ms, asleep there from 11 to 24 and from 24.5 to 39.
    /// Timer 1 ("default-only") is due at 15 and can fire only in the default mode: it fires at 41.
    /// Timer 3 ("everywhere") is in both modes: due at 20, it fires at 24 inside the modal run; due at 30, it fires
    /// at 42 in the default mode.
    static func modalSession() -> TraceBuilder {
        var t = TraceBuilder()
        t.add(0, .itemLabel(itemID: 1, kind: .timer, label: "default-only"))
        t.add(0, .itemLabel(itemID: 2, kind: .timer, label: "mode-switch"))
        t.add(0, .itemLabel(itemID: 3, kind: .timer, label: "everywhere"))
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.sleep(from: 1, to: 10)
        t.add(10, .timerFireBegin(loopID: 1, timerID: 2, scheduled: 10_000_000, tolerance: 0, interval: 0, missed: 0))
        t.add(10, .runBegin(loopID: 1, mode: modal, timeoutNanoseconds: 30_000_000, returnAfterSourceHandled: false))
        t.mode = modal
        t.depth = 2
        t.activity(10, .entry)
        t.activity(10, .beforeTimers)
        t.sleep(from: 11, to: 24)
        t.timer(3, scheduled: 20, at: 24, until: 24.2)
        t.activity(24.3, .beforeTimers)
        t.sleep(from: 24.5, to: 39)
        t.activity(39.5, .exit)
        t.add(39.5, .runEnd(loopID: 1, mode: modal, result: .timedOut))
        t.mode = "kCFRunLoopDefaultMode"
        t.depth = 1
        t.add(40, .timerFireEnd(loopID: 1, timerID: 2))
        t.timer(1, scheduled: 15, at: 41, until: 41.5)
        t.timer(3, scheduled: 30, at: 42, until: 42.5)
        t.activity(43, .exit)
        t.runEnd(43)
        return t
    }

    @Test func aTimerTheNestedRunCouldNotServeIsChargedToTheCalloutHoldingTheOuterRun() throws {
        let s = try Self.modalSession().summarize()
        let defaultOnly = try #require(s.timers.first { $0.label == "default-only" })
        #expect(defaultOnly.lateFiringCauses == ["timer mode-switch": 1])
    }

    @Test func aTimerTheNestedRunCouldServeIsChargedToWhatHeldThatRun() throws {
        let s = try Self.modalSession().summarize()
        let everywhere = try #require(s.timers.first { $0.label == "everywhere" })
        // Due at 20 while the modal run slept (it fired there at 24), and due at 30 while it slept again: a timer
        // seen firing in the modal mode could have been served by that run, so its sleep made it late.
        #expect(everywhere.lateFiringCauses == [Self.asleep: 2])
        #expect(s.loops[0].lateFiringCauses == ["timer mode-switch": 1, Self.asleep: 2])
        #expect(s.loops[0].nestedRuns == 1)
        #expect(s.loops[0].runs == 2)
        #expect(s.loops[0].wallNanoseconds == 43_000_000, "a nested run's time is inside its outer run's")
    }

    @Test func aCalloutOfTheNestedRunIsWhatHeldIt() throws {
        // Like the modal session, but the modal run is busy in a source callout from 12 to 23 ms when timer 3 is due.
        var t = TraceBuilder()
        t.add(0, .itemLabel(itemID: 2, kind: .timer, label: "mode-switch"))
        t.add(0, .itemLabel(itemID: 3, kind: .timer, label: "everywhere"))
        t.add(0, .itemLabel(itemID: 9, kind: .source, label: "menu"))
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.add(10, .timerFireBegin(loopID: 1, timerID: 2, scheduled: 10_000_000, tolerance: 0, interval: 0, missed: 0))
        t.add(10, .runBegin(loopID: 1, mode: Self.modal, timeoutNanoseconds: 0, returnAfterSourceHandled: false))
        t.mode = Self.modal
        t.depth = 2
        t.activity(10, .beforeTimers)
        t.source(9, signaled: 11, at: 12, until: 23)
        t.timer(3, scheduled: 20, at: 23.5, until: 23.6)
        t.activity(24, .exit)
        t.add(24, .runEnd(loopID: 1, mode: Self.modal, result: .handledSource))
        t.mode = "kCFRunLoopDefaultMode"
        t.depth = 1
        t.add(25, .timerFireEnd(loopID: 1, timerID: 2))
        t.activity(26, .exit)
        t.runEnd(26)
        let s = try t.summarize()
        #expect(s.timers.first { $0.label == "everywhere" }?.lateFiringCauses == ["source menu": 1])
    }

    @Test func aTimerDueWhileItsOwnLoopSleptAtTheTopBlamesTheWakeUp() throws {
        // No nesting: the outermost run asleep is wake-up latency, as before.
        var t = TraceBuilder()
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.sleep(from: 0, to: 12)
        t.timer(1, scheduled: 10, at: 12, until: 12.1)
        t.activity(13, .exit)
        t.runEnd(13)
        #expect(try t.summarize().loops[0].lateFiringCauses == [Self.asleep: 1])
    }
}

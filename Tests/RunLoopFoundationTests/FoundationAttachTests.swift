import Foundation
import RunLoopCore
@testable import RunLoopFoundation
import Testing
import TestSupport

/// Records what the adapter sends for one loop, one line per event.
final class CapturingSink: LoopEventSink, @unchecked Sendable {
    let lines = Shared<[String]>([])

    override func loopCreated(loopID: UInt64, threadID: Int32, name: String) {
        lines.mutate { $0.append("loop_create \(loopID) \(name)") }
    }

    override func loopAdapted(loopID: UInt64, adapter: Adapter, groupID: UInt64) {
        lines.mutate { $0.append("loop_adapted \(loopID) \(adapter) group \(groupID)") }
    }

    override func activity(_ activity: Loop.Activity, _ context: Context) {
        let line = "\(activity) depth \(context.depth) iteration \(context.iteration) \(context.mode.name)"
        lines.mutate { $0.append(line) }
    }
}

/// Runs `body` on a new thread, whose RunLoop.current is its own, and returns what it returned or threw.
private func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
    try onThread { Result<T, any Error> { try body() } }.get()
}

/// A run of `mode` until `deadline` with one timer already due: CF sleeps once (its timer descriptor is ready at
/// once), fires the timer after waking, and the run finishes because the mode is then empty.
private func runOnce(_ mode: RunLoop.Mode = .default, firing handler: @escaping @Sendable () -> Void = {}) {
    let timer = Timer(fire: Date(timeIntervalSinceNow: -1), interval: 0, repeats: false) { _ in handler() }
    RunLoop.current.add(timer, forMode: mode)
    _ = RunLoop.current.run(mode: mode, before: Date(timeIntervalSinceNow: 5))
}

/// One iteration that fires a due timer, as the adapter reports it.
private func iteration(_ number: Int, depth: Int = 1, mode: String = "kCFRunLoopDefaultMode") -> [String] {
    ["before_timers", "before_sources", "before_waiting", "after_waiting"].map {
        "\($0) depth \(depth) iteration \(number) \(mode)"
    }
}

@Suite struct FoundationAttachTests {
    @Test func runsAreAnnouncedOnceThenReportedActivityByActivity() throws {
        let sink = CapturingSink()
        let loopID = try onOwnThread {
            let attachment = try FoundationLoopTracing.attach(to: .current, name: "worker", sinks: .provided { sink })
            runOnce()
            runOnce()
            attachment.detach()
            return attachment.loopID
        }
        let expected = ["loop_create \(loopID) worker", "loop_adapted \(loopID) foundation group 0",
                        "entry depth 1 iteration 0 kCFRunLoopDefaultMode"] + iteration(1)
            + ["exit depth 1 iteration 1 kCFRunLoopDefaultMode", "entry depth 1 iteration 1 kCFRunLoopDefaultMode"]
            + iteration(2) + ["exit depth 1 iteration 2 kCFRunLoopDefaultMode"]
        #expect(sink.lines.value == expected)
    }

    @Test func aRunInsideACalloutIsOneDeeperInItsOwnMode() throws {
        let sink = CapturingSink()
        let privateMode = RunLoop.Mode("rlctl.tests.private")
        let loopID = try onOwnThread {
            // The private mode exists before the attach (its timer made it), so the observer is in it.
            let inner = Timer(fire: Date(timeIntervalSinceNow: -1), interval: 0, repeats: false) { _ in }
            RunLoop.current.add(inner, forMode: privateMode)
            let attachment = try FoundationLoopTracing.attach(to: .current, name: "nested", sinks: .provided { sink })
            runOnce { _ = RunLoop.current.run(mode: privateMode, before: Date(timeIntervalSinceNow: 5)) }
            attachment.detach()
            return attachment.loopID
        }
        let expected = ["loop_create \(loopID) nested", "loop_adapted \(loopID) foundation group 0",
                        "entry depth 1 iteration 0 kCFRunLoopDefaultMode"] + iteration(1)
            + ["entry depth 2 iteration 1 rlctl.tests.private"] + iteration(2, depth: 2, mode: "rlctl.tests.private")
            + ["exit depth 2 iteration 2 rlctl.tests.private", "exit depth 1 iteration 2 kCFRunLoopDefaultMode"]
        #expect(sink.lines.value == expected)
    }

    @Test func aModeCreatedAfterTheAttachIsSeenOnceObserved() throws {
        let sink = CapturingSink()
        let lateMode = RunLoop.Mode("rlctl.tests.late")
        try onOwnThread {
            let attachment = try FoundationLoopTracing.attach(to: .current, name: "late", sinks: .provided { sink })
            runOnce(lateMode)                    // the mode did not exist at the attach: not observed
            #expect(sink.lines.value.count == 2, "only the announcement: \(sink.lines.value)")
            attachment.observeNewModes()
            runOnce(lateMode)
            attachment.detach()
        }
        #expect(sink.lines.value.dropFirst(2).first == "entry depth 1 iteration 0 rlctl.tests.late",
                "the unobserved run's iteration is not counted: \(sink.lines.value)")
        #expect(sink.lines.value.count == 2 + 6)
    }

    @Test func aNewSinkGetsTheAnnouncementAgainAndNoSinkGetsNothing() throws {
        let first = CapturingSink()
        let second = CapturingSink()
        let current = Shared<LoopEventSink?>(nil)
        let loopID = try onOwnThread {
            let attachment = try FoundationLoopTracing.attach(to: .current, name: "swap",
                                                              sinks: .provided { current.value })
            runOnce()                            // no sink: nothing sent, but the iteration is counted
            current.value = first
            runOnce()
            current.value = second
            runOnce()
            current.value = nil
            runOnce()
            attachment.detach()
            return attachment.loopID
        }
        let announcement = ["loop_create \(loopID) swap", "loop_adapted \(loopID) foundation group 0"]
        #expect(first.lines.value == announcement + ["entry depth 1 iteration 1 kCFRunLoopDefaultMode"] + iteration(2)
            + ["exit depth 1 iteration 2 kCFRunLoopDefaultMode"])
        #expect(second.lines.value == announcement + ["entry depth 1 iteration 2 kCFRunLoopDefaultMode"] + iteration(3)
            + ["exit depth 1 iteration 3 kCFRunLoopDefaultMode"])
    }

    @Test func detachStopsTheEvents() throws {
        let sink = CapturingSink()
        try onOwnThread {
            let attachment = try FoundationLoopTracing.attach(to: .current, name: "detached", sinks: .provided { sink })
            runOnce()
            attachment.detach()
            runOnce()
        }
        #expect(sink.lines.value.count == 2 + 6)
        #expect(sink.lines.value.last == "exit depth 1 iteration 1 kCFRunLoopDefaultMode")
    }

    @Test func anotherThreadsRunLoopIsRefused() throws {
        let other = onThread { RunLoop.current }
        #expect(throws: FoundationLoopTracing.AttachError.notCurrentOrMain) {
            _ = try FoundationLoopTracing.attach(to: other)
        }
    }

    @Test func aSecondAttachToTheSameLoopIsRefusedUntilTheFirstDetaches() throws {
        let sink = CapturingSink()
        try onOwnThread {
            let first = try FoundationLoopTracing.attach(to: .current, name: "first", sinks: .provided { sink })
            #expect(throws: FoundationLoopTracing.AttachError.alreadyAttached) {
                _ = try FoundationLoopTracing.attach(to: .current, name: "second", sinks: .provided { sink })
            }
            first.detach()
            first.detach()                           // a second detach changes nothing
            let again = try FoundationLoopTracing.attach(to: .current, name: "again", sinks: .provided { sink })
            runOnce()
            again.detach()
        }
        #expect(sink.lines.value.filter { $0.hasPrefix("loop_create") }.map { $0.split(separator: " ").last! } == ["first", "again"])
        #expect(sink.lines.value.count == 4 + 6)
    }

    @Test func theAttachAnnouncesALoopThatNeverRuns() throws {
        let sink = CapturingSink()
        let loopID = try onOwnThread {
            let attachment = try FoundationLoopTracing.attach(to: .current, name: "idle", sinks: .provided { sink })
            attachment.detach()
            return attachment.loopID
        }
        #expect(sink.lines.value == ["loop_create \(loopID) idle", "loop_adapted \(loopID) foundation group 0"])
    }
}

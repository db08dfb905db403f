// main-queue-fixture: a process whose main thread runs Loop.main, for MainQueueProcessTests (rule 38 on the real
// main dispatch queue, which inside `swift test` belongs to the test harness). Each scenario prints, in order, what
// ran on the main thread: the activities of Loop.main's runs (Entry BT BS BW AW Exit), main-queue blocks and
// @MainActor jobs, and each run's result (=>…). The test compares the whole output with the exact expected log.
//
//     main-queue-fixture common       DispatchQueue.main blocks and @MainActor jobs run while Loop.main runs a common mode
//     main-queue-fixture private      a private mode leaves them waiting and does not wake for them
//     main-queue-fixture foundation   Foundation's RunLoop.main in the same process: both serve the same queue
import Dispatch
import Foundation
import Glibc
import RunLoopCore

@main
enum MainQueueFixture {
    static func main() {
        switch CommandLine.arguments.dropFirst().first {
        case "common": common()
        case "private": privateMode()
        case "foundation": foundation()
        default:
            FileHandle.standardError.write(Data("usage: main-queue-fixture common|private|foundation\n".utf8))
            exit(2)
        }
    }

    static let loop = Loop.main

    /// Prints one entry of the log; anything that runs off the main thread says so (it would be a bug).
    @Sendable static func say(_ entry: String) {
        print(Thread.isMainThread ? entry : entry + " (not on the main thread!)")
    }

    static func traceActivities(in modes: [Loop.Mode]) {
        for mode in modes {
            loop.add(LoopObserver(activities: .all) { _, activity in say(short(activity)) }, forMode: mode)
        }
    }

    static func short(_ activity: Loop.Activity) -> String {
        switch activity {
        case .entry: return "Entry"
        case .beforeTimers: return "BT"
        case .beforeSources: return "BS"
        case .beforeWaiting: return "BW"
        case .afterWaiting: return "AW"
        default: return "Exit"
        }
    }

    /// Calls `body` on another thread once the main loop sleeps in `mode` (after `after` was signalled).
    static func whenAsleep(in mode: Loop.Mode, after: DispatchSemaphore? = nil, _ body: @escaping @Sendable () -> Void) {
        Thread.detachNewThread {
            after?.wait()
            while !(loop.isWaiting && loop.currentMode == mode) { usleep(100) }
            body()
        }
    }

    // ===== scenarios =====

    /// Work queued before the run runs at its first step 9; a job's second half (after a hop) at the next one;
    /// a block queued by another thread while the loop sleeps wakes it.
    static func common() {
        traceActivities(in: [.default])
        DispatchQueue.main.async { say("block1") }
        let secondHalfRan = DispatchSemaphore(value: 0)
        Task { @MainActor in
            say("task1")
            await Task.yield()          // back to the main queue: the next servicing
            say("task2")
            secondHalfRan.signal()
        }
        whenAsleep(in: .default, after: secondHalfRan) {
            DispatchQueue.main.async {
                say("block2")
                loop.stop()
            }
        }
        say("=>\(loop.run(mode: .default, timeout: .seconds(30)))")
    }

    /// A private mode neither runs main-queue work nor wakes for it; the next common-mode run serves all of it.
    static func privateMode() {
        let modal: Loop.Mode = "modal"
        traceActivities(in: [modal, .default])
        DispatchQueue.main.async { say("block1") }
        Task { @MainActor in say("task1") }
        // The timer ends the modal run once block2 is queued: a fixed date could pass before the other thread
        // saw the loop asleep (a loaded machine), and that thread would wait for a sleep that never comes.
        let timer = LoopTimer(after: .seconds(3600)) { _ in say("timer") }
        loop.add(timer, forMode: modal)
        let queued = DispatchSemaphore(value: 0)
        whenAsleep(in: modal) {
            DispatchQueue.main.async { say("block2") }
            queued.signal()
            timer.nextFireDate = .now
        }
        say("=>\(loop.run(mode: modal, timeout: .seconds(30)))")
        queued.wait()
        say("=>\(loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true))")
    }

    /// Foundation's RunLoop.main and Loop.main in one process: each serves the main queue while it runs; one
    /// nested in the other's servicing finds libdispatch's drain busy, returns at once as if it had handled a
    /// source, and the work queued meanwhile runs at the outer loop's next servicing.
    static func foundation() {
        func runFoundation(_ seconds: Double) -> String {
            "RunLoop.main.run: \(RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: seconds)))"
        }
        func runLoopMain(_ timeout: Duration) -> String {
            "Loop.main.run: =>\(loop.run(mode: .default, timeout: timeout, returnAfterSourceHandled: true))"
        }
        DispatchQueue.main.async { say("block1") }
        say(runFoundation(30))
        DispatchQueue.main.async { say("block2") }
        say(runLoopMain(.seconds(30)))

        DispatchQueue.main.async {
            say("block3")
            DispatchQueue.main.async { say("block4") }
            say("  nested " + runFoundation(0.2))
        }
        say(runLoopMain(.seconds(30)))
        say(runLoopMain(.seconds(30)))

        DispatchQueue.main.async {
            say("block5")
            DispatchQueue.main.async { say("block6") }
            say("  nested " + runLoopMain(.milliseconds(200)))
        }
        say(runFoundation(30))
        say(runFoundation(30))
    }
}

import Dispatch
import Foundation
import Glibc
import RunLoopCore
import Testing

/// LoopThread: a thread that owns a running loop, and Loop.submit, the async way to run a closure on it.
@Suite struct LoopThreadTests {
    @Test func theThreadIsNamedAndRunsItsLoopUntilClosed() throws {
        let thread = LoopThread(name: "render-loop-with-a-long-name")
        let comm = try String(contentsOfFile: "/proc/self/task/\(thread.loop.threadID)/comm", encoding: .utf8)
        #expect(comm == "render-loop-wit\n", "the kernel keeps 15 bytes")
        // Idle, it sleeps instead of finishing; a block performed from here runs on it.
        #expect(eventually { thread.loop.isWaiting })
        let ranOn = Shared<Bool?>(nil)
        thread.loop.perform { ranOn.value = thread.loop.isOwnedByCurrentThread }
        #expect(eventually { ranOn.value != nil })
        #expect(ranOn.value == true)
        thread.close()
        thread.close()   // idempotent
    }

    @Test func aRunStoppedByACalloutIsStartedAgain() async throws {
        let thread = LoopThread(name: "restarts")
        defer { thread.close() }
        let loop = thread.loop
        let runsBefore = loop.statistics.runs
        try await loop.submit { loop.stop() }
        #expect(try await loop.submit { loop.runDepth } == 1)
        #expect(loop.statistics.runs > runsBefore)
    }

    @Test func concurrentClosesAllReturnOnceTheThreadExited() async throws {
        let thread = LoopThread(name: "closers")
        let loop = thread.loop
        let closers = (0..<4).map { _ in JoinableThread { thread.close() } }
        for closer in closers { closer.start() }
        for closer in closers { closer.join() }
        // Every close returned after the tear-down: the loop refuses new blocks.
        await #expect(throws: Loop.ThreadExitedError.self) { try await loop.submit {} }
    }

    @Test func closeFromTheLoopsOwnThreadReturnsAndALaterCloseJoins() async throws {
        let thread = LoopThread(name: "self-close")
        let loop = thread.loop
        let log = TraceLog()
        try await loop.submit {
            thread.close()               // cannot join its own thread: asks for the stop and returns
            log.append("close returned")
        }
        thread.close()
        #expect(log.text == "close returned")
        await #expect(throws: Loop.ThreadExitedError.self) { try await loop.submit {} }
    }

    @Test func aCloseFromInsideANestedRunEndsTheOuterRunToo() async throws {
        let thread = LoopThread(name: "nested-close")
        let loop = thread.loop
        let log = TraceLog()
        loop.perform {
            loop.perform {
                thread.close()
                log.append("asked at depth \(loop.runDepth)")
            }
            let result = loop.run(mode: .default, timeout: .seconds(30))
            log.append("nested \(result)")
        }
        thread.close()
        #expect(log.text == "asked at depth 2 nested stopped")
    }

    /// Performs `body` on a new LoopThread's loop and, once it has returned, closes the thread from here (a close
    /// from here could otherwise be performed in a pass whose blocks were taken before the body's block came);
    /// returns what the body logged.
    private func logOfABlock(onThread name: String, _ body: @escaping @Sendable (LoopThread, Loop, TraceLog) -> Void) -> String {
        let thread = LoopThread(name: name)
        let log = TraceLog()
        let returned = DispatchSemaphore(value: 0)
        thread.loop.perform {
            body(thread, thread.loop, log)
            returned.signal()
        }
        #expect(returned.wait(timeout: .now() + 60) == .success)
        thread.close()
        return log.text
    }

    @Test func aRunStartedAfterTheStopWasPerformedIsStoppedToo() {
        // The order a close from another thread can fall into: the stop is performed in the outer run (step 4)
        // before a block queued earlier starts a nested run (the blocks of step 4's second pass).
        let text = logOfABlock(onThread: "late-nested") { thread, loop, log in
            thread.close()               // on the loop's thread: signals the stop source and returns
            loop.perform {
                log.append("depth \(loop.runDepth)")
                log.append("nested \(loop.run(mode: .default, timeout: .seconds(20)))")
            }
        }
        #expect(text == "depth 1 nested stopped")
    }

    @Test func theStopComesAfterTheProgramsOwnSourcesAndEndsEveryLaterRun() {
        let text = logOfABlock(onThread: "stop-order") { thread, loop, log in
            let mine = LoopSource(label: "mine") { log.append("mine") }
            loop.add(mine, forMode: .default)
            thread.close()               // the stop source is signalled first
            mine.signal()
            // One source per run: the program's, though signalled later; then the stop, in each run that follows.
            log.append("\(loop.run(mode: .default, timeout: .seconds(20), returnAfterSourceHandled: true))")
            log.append("\(loop.run(mode: .default, timeout: .seconds(20)))")
            log.append("\(loop.run(mode: .default, timeout: .seconds(20)))")
            mine.invalidate()
        }
        #expect(text == "mine handled_source stopped stopped")
    }

    @Test func releasingTheLastReferenceClosesTheThread() async {
        var thread: LoopThread? = LoopThread(name: "released")
        let loop = thread!.loop
        thread = nil                     // deinit closes and joins
        await #expect(throws: Loop.ThreadExitedError.self) { try await loop.submit {} }
    }

    @Test func releasingTheLastReferenceOnTheLoopsOwnThreadDetachesIt() async {
        let box = Shared<LoopThread?>(LoopThread(name: "self-released"))
        let loop = box.value!.loop
        loop.perform { box.value = nil }  // deinit on the loop's thread: stop requested, thread detached
        // Nobody joins it: the thread exits by itself (and is gone from /proc once its tear-down is done).
        #expect(eventually { access("/proc/self/task/\(loop.threadID)", F_OK) != 0 })
        await #expect(throws: Loop.ThreadExitedError.self) { try await loop.submit {} }
    }

    @Test func closingUnderLoadLeavesNoCallerWaiting() async {
        for _ in 0..<5 {
            let thread = LoopThread(name: "close-load")
            let loop = thread.loop
            let outcomes = await withTaskGroup(of: (ran: Int, exited: Int).self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var ran = 0, exited = 0
                        for _ in 0..<200 {
                            do {
                                try await loop.submit {}
                                ran += 1
                            } catch is Loop.ThreadExitedError {
                                exited += 1
                            } catch {
                                Issue.record("unexpected \(error)")
                            }
                        }
                        return (ran, exited)
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(1))
                    thread.close()
                    return (0, 0)
                }
                var total = (ran: 0, exited: 0)
                for await outcome in group { total.ran += outcome.ran; total.exited += outcome.exited }
                return total
            }
            #expect(outcomes.ran + outcomes.exited == 800)
        }
    }

    // ===== submit =====

    @Test func submitReturnsTheValueOrRethrowsTheError() async throws {
        let thread = LoopThread(name: "submit")
        defer { thread.close() }
        let loop = thread.loop
        #expect(try await loop.submit { loop.isOwnedByCurrentThread ? 42 : 0 } == 42)
        struct Refused: Error, Equatable {}
        await #expect(throws: Refused()) { try await loop.submit { throw Refused() } }
    }

    @Test func submitRunsInTheGivenModesOnly() async throws {
        let thread = LoopThread(name: "submit-modes")
        defer { thread.close() }
        let loop = thread.loop
        let log = TraceLog()
        async let privateValue = loop.submit(inModes: ["private"]) { () -> String in
            log.append("private")
            loop.stop()
            return loop.currentMode?.description ?? "none"
        }
        try await loop.submit {
            log.append("default")
            loop.add(LoopSource {}, forMode: "private")
            // Until the private block stops it, however late the task that submits it gets a thread: a timeout
            // could end this run first, and a block for "private" queued after it would wait for good.
            loop.run(mode: "private", timeout: Loop.forever)
        }
        #expect(try await privateValue == "private")
        #expect(log.text == "default private")
    }

    @Test func aCallCancelledBeforeItsClosureStartedSkipsIt() async throws {
        let thread = LoopThread(name: "submit-cancel")
        defer { thread.close() }
        let loop = thread.loop
        let gate = DispatchSemaphore(value: 0)
        let ran = Shared(false)
        loop.perform { gate.wait() }     // holds the loop so the next block waits
        let call = Task { try await loop.submit { ran.value = true } }
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        gate.signal()
        try await loop.submit {}         // everything queued before it has had its turn
        #expect(ran.value == false)
    }

    @Test func aCallFromATaskAlreadyCancelledIsNotQueued() async throws {
        let thread = LoopThread(name: "submit-cancelled")
        defer { thread.close() }
        let loop = thread.loop
        let ran = Shared(false)
        let call = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await loop.submit { ran.value = true }
        }
        await #expect(throws: CancellationError.self) { try await call.value }
        try await loop.submit {}
        #expect(ran.value == false)
    }

    @Test func anActorOnTheLoopCanSubmitToItsOwnLoop() async throws {
        let thread = LoopThread(name: "submit-actor")
        defer { thread.close() }
        let actor = LoopActor(loop: thread.loop)
        let value = try await actor.submitToOwnLoop()
        #expect(value == "ran on the loop thread")
    }
}

extension LoopActor {
    /// From a job of this loop: the closure is a block on a later pass, the job suspended meanwhile.
    func submitToOwnLoop() async throws -> String {
        let loop = self.loop
        return try await loop.submit { loop.isOwnedByCurrentThread ? "ran on the loop thread" : "elsewhere" }
    }
}

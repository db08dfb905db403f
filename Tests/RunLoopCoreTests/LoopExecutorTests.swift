import Dispatch
import Glibc
import RunLoopCore
import Testing

/// An actor whose executor is a loop (rule 39).
actor LoopActor {
    let loop: Loop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    private(set) var notes: [String] = []

    init(loop: Loop) {
        self.loop = loop
    }

    func note(_ text: String) {
        notes.append(text)
    }

    /// Whether this job runs on the loop's thread.
    func runsOnLoopThread() -> Bool {
        loop.isOwnedByCurrentThread && Loop.current === loop
    }

    /// Queues `count` jobs of this actor (each a task started here, which inherits the isolation and so is
    /// enqueued on the loop at once) with a performed block after every tenth: one queue, one order.
    func queueJobsAndBlocks(_ count: Int, log: TraceLog) {
        for index in 0..<count {
            Task { self.log(index, log) }
            if index % 10 == 0 { loop.perform { log.append("b\(index)") } }
        }
    }

    private func log(_ index: Int, _ log: TraceLog) {
        log.append("j\(index)")
    }
}

/// Rule 39: a loop as a serial executor.
@Suite struct LoopExecutorTests {
    @Test func jobsRunOnTheLoopThreadInEnqueueOrderWithPerformedBlocks() async throws {
        let thread = LoopThread(name: "exec-order")
        defer { thread.close() }
        let actor = LoopActor(loop: thread.loop)
        let log = TraceLog()
        let before = thread.loop.statistics.jobsRun
        await actor.queueJobsAndBlocks(100, log: log)
        // A block queued after them runs after every one of them (one FIFO queue). The loop publishes its
        // counters when it goes to sleep, which a loaded machine may put off past that block (the jobs and it in
        // one batch): the call's job and the 100 tasks' jobs are counted by the next sleep.
        try await thread.loop.submit {}
        #expect(eventually { thread.loop.statistics.jobsRun - before == 101 },
                "jobs counted: \(thread.loop.statistics.jobsRun - before)")
        var expected: [String] = []
        for index in 0..<100 {
            expected.append("j\(index)")
            if index % 10 == 0 { expected.append("b\(index)") }
        }
        #expect(log.events == expected)
        #expect(await actor.runsOnLoopThread())
    }

    @Test func aJobWakesASleepingLoopByItself() async {
        let thread = LoopThread(name: "exec-wake")
        defer { thread.close() }
        let actor = LoopActor(loop: thread.loop)
        #expect(eventually { thread.loop.isWaiting })
        let before = thread.loop.statistics.wakeUps(.manual)
        // Nothing but the job's enqueue wakes the loop (no wakeUp(), no source, no timer).
        #expect(await actor.runsOnLoopThread())
        #expect(thread.loop.statistics.wakeUps(.manual) == before + 1)
    }

    @Test func isolationChecksPassOnTheLoopThreadOutsideJobsToo() async throws {
        let thread = LoopThread(name: "exec-isolation")
        defer { thread.close() }
        let actor = LoopActor(loop: thread.loop)
        await actor.note("first")
        // A performed block is not a job of the actor, but it runs on the loop's thread: checkIsolated passes,
        // so assumeIsolated gives synchronous access to the actor's state.
        let notes = try await thread.loop.submit { actor.assumeIsolated { $0.notes } }
        #expect(notes == ["first"])
        let preconditionHeld = try await thread.loop.submit { () -> Bool in
            actor.preconditionIsolated()
            return true
        }
        #expect(preconditionHeld)
        #expect(thread.loop.isIsolatingCurrentContext() == false)
        #expect(try await thread.loop.submit { thread.loop.isIsolatingCurrentContext() } == true)
    }

    @Test func assumingIsolationOffTheLoopThreadStopsTheProgram() async {
        await #expect(processExitsWith: .failure) {
            let thread = LoopThread(name: "exec-misuse")
            let actor = LoopActor(loop: thread.loop)
            _ = notesAssumingIsolation(actor)
        }
    }

    @Test func manyActorsShareOneLoopAndEachKeepsItsOrder() async throws {
        let thread = LoopThread(name: "exec-many")
        defer { thread.close() }
        let actors = (0..<16).map { _ in LoopActor(loop: thread.loop) }
        let before = thread.loop.statistics.jobsRun
        await withTaskGroup(of: Bool.self) { group in
            for (index, actor) in actors.enumerated() {
                group.addTask {
                    var onLoop = true
                    for call in 0..<50 {
                        await actor.note("\(index).\(call)")
                        onLoop = await actor.runsOnLoopThread() && onLoop
                    }
                    return onLoop
                }
            }
            for await onLoop in group { #expect(onLoop) }
        }
        for (index, actor) in actors.enumerated() {
            #expect(await actor.notes == (0..<50).map { "\(index).\($0)" })
        }
        // Counters are published at every wait (before a sleep, after a poll): the wait before this block
        // published the jobs before it.
        try await thread.loop.submit {}
        #expect(thread.loop.statistics.jobsRun - before >= 16 * 50)
    }

    /// Rule 39 with rule 5: jobs are for the common modes. A private mode run from a block leaves the actor's
    /// job waiting; the same run in the default mode (a common one) runs it.
    @Test(arguments: [("private", "block timer left job"), ("kCFRunLoopDefaultMode", "job block timer left")])
    func jobsWaitWhileTheLoopRunsAModeThatIsNotCommon(mode: String, expected: String) async throws {
        let thread = LoopThread(name: "exec-modes")
        defer { thread.close() }
        let loop = thread.loop
        let actor = LoopActor(loop: loop)
        let log = TraceLog()
        let mode = Loop.Mode(mode)
        try await loop.submit {
            // On the loop thread, outside any job: the task inherits the actor's isolation, so its job is
            // queued on the loop before the nested run starts.
            _ = actor.assumeIsolated { isolated in
                Task { isolated.note("job"); log.append("job") }
            }
            loop.perform(inModes: [mode]) { log.append("block") }
            let timer = LoopTimer(after: .milliseconds(20)) { _ in
                log.append("timer")
                loop.stop()
            }
            loop.add(timer, forMode: mode)
            loop.run(mode: mode, timeout: .seconds(30))
            log.append("left")
        }
        try await loop.submit {}
        #expect(log.text == expected)
        #expect(await actor.notes == ["job"])
    }

    /// A job that runs the loop (a nested run, even in a common mode) does not run the actor's next job inside
    /// it: the actor's jobs never overlap.
    @Test func aRunNestedInAJobRunsNoOtherJob() async throws {
        let thread = LoopThread(name: "exec-nested")
        defer { thread.close() }
        let loop = thread.loop
        let nester = NestingActor(loop: loop)
        let log = TraceLog()
        await nester.runNested(log)
        try await loop.submit {}
        #expect(log.text == "nested-block left-nested second-job")
    }

    @Test func jobsPendingAtThreadExitAndJobsEnqueuedLaterStillRunInOrder() async {
        let actorBox = Shared<LoopActor?>(nil)
        onThread {
            let loop = Loop.current
            let actor = LoopActor(loop: loop)
            actorBox.value = actor
            // Queued on this loop, which never runs again: the thread exits with them pending.
            actor.assumeIsolated { isolated in
                for index in 0..<20 { Task { isolated.note("pending \(index)") } }
            }
        }
        let actor = actorBox.value!
        // Neither dropped nor a hang: the pending jobs ran (in order) on the loop's fallback, and so does this.
        await actor.note("after exit")
        #expect(await actor.notes == (0..<20).map { "pending \($0)" } + ["after exit"])
        #expect(await actor.runsOnLoopThread() == false)
    }

    @Test func jobsAfterALoopThreadClosedRunOnTheFallback() async {
        let thread = LoopThread(name: "exec-closed")
        let actor = LoopActor(loop: thread.loop)
        await actor.note("on the loop")
        #expect(await actor.runsOnLoopThread())
        thread.close()
        await actor.note("after close")
        #expect(await actor.notes == ["on the loop", "after close"])
        #expect(await actor.runsOnLoopThread() == false)
    }

    /// Bounded stress for ThreadSanitizer: callers on many tasks, blocks from plain threads, and the loop
    /// thread closed while calls are still arriving. Every call completes (on the loop or, once it is gone, on
    /// the fallback), each actor's calls in order.
    @Test func callsRacingAClosingLoopThreadAllComplete() async {
        for round in 0..<5 {
            let thread = LoopThread(name: "exec-stress")
            let actors = (0..<4).map { _ in LoopActor(loop: thread.loop) }
            let performers = (0..<2).map { _ in
                JoinableThread { for _ in 0..<200 { thread.loop.perform {} } }
            }
            for performer in performers { performer.start() }
            await withTaskGroup(of: Void.self) { group in
                for actor in actors {
                    group.addTask { for call in 0..<100 { await actor.note("\(call)") } }
                }
                group.addTask {
                    // Some calls land before the close, some after: which ones varies by round.
                    try? await Task.sleep(for: .microseconds(200 * round))
                    thread.close()
                }
            }
            for performer in performers { performer.join() }
            for actor in actors {
                #expect(await actor.notes == (0..<100).map { "\($0)" })
            }
        }
    }
}

/// The actor's state read synchronously: stops the program unless called on the actor's loop thread.
func notesAssumingIsolation(_ actor: LoopActor) -> [String] {
    actor.assumeIsolated { $0.notes }
}

/// An actor whose job runs the loop nested.
actor NestingActor {
    let loop: Loop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    init(loop: Loop) {
        self.loop = loop
    }

    func runNested(_ log: TraceLog) {
        Task { self.append("second-job", to: log) }    // this actor's next job, queued behind the running one
        let loop = self.loop
        loop.perform(inModes: [.default]) {
            log.append("nested-block")
            loop.stop()
        }
        loop.run(mode: .default, timeout: .seconds(30))
        log.append("left-nested")
    }

    private func append(_ text: String, to log: TraceLog) {
        log.append(text)
    }
}

import Foundation
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// An actor on a loop (rule 39), for the tracing of its jobs.
private actor TracedActor {
    let loop: Loop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    let count = Shared(0)

    init(loop: Loop) {
        self.loop = loop
    }

    func increment() {
        count.mutate { $0 += 1 }
    }

    /// From a callout on the loop's thread, outside any job: tasks isolated to this actor, each enqueued on the
    /// loop as it is created. The jobs need no thread of the cooperative pool, which these tests may be blocking.
    nonisolated func queueJobs(_ count: Int, priority: TaskPriority, performingABlockAfterTheFirst: Bool = false) {
        assumeIsolated { isolated in
            for index in 0..<count {
                Task(priority: priority) { isolated.increment() }
                if index == 0 && performingABlockAfterTheFirst { isolated.loop.perform {} }
            }
        }
    }
}

/// A sink that keeps the callouts and activities of one loop thread as short names with their fields.
private final class CalloutLog: LoopEventSink, @unchecked Sendable {
    let loopID = Shared<UInt64>(0)
    let entries = Shared<[String]>([])
    let jobs = Shared<[(id: UInt64, enqueued: UInt64, priority: UInt8, begun: UInt64)]>([])
    let names = Shared<[String]>([])

    private func keep(_ entry: String, _ context: Context) {
        guard context.loopID == loopID.value else { return }
        entries.mutate { $0.append(entry) }
    }

    override func loopCreated(loopID: UInt64, threadID: Int32, name: String) {
        names.mutate { $0.append(name) }
    }

    override func activity(_ activity: Loop.Activity, _ context: Context) { keep(activity.description, context) }
    override func wakeUp(_ context: Context, reason: Loop.WakeReason, slept: UInt64) { keep("wakeup", context) }
    override func blockBegin(_ context: Context, blockID: UInt64, enqueued: UInt64) { keep("block_begin", context) }
    override func blockEnd(_ context: Context, blockID: UInt64) { keep("block_end", context) }
    override func sourcePerformBegin(_ context: Context, sourceID: UInt64, kind: SourceKind, order: Int, signaled: UInt64) {
        keep("source_perform_begin", context)
    }
    override func sourcePerformEnd(_ context: Context, sourceID: UInt64) { keep("source_perform_end", context) }

    override func jobBegin(_ context: Context, jobID: UInt64, enqueued: UInt64, priority: UInt8) {
        guard context.loopID == loopID.value else { return }
        jobs.mutate { $0.append((jobID, enqueued, priority, Loop.Instant.now.nanoseconds)) }
        keep("job_begin", context)
    }

    override func jobEnd(_ context: Context, jobID: UInt64) { keep("job_end", context) }
}

/// Rule 39: each job is a callout that tracing sees, through the one schema (`job_begin`/`job_end`).
@Suite(.serialized) struct JobTracingTests {
    @Test func aJobIsACalloutInTheIterationOrder() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let sink = CalloutLog()
        LoopEventSink.install(sink)
        defer { LoopEventSink.install(nil) }
        let thread = LoopThread(name: "traced-jobs")   // after the install: its runs report to the sink
        defer { thread.close() }
        sink.loopID.value = thread.loop.id
        let actor = TracedActor(loop: thread.loop)
        #expect(eventually { thread.loop.isWaiting })
        sink.entries.value = []

        // A block performed from here wakes the loop; the jobs and the block it queues wait for the next pass
        // (step 3), in enqueue order.
        thread.loop.perform { actor.queueJobs(2, priority: .high, performingABlockAfterTheFirst: true) }
        // Up to the next sleep (the wake-ups the queued work asked for may add an empty iteration after it).
        func untilSleep() -> [String] {
            let entries = sink.entries.value
            guard let sleep = entries.firstIndex(of: "before_waiting") else { return entries }
            return Array(entries[...sleep])
        }
        #expect(eventually { untilSleep().filter { $0 == "job_end" }.count == 2 && untilSleep().last == "before_waiting" })
        #expect(untilSleep() == ["wakeup", "after_waiting", "block_begin", "block_end",
                                 "before_timers", "before_sources",
                                 "job_begin", "job_end", "block_begin", "block_end", "job_begin", "job_end",
                                 "before_waiting"])
        let jobs = sink.jobs.value
        #expect(Set(jobs.map(\.id)).count == 2 && !jobs.contains { $0.id == 0 })
        #expect(jobs.allSatisfy { $0.enqueued > 0 && $0.enqueued <= $0.begun })
        #expect(jobs.map(\.priority) == [TaskPriority.high.rawValue, TaskPriority.high.rawValue])
        #expect(actor.count.value == 2)
        #expect(sink.names.value.contains("traced-jobs"))
    }

    @Test func jobsRoundTripThroughTheEmbeddedRecorder() throws {
        let loopID = Shared<UInt64>(0)
        let threadID = Shared<Int32>(0)
        let (folder, summary) = try record("jobs") {
            let thread = LoopThread(name: "recorded-jobs")
            loopID.value = thread.loop.id
            threadID.value = thread.loop.threadID
            let actor = TracedActor(loop: thread.loop)
            thread.loop.perform { actor.queueJobs(20, priority: .medium) }
            #expect(eventually { actor.count.value == 20 })
            thread.close()
        }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(summary.eventsLost == 0)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        let mine = events.filter { $0.threadID == threadID.value }
        var open: [UInt64: UInt64] = [:]
        var completed = 0
        var announced = 0
        for event in mine {
            switch event.payload {
            case .jobBegin(let loop, let job, let enqueued, _):
                #expect(loop == loopID.value && job > 0 && enqueued > 0 && enqueued <= event.timestamp)
                #expect(open[job] == nil)
                open[job] = event.timestamp
            case .jobEnd(let loop, let job):
                #expect(loop == loopID.value)
                #expect(open.removeValue(forKey: job) != nil, "job_end without its job_begin")
                completed += 1
            case .loopCreate(let loop, _, let name) where loop == loopID.value:
                // Only this loop's: a loop first touched on this thread (Loop.main, made on first use by any
                // thread) is announced from here too, with its own loop id.
                #expect(name == "recorded-jobs")
                announced += 1
            default:
                break
            }
        }
        #expect(open.isEmpty)
        #expect(completed == 20)
        #expect(announced == 1, "the loop is announced once, on its thread")
    }
}

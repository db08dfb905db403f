import Dispatch
import Foundation
import Glibc
import RunLoopCore
import Testing
@testable import TraceReading
import Tracing

/// Real LTTng: a loop traced through `LTTngSink` into an LTTng session, read back with `CTFTraceReader`.
///
/// One `.serialized` suite, and its sessions take `lttngSessionLock`, so they never overlap in this process; each session has a unique name and
/// tracks this process only. Skipped where LTTng is missing, failed instead when `CI=true`.
@Suite(.serialized, .enabled(if: LTTngTestEnvironment.shouldRun, LTTngTestEnvironment.skipComment))
struct LTTngRoundTripTests {
    @Test func everyLoopEventRoundTripsThroughAnLTTngSession() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        let recording = try LTTngWorkload.record("roundtrip")
        defer { recording.session.removeOutput() }
        let ids = recording.ids
        #expect(ids.result == .stopped)

        let reader = try CTFTraceReader(path: recording.session.output)
        #expect(reader.traceDirectories.count == 1)
        #expect(reader.traceDirectories.first?.hasSuffix("/ust/uid/\(getuid())/64-bit") == true)
        var all: [TraceEvent] = []
        while let event = try reader.next() { all.append(event) }
        #expect(reader.health.isComplete, "LTTng discarded events: \(reader.health)")
        #expect(reader.health.eventsRead == UInt64(all.count))
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp }, "events come out in timestamp order")

        let traced = all.filter(ids.isOurs)
        let reference = recording.reference.filter { ids.isOurs($0) }

        // Exactly what RunLoopCore reported to the sink, in the same order, from the same threads.
        #expect(traced.map(\.payload) == reference.map(\.payload))
        #expect(traced.map(\.threadID) == reference.map(\.threadID))

        // The six activities, in CFRunLoop's order, with the loop's id, the mode's name, depth 1 and iterations
        // that only go up.
        let activities = traced.compactMap { event -> (Loop.Activity, TraceEvent.Place)? in
            if case .activity(let activity, let place) = event.payload { return (activity, place) }
            return nil
        }
        #expect(Set(activities.map(\.0.rawValue)) == Set(Loop.Activity.ordered.map(\.rawValue)), "all six activities were traced")
        #expect(activities.first?.0 == .entry)
        #expect(activities.last?.0 == .exit)
        for (_, place) in activities {
            #expect(place.loopID == ids.loopID)
            #expect(place.mode == "kCFRunLoopDefaultMode")
            #expect(place.depth == 1)
        }
        #expect(zip(activities, activities.dropFirst()).allSatisfy { $0.1.iteration <= $1.1.iteration })
        let middle = activities.dropFirst().dropLast()
        for iteration in Set(middle.map(\.1.iteration)) {
            let names = middle.filter { $0.1.iteration == iteration }.map(\.0.description)
            let expected = ["before_timers", "before_sources", "before_waiting", "after_waiting"]
            #expect(names == expected || names == Array(expected.prefix(2)), "iteration \(iteration): \(names)")
        }
        #expect(Set(middle.map(\.1.iteration)).count >= 3, "the workload takes three iterations")
        #expect(traced.filter { if case .activity = $0.payload { return true } else { return false } }
            .allSatisfy { $0.threadID == ids.threadID }, "vtid is the loop's thread")

        // Runs.
        let runs = traced.filter { if case .runBegin = $0.payload { return true } else { return false } }
        #expect(runs.map(\.payload) == [.runBegin(loopID: ids.loopID, mode: "kCFRunLoopDefaultMode",
                                                  timeoutNanoseconds: 10_000_000_000, returnAfterSourceHandled: false)])
        #expect(traced.contains { $0.payload == .runEnd(loopID: ids.loopID, mode: "kCFRunLoopDefaultMode", result: .stopped) })

        // The timer.
        let fire = traced.first { if case .timerFireBegin = $0.payload { return true } else { return false } }
        #expect(fire?.payload == .timerFireBegin(loopID: ids.loopID, timerID: ids.timerID, scheduled: ids.timerFireDate,
                                                  tolerance: 1_000_000, interval: 0, missed: 0))
        if let fire { #expect(fire.timestamp >= ids.timerFireDate, "fired at or after its fire date, on the same clock") }
        #expect(traced.contains { $0.payload == .timerFireEnd(loopID: ids.loopID, timerID: ids.timerID) })

        // The source: signalled on another thread, performed on the loop's.
        let signal = traced.first { $0.payload == .sourceSignal(sourceID: ids.sourceID) }
        #expect(signal != nil)
        #expect(signal?.threadID != ids.threadID && signal?.threadID != 0)
        let perform = traced.first { if case .sourcePerformBegin = $0.payload { return true } else { return false } }
        if case .sourcePerformBegin(let loopID, let sourceID, let kind, let order, let signaled)? = perform?.payload {
            #expect(loopID == ids.loopID && sourceID == ids.sourceID && kind == .custom && order == 0)
            #expect(signaled > 0 && signaled <= perform!.timestamp)
            if let signal { #expect(signaled <= signal.timestamp + 1_000_000) }
        } else {
            Issue.record("no source_perform_begin in \(traced.map(\.name))")
        }
        #expect(traced.contains { $0.payload == .sourcePerformEnd(loopID: ids.loopID, sourceID: ids.sourceID) })

        // The block the source queued.
        let block = traced.first { if case .blockBegin = $0.payload { return true } else { return false } }
        if case .blockBegin(let loopID, let blockID, let enqueued)? = block?.payload {
            #expect(loopID == ids.loopID && blockID != 0)
            #expect(enqueued > 0 && enqueued <= block!.timestamp)
            #expect(traced.contains { $0.payload == .blockEnd(loopID: ids.loopID, blockID: blockID) })
        } else {
            Issue.record("no block_begin in \(traced.map(\.name))")
        }

        // The observer.
        #expect(traced.contains { $0.payload == .observerBegin(loopID: ids.loopID, observerID: ids.observerID, activity: .beforeWaiting) })
        #expect(traced.contains { $0.payload == .observerEnd(loopID: ids.loopID, observerID: ids.observerID) })

        // Sleeps: the timer woke the first, the source's wake-up the second.
        let wakeUps = traced.compactMap { event -> (Loop.WakeReason, UInt64)? in
            if case .wakeUp(_, let reason, let slept) = event.payload { return (reason, slept) }
            return nil
        }
        #expect(wakeUps.map(\.0) == [.timer, .source])
        #expect(wakeUps.allSatisfy { $0.1 > 0 })

        // Names.
        #expect(traced.contains { $0.payload == .loopCreate(loopID: ids.loopID, threadID: ids.threadID, name: "rl-lttng-test") })
        let labels = traced.compactMap { event -> String? in
            if case .itemLabel(let id, let kind, let label) = event.payload { return "\(id) \(kind) \(label)" }
            return nil
        }
        #expect(Set(labels) == ["\(ids.timerID) timer lttng-timer", "\(ids.sourceID) source lttng-source",
                                "\(ids.observerID) observer lttng-observer"])
    }

    /// Tiny sub-buffers and a burst of events: LTTng discards events, and the reader reports it.
    @Test func eventsLTTngDiscardsAreCountedNotHidden() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        let session = try TestSession.create("discard", channelOptions: ["--subbuf-size=4096", "--num-subbuf=2"])
        defer {
            session.destroy()
            session.removeOutput()
        }
        try session.start()
        let sink = LTTngSink()
        for id in 0..<200_000 as Range<UInt64> { sink.sourceSignaled(sourceID: id, at: 0) }
        try session.stop()

        let reader = try CTFTraceReader(path: session.output)
        var signals: UInt64 = 0
        while let event = try reader.next() {
            if case .sourceSignal = event.payload { signals += 1 }
        }
        let health = reader.health
        #expect(signals < 200_000)
        #expect(health.eventsLost > 0, "\(health)")
        #expect(!health.isComplete)
        #expect(!health.lossWindows.isEmpty)
        #expect(health.lossWindows.allSatisfy { $0.from <= $0.to && !$0.stream.isEmpty })
        #expect(health.lossWindows.map(\.events).reduce(0, +) == health.eventsLost)
        // LTTng counts what it dropped, so the events read and the events lost add up to what was emitted.
        #expect(signals + health.eventsLost == 200_000, "read \(signals), lost \(health.eventsLost)")
    }

    /// Random byte flips and truncations of a real LTTng trace: every read ends with events or a
    /// `TraceReadError`, never a crash or a hang.
    @Test func mutatedLTTngTracesGiveEventsOrErrors() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        let recording = try LTTngWorkload.record("fuzz")
        defer { recording.session.removeOutput() }
        let trace = try CTFTraceReader(path: recording.session.output).traceDirectories[0]
        let outcome = try CTFMutationFuzzer.run(trace: trace, mutations: 200, seed: 0x5EED_1770)
        #expect(outcome.read + outcome.failed == 200)
        #expect(outcome.failed > 0, "some mutations must be detected")
        #expect(outcome.unnamedErrors.isEmpty, "errors must name a file: \(outcome.unnamedErrors.prefix(3))")
    }
}

extension LTTngRoundTripTests {
    /// A main-queue servicing (rule 38) goes through LTTng as its two events and its wake reason, exactly as the
    /// loop reported them.
    @Test func mainQueueServicingsRoundTripThroughAnLTTngSession() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        let recording = try LTTngWorkload.record("mainqueue", workload: MainQueueWorkload.run)
        defer { recording.session.removeOutput() }
        let traced = try recording.tracedEventsOfTheWorkload()
        #expect(traced.map(\.payload) == recording.reference.filter { recording.ids.isOurs($0) }.map(\.payload))
        #expect(traced.map(\.short) == MainQueueWorkload.expectedEvents)
    }

    /// A loop's stall report and the watchdog's hang report go through LTTng field for field, culprit label
    /// included, as the loop and the watchdog reported them.
    @Test func stallAndHangReportsRoundTripThroughAnLTTngSession() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        let recording = try LTTngWorkload.record("stalls", workload: StallWorkload.run, stallThreshold: .milliseconds(10))
        defer { recording.session.removeOutput() }
        let traced = try recording.tracedEventsOfTheWorkload()
        let reports = { (events: [TraceEvent]) in
            events.filter { if case .loopStall = $0.payload { true } else if case .loopHang = $0.payload { true } else { false } }.map(\.payload)
        }
        let expected = reports(recording.reference.filter { recording.ids.isOurs($0) })
        #expect(reports(traced) == expected)
        #expect(expected.contains { if case .loopStall(let stall) = $0 { stall.culpritLabel == "lttng-slow" } else { false } }, "\(expected)")
        #expect(expected.contains { if case .loopHang = $0 { true } else { false } }, "\(expected)")
    }

    /// The guard of runloop_events.def on the LTTng side: the provider library, expanded from the .def by the
    /// preprocessor, declares in a real session's metadata exactly the table's events, with its fields in order
    /// and their types (babeltrace2 prints the metadata as plain TSDL; LTTng prefixes field names with `_`).
    @Test func theProvidersMetadataIsTheDefinition() throws {
        guard LTTngTestEnvironment.requireAvailable() else { return }
        let recording = try LTTngWorkload.record("schema")
        defer { recording.session.removeOutput() }
        let directories = try CTFTraceReader(path: recording.session.output).traceDirectories
        try #require(directories.count == 1)
        let babeltrace = try runProcess("/usr/bin/env", ["babeltrace2", "--output-format=ctf-metadata", directories[0]])
        try #require(babeltrace.status == 0, "babeltrace2 --output-format=ctf-metadata failed (is babeltrace2 installed?)")
        let text = babeltrace.stdout

        let declared = try TraceMetadataEvents(parsing: text, path: directories[0] + "/metadata").events
        #expect(Set(declared.map(\.name)) == Set(TraceSchema.events.map(\.name)))
        for schema in TraceSchema.events {
            guard let event = declared.first(where: { $0.name == schema.name }) else { continue }
            #expect(event.problem == nil, "runloop:\(schema.name): \(event.problem ?? "")")
            // lttng-ust escapes every field name with one more leading underscore.
            #expect(event.fields.map { TraceMetadataEvents.DeclaredField(name: String($0.name.dropFirst()), type: $0.type) }
                    == SchemaDefinitionTests.declaredFields(schema), "fields of runloop:\(schema.name)")
        }
        // Enumeration labels, as the provider declares them.
        for enumeration in TraceSchema.enumerations {
            for label in enumeration.labels {
                #expect(text.contains("\"\(label.label)\" = \(label.value),"), "label \(label.label) of \(enumeration.name)")
            }
        }
    }
}

/// A loop doing a timer, a signalled source, a block and an observer, traced into an LTTng session and
/// recorded in memory at the same time (the reference).
enum LTTngWorkload {
    struct IDs: Sendable {
        var loopID: UInt64 = 0
        var threadID: Int32 = 0
        var timerID: UInt64 = 0
        var sourceID: UInt64 = 0
        var observerID: UInt64 = 0
        var timerFireDate: UInt64 = 0
        var result: Loop.RunResult = .finished

        /// Whether an event belongs to this workload (other tests run loops in this process at the same time).
        func isOurs(_ event: TraceEvent) -> Bool {
            switch event.payload {
            case .activity(_, let place): return place.loopID == loopID
            case .runBegin(let loop, _, _, _), .runEnd(let loop, _, _), .timerFireBegin(let loop, _, _, _, _, _),
                 .timerFireEnd(let loop, _), .sourcePerformBegin(let loop, _, _, _, _), .sourcePerformEnd(let loop, _),
                 .blockBegin(let loop, _, _), .blockEnd(let loop, _), .observerBegin(let loop, _, _),
                 .observerEnd(let loop, _), .wakeUp(let loop, _, _), .loopCreate(let loop, _, _),
                 .mainQueueBegin(let loop), .mainQueueEnd(let loop),
                 .jobBegin(let loop, _, _, _), .jobEnd(let loop, _), .loopAdapted(let loop, _, _),
                 .nioTick(let loop, _, _, _, _), .nioIO(let loop, _, _, _, _), .probeFire(let loop, _, _, _),
                 .loopHang(let loop, _, _, _):
                return loop == loopID
            case .loopStall(let stall): return stall.loopID == loopID
            case .sourceSignal(let source): return source == sourceID
            case .itemLabel(let item, _, _): return [timerID, sourceID, observerID].contains(item)
            case .waitBegin, .waitEnd, .waitThread, .waitBatch, .kernelBegin, .kernelTask, .kernelTimer, .kernelRunQueue, .kernelOffCPU,
                 .kernelLost: return false
            }
        }
    }

    struct Recording {
        var session: TestSession
        var ids: IDs
        var reference: [TraceEvent]

        /// The workload's events in the session's trace, which must be complete.
        func tracedEventsOfTheWorkload() throws -> [TraceEvent] {
            let reader = try CTFTraceReader(path: session.output)
            var traced: [TraceEvent] = []
            while let event = try reader.next() {
                if ids.isOurs(event) { traced.append(event) }
            }
            #expect(reader.health.isComplete, "LTTng discarded events: \(reader.health)")
            return traced
        }
    }

    /// Records `workload` in an LTTng session, with `stallThreshold` as Loop.stallThreshold meanwhile.
    static func record(_ label: String, workload: @escaping @Sendable () -> IDs = runWorkload,
                       stallThreshold: Duration? = nil) throws -> Recording {
        // Installing a sink and the stall threshold are process-wide: one recording at a time (the embedded
        // recorder's tests take the lock too).
        lttngSessionLock.lock()
        defer { lttngSessionLock.unlock() }
        recordingLock.lock()
        defer { recordingLock.unlock() }
        Loop.stallThreshold = stallThreshold
        defer { Loop.stallThreshold = nil }
        let session = try TestSession.create(label)
        do {
            try session.start()
            let tee = TeeSink()
            LoopEventSink.install(tee)
            let ids = Shared(IDs())
            onThread { ids.value = workload() }
            LoopEventSink.install(nil)
            try session.stop()
            return Recording(session: session, ids: ids.value, reference: tee.events)
        } catch {
            LoopEventSink.install(nil)
            session.destroy()
            session.removeOutput()
            throw error
        }
    }

    /// Iteration 1 sleeps until the timer; its callout has another thread signal the source once the loop sleeps
    /// again (a fixed delay could pass before that on a loaded machine); iteration 2 sleeps until then;
    /// iteration 3 performs the source, which queues a block that stops the run.
    @Sendable private static func runWorkload() -> IDs {
        setCurrentThreadName("rl-lttng-test")
        let loop = Loop.current
        let source = LoopSource(label: "lttng-source") {
            loop.perform { loop.stop() }
        }
        let timer = LoopTimer(after: .milliseconds(5), tolerance: .milliseconds(1), label: "lttng-timer") { _ in
            DispatchQueue.global().async {
                _ = eventually(timeout: .seconds(30)) { loop.isWaiting }
                source.signalAndWakeUp()
            }
        }
        let observer = LoopObserver(activities: [.beforeWaiting], label: "lttng-observer") { _, _ in }
        var ids = IDs(loopID: loop.id, threadID: loop.threadID, timerID: timer.id, sourceID: source.id,
                      observerID: observer.id, timerFireDate: timer.nextFireDate.nanoseconds)
        loop.add(source, forMode: .default)
        loop.add(observer, forMode: .default)
        loop.add(timer, forMode: .default)
        ids.result = loop.run(mode: .default, timeout: .seconds(10))
        source.invalidate()
        observer.invalidate()
        return ids
    }
}

/// One 30 ms callout, watched by a watchdog with a 10 ms threshold: one loop_hang while it runs, one loop_stall
/// (at the test's 10 ms Loop.stallThreshold) when its iteration ends.
enum StallWorkload {
    @Sendable static func run() -> LTTngWorkload.IDs {
        let loop = Loop.current
        let hung = DispatchSemaphore(value: 0)
        let watchdog = LoopWatchdog(threshold: .milliseconds(10), checkInterval: .milliseconds(1)) { _ in hung.signal() }
        watchdog.watch(loop)
        let timer = LoopTimer(after: .milliseconds(2), label: "lttng-slow") { _ in
            usleep(30_000)
            _ = hung.wait(timeout: .now() + .seconds(30))   // and until the watchdog has had its look (a loaded machine)
        }
        loop.add(timer, forMode: .default)
        var ids = LTTngWorkload.IDs(loopID: loop.id, threadID: loop.threadID, timerID: timer.id)
        ids.result = loop.run(mode: .default, timeout: .seconds(10))
        watchdog.stop()
        return ids
    }
}

/// Sends every event to an `LTTngSink` and keeps what it was given, with the calling thread.
final class TeeSink: LoopEventSink, @unchecked Sendable {
    private let lttng = LTTngSink()
    private let lock = NSLock()
    private var log: [TraceEvent] = []

    var events: [TraceEvent] { lock.withLock { log } }

    private func keep(_ payload: TraceEvent.Payload) {
        let event = TraceEvent(timestamp: 0, threadID: currentThreadID(), payload: payload)
        lock.withLock { log.append(event) }
    }

    private func place(_ context: Context) -> TraceEvent.Place {
        .init(loopID: context.loopID, mode: context.mode.name, iteration: context.iteration, depth: context.depth)
    }

    override func loopCreated(loopID: UInt64, threadID: Int32, name: String) {
        lttng.loopCreated(loopID: loopID, threadID: threadID, name: name)
        keep(.loopCreate(loopID: loopID, threadID: threadID, name: name))
    }
    override func itemLabeled(id: UInt64, kind: ItemKind, label: String) {
        lttng.itemLabeled(id: id, kind: kind, label: label)
        keep(.itemLabel(itemID: id, kind: kind, label: label))
    }
    override func activity(_ activity: Loop.Activity, _ context: Context) {
        lttng.activity(activity, context)
        keep(.activity(activity, place(context)))
    }
    override func runBegin(_ context: Context, timeoutNanoseconds: UInt64, returnAfterSourceHandled: Bool) {
        lttng.runBegin(context, timeoutNanoseconds: timeoutNanoseconds, returnAfterSourceHandled: returnAfterSourceHandled)
        keep(.runBegin(loopID: context.loopID, mode: context.mode.name, timeoutNanoseconds: timeoutNanoseconds,
                       returnAfterSourceHandled: returnAfterSourceHandled))
    }
    override func runEnd(_ context: Context, result: Loop.RunResult) {
        lttng.runEnd(context, result: result)
        keep(.runEnd(loopID: context.loopID, mode: context.mode.name, result: result))
    }
    override func timerFireBegin(_ context: Context, timerID: UInt64, scheduled: UInt64, tolerance: UInt64,
                                 interval: UInt64, missed: UInt64) {
        lttng.timerFireBegin(context, timerID: timerID, scheduled: scheduled, tolerance: tolerance, interval: interval, missed: missed)
        keep(.timerFireBegin(loopID: context.loopID, timerID: timerID, scheduled: scheduled, tolerance: tolerance,
                             interval: interval, missed: missed))
    }
    override func timerFireEnd(_ context: Context, timerID: UInt64) {
        lttng.timerFireEnd(context, timerID: timerID)
        keep(.timerFireEnd(loopID: context.loopID, timerID: timerID))
    }
    override func sourceSignaled(sourceID: UInt64, at time: UInt64) {
        lttng.sourceSignaled(sourceID: sourceID, at: time)
        keep(.sourceSignal(sourceID: sourceID))
    }
    override func sourcePerformBegin(_ context: Context, sourceID: UInt64, kind: SourceKind, order: Int, signaled: UInt64) {
        lttng.sourcePerformBegin(context, sourceID: sourceID, kind: kind, order: order, signaled: signaled)
        keep(.sourcePerformBegin(loopID: context.loopID, sourceID: sourceID, kind: kind, order: Int64(order), signaled: signaled))
    }
    override func sourcePerformEnd(_ context: Context, sourceID: UInt64) {
        lttng.sourcePerformEnd(context, sourceID: sourceID)
        keep(.sourcePerformEnd(loopID: context.loopID, sourceID: sourceID))
    }
    override func blockBegin(_ context: Context, blockID: UInt64, enqueued: UInt64) {
        lttng.blockBegin(context, blockID: blockID, enqueued: enqueued)
        keep(.blockBegin(loopID: context.loopID, blockID: blockID, enqueued: enqueued))
    }
    override func blockEnd(_ context: Context, blockID: UInt64) {
        lttng.blockEnd(context, blockID: blockID)
        keep(.blockEnd(loopID: context.loopID, blockID: blockID))
    }
    override func observerBegin(_ context: Context, observerID: UInt64, activity: Loop.Activity) {
        lttng.observerBegin(context, observerID: observerID, activity: activity)
        keep(.observerBegin(loopID: context.loopID, observerID: observerID, activity: activity))
    }
    override func observerEnd(_ context: Context, observerID: UInt64) {
        lttng.observerEnd(context, observerID: observerID)
        keep(.observerEnd(loopID: context.loopID, observerID: observerID))
    }
    override func wakeUp(_ context: Context, reason: Loop.WakeReason, slept: UInt64) {
        lttng.wakeUp(context, reason: reason, slept: slept)
        keep(.wakeUp(loopID: context.loopID, reason: reason, slept: slept))
    }
    override func mainQueueBegin(_ context: Context) {
        lttng.mainQueueBegin(context)
        keep(.mainQueueBegin(loopID: context.loopID))
    }
    override func mainQueueEnd(_ context: Context) {
        lttng.mainQueueEnd(context)
        keep(.mainQueueEnd(loopID: context.loopID))
    }
    override func jobBegin(_ context: Context, jobID: UInt64, enqueued: UInt64, priority: UInt8) {
        lttng.jobBegin(context, jobID: jobID, enqueued: enqueued, priority: priority)
        keep(.jobBegin(loopID: context.loopID, jobID: jobID, enqueued: enqueued, priority: priority))
    }
    override func jobEnd(_ context: Context, jobID: UInt64) {
        lttng.jobEnd(context, jobID: jobID)
        keep(.jobEnd(loopID: context.loopID, jobID: jobID))
    }
    override func loopStall(_ context: Context, start: UInt64, busy: UInt64, threshold: UInt64, culprit: Culprit) {
        lttng.loopStall(context, start: start, busy: busy, threshold: threshold, culprit: culprit)
        keep(.loopStall(.init(loopID: context.loopID, mode: context.mode.name, iteration: context.iteration, start: start,
                              busy: busy, threshold: threshold, culpritKind: culprit.kind, culpritID: culprit.id,
                              culpritDuration: culprit.duration, culpritLabel: culprit.label)))
    }
    override func loopHang(loopID: UInt64, iteration: UInt64, busy: UInt64, threshold: UInt64) {
        lttng.loopHang(loopID: loopID, iteration: iteration, busy: busy, threshold: threshold)
        keep(.loopHang(loopID: loopID, iteration: iteration, busy: busy, threshold: threshold))
    }
}

/// The calling thread's kernel id (gettid(2), which Swift does not import), from /proc/thread-self.
func currentThreadID() -> Int32 {
    var buffer = [CChar](repeating: 0, count: 64)
    let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    guard length > 0 else { return 0 }
    let text = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)   // "<pid>/task/<tid>"
    return Int32(text.split(separator: "/").last ?? "") ?? 0
}


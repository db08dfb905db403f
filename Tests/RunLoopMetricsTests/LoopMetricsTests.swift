import CoreMetrics
import Glibc
import MetricsTestKit
@testable import RunLoopCore
@testable import RunLoopMetrics
import Testing
import TestSupport

/// Every event, counted by name: what a tracer under the metrics' sink receives.
final class CountingSink: LoopEventSink, @unchecked Sendable {
    let counts = Shared<[String: Int]>([:])
    private func saw(_ name: String) { counts.mutate { $0[name, default: 0] += 1 } }

    override func loopCreated(loopID: UInt64, threadID: Int32, name: String) { saw("loopCreated") }
    override func itemLabeled(id: UInt64, kind: ItemKind, label: String) { saw("itemLabeled") }
    override func activity(_ activity: Loop.Activity, _ context: Context) { saw("activity") }
    override func runBegin(_ context: Context, timeoutNanoseconds: UInt64, returnAfterSourceHandled: Bool) { saw("runBegin") }
    override func runEnd(_ context: Context, result: Loop.RunResult) { saw("runEnd") }
    override func timerFireBegin(_ context: Context, timerID: UInt64, scheduled: UInt64, tolerance: UInt64, interval: UInt64, missed: UInt64) {
        saw("timerFireBegin")
    }
    override func timerFireEnd(_ context: Context, timerID: UInt64) { saw("timerFireEnd") }
    override func sourceSignaled(sourceID: UInt64, at time: UInt64) { saw("sourceSignaled") }
    override func sourcePerformBegin(_ context: Context, sourceID: UInt64, kind: SourceKind, order: Int, signaled: UInt64) { saw("sourcePerformBegin") }
    override func sourcePerformEnd(_ context: Context, sourceID: UInt64) { saw("sourcePerformEnd") }
    override func blockBegin(_ context: Context, blockID: UInt64, enqueued: UInt64) { saw("blockBegin") }
    override func blockEnd(_ context: Context, blockID: UInt64) { saw("blockEnd") }
    override func observerBegin(_ context: Context, observerID: UInt64, activity: Loop.Activity) { saw("observerBegin") }
    override func observerEnd(_ context: Context, observerID: UInt64) { saw("observerEnd") }
    override func wakeUp(_ context: Context, reason: Loop.WakeReason, slept: UInt64) { saw("wakeUp") }
    override func mainQueueBegin(_ context: Context) { saw("mainQueueBegin") }
    override func mainQueueEnd(_ context: Context) { saw("mainQueueEnd") }
    override func jobBegin(_ context: Context, jobID: UInt64, enqueued: UInt64, priority: UInt8) { saw("jobBegin") }
    override func jobEnd(_ context: Context, jobID: UInt64) { saw("jobEnd") }
    override func loopAdapted(loopID: UInt64, adapter: Adapter, groupID: UInt64) { saw("loopAdapted") }
    override func nioTick(loopID: UInt64, start: UInt64, end: UInt64, sleep: UInt64, tasks: UInt64) { saw("nioTick") }
    override func nioIO(loopID: UInt64, channelID: UInt64, event: NIOEvent, start: UInt64, end: UInt64) { saw("nioIO") }
    override func probeFire(loopID: UInt64, scheduled: UInt64, lateness: UInt64, cost: UInt64) { saw("probeFire") }
    override func loopStall(_ context: Context, start: UInt64, busy: UInt64, threshold: UInt64, culprit: Culprit) { saw("loopStall") }
    override func loopHang(loopID: UInt64, iteration: UInt64, busy: UInt64, threshold: UInt64) { saw("loopHang") }
    override func lastEventTimestamp() -> UInt64 {
        saw("lastEventTimestamp")
        return 0
    }
}

/// RunLoopMetrics on real loops, into swift-metrics' test factory: counts are exact (every timer callout is one
/// lateness value, every stall one increment), durations only bounded.
@Suite(.serialized) struct LoopMetricsTests {
    static let ms: UInt64 = 1_000_000

    /// Waits (at most 20 s, for a loaded machine) until `done` holds.
    static func waitUntil(_ done: () -> Bool) -> Bool {
        for _ in 0..<2_000 {
            if done() { return true }
            usleep(10_000)
        }
        return done()
    }

    /// Returns once a running `loop` has begun an iteration since the call: a sleeping loop adopts the metrics from
    /// its next iteration (the one a first block wakes it for ends first, then a second block's is a new one).
    static func beginAnIteration(_ loop: Loop) {
        for _ in 0..<2 {
            let ran = Shared(false)
            loop.perform { ran.value = true }
            _ = waitUntil { ran.value }
        }
    }

    /// A LoopThread's loop, attached while it runs: its timer callouts, the blocks performed into it and its two
    /// stalls show in the instruments, exactly, with the loop's name and thread as the only dimensions.
    @Test func aRunningLoopsCalloutsAndStallsAreCountedExactly() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        Loop.stallThreshold = .milliseconds(100)
        defer { Loop.stallThreshold = nil }
        let factory = TestMetrics()
        let thread = LoopThread(name: "metered")
        defer { thread.close() }
        let handle = LoopMetrics.attach(to: thread.loop, factory: factory)
        defer { handle.detach() }
        Self.beginAnIteration(thread.loop)

        let fired = Shared(0)
        let timer = LoopTimer(after: .milliseconds(5), interval: .milliseconds(5), label: "tick") { _ in
            let count = fired.mutate { count -> Int in
                count += 1
                return count
            }
            if count == 5 || count == 10 { usleep(150_000) }   // two stalls, far past the threshold
        }
        thread.loop.add(timer, forMode: .default)
        #expect(Self.waitUntil { fired.value >= 20 }, "the timer fired \(fired.value) times in 20 s")
        timer.invalidate()
        let ran = Shared(0)
        for _ in 0..<10 { thread.loop.perform { ran.mutate { $0 += 1 } } }
        #expect(Self.waitUntil { ran.value == 10 })
        handle.update()

        let dimensions = [("runloop.name", "metered"), ("runloop.thread", String(thread.loop.threadID))]
        let lateness = try factory.expectTimer(LoopMetrics.Name.timerLateness, dimensions)
        #expect(lateness.values.count == fired.value, "one lateness per timer callout")
        #expect(lateness.values.allSatisfy { $0 >= 0 && $0 < 5_000_000_000 })
        let delays = try factory.expectTimer(LoopMetrics.Name.wakeUpDelay, dimensions)
        #expect(delays.values.count >= fired.value + 10, "every timer callout and every block has its wake-up delay")
        #expect(factory.counterTotal(label: LoopMetrics.Name.stalls, dimensions: dimensions) == 2)
        let iterations = factory.counterTotal(label: LoopMetrics.Name.iterations, dimensions: dimensions)
        #expect(iterations >= Int64(fired.value) && iterations <= Int64(thread.loop.statistics.iterations), "\(iterations)")
        // Every interval's share is a fraction; the one that held the two 150 ms callouts was busy. (The last alone
        // can be 0: an interval the loop slept through whole, after the updater's own update.)
        let utilization = try factory.expectMeter(LoopMetrics.Name.utilization, dimensions).values
        #expect(!utilization.isEmpty && utilization.allSatisfy { $0 >= 0 && $0 <= 1 }, "\(utilization)")
        #expect(utilization.contains { $0 > 0 }, "\(utilization)")

        // Detached: nothing more is recorded, and the series are gone from the backend.
        handle.detach()
        let before = lateness.values.count
        let more = LoopTimer(after: .milliseconds(1), label: "after") { _ in fired.mutate { $0 += 1 } }
        let seen = fired.value
        thread.loop.add(more, forMode: .default)
        #expect(Self.waitUntil { fired.value > seen })
        #expect(lateness.values.count == before)
        #expect(factory.timers(label: LoopMetrics.Name.timerLateness).isEmpty)
    }

    /// A loop asleep in one long wait is idle while it sleeps, not only once the wait ends: an update in the middle
    /// of a 400 ms sleep shows the interval idle (it read 100 % active before the sleep in progress counted).
    @Test func aLongSleepIsIdleWhileItLasts() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let factory = TestMetrics()
        let thread = LoopThread(name: "sleeper")
        defer { thread.close() }
        let handle = LoopMetrics.attach(to: thread.loop, factory: factory)
        defer { handle.detach() }
        Self.beginAnIteration(thread.loop)
        // The loop now sleeps: nothing is due, and nothing else is sent to it until the end.
        #expect(Self.waitUntil { thread.loop.isWaiting })
        usleep(50_000)
        handle.update()
        usleep(400_000)
        handle.update()
        let dimensions = [("runloop.name", "sleeper"), ("runloop.thread", String(thread.loop.threadID))]
        let utilization = try #require(try factory.expectMeter(LoopMetrics.Name.utilization, dimensions).lastValue)
        #expect(utilization < 0.05, "\(utilization) active while the loop slept the whole interval")
    }

    /// Attached over a tracer, the metrics pass every event on: the tracer sees each timer callout the metrics
    /// count, and the run it began with goes on reaching it.
    @Test func aTracerBelowStillReceivesEveryEvent() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let tracer = CountingSink()
        LoopEventSink.install(tracer)
        defer { LoopEventSink.install(nil) }
        let factory = TestMetrics()
        let thread = LoopThread(name: "traced")
        defer { thread.close() }
        let handle = LoopMetrics.attach(to: thread.loop, factory: factory)
        defer { handle.detach() }
        // The loop measures itself: the tracer stays the seam's only sink.
        #expect(LoopEventSink.current === tracer)
        Self.beginAnIteration(thread.loop)
        let fired = Shared(0)
        let timer = LoopTimer(after: .milliseconds(2), interval: .milliseconds(2), label: "t") { _ in fired.mutate { $0 += 1 } }
        thread.loop.add(timer, forMode: .default)
        #expect(Self.waitUntil { fired.value >= 10 })
        timer.invalidate()
        let ran = Shared(false)
        thread.loop.perform { ran.value = true }
        #expect(Self.waitUntil { ran.value })
        handle.update()   // the delays the loop's thread kept, recorded
        let lateness = try factory.expectTimer(LoopMetrics.Name.timerLateness,
                                               [("runloop.name", "traced"), ("runloop.thread", String(thread.loop.threadID))])
        #expect(lateness.values.count == fired.value)
        #expect(tracer.counts.value["timerFireBegin"] == fired.value, "\(tracer.counts.value)")
        #expect(tracer.counts.value["timerFireEnd"] == fired.value)
    }

    /// A busy loop's delays are kept on its thread and recorded by the updater, drained when half its ring waits,
    /// and recorded by the loop's thread itself when the ring is full: whichever way, each callout is one value,
    /// none lost and none twice, while the updater drains concurrently.
    @Test func everyDelayOfABusyLoopIsRecordedOnceWhileTheUpdaterDrains() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let factory = TestMetrics()
        let thread = LoopThread(name: "busy")
        defer { thread.close() }
        let handle = LoopMetrics.attach(to: thread.loop, factory: factory)
        defer { handle.detach() }
        Self.beginAnIteration(thread.loop)
        handle.update()
        let dimensions = [("runloop.name", "busy"), ("runloop.thread", String(thread.loop.threadID))]
        // The blocks that began the iteration (the first may have run before the loop adopted the metrics).
        let before = try factory.expectTimer(LoopMetrics.Name.wakeUpDelay, dimensions).values.count

        // A source that re-signals itself from its perform: a callout per iteration, as fast as the loop goes.
        let callouts = 50 * DelayRing.capacity
        let left = Shared(callouts)
        let finished = Shared(false)
        let itself = Shared<LoopSource?>(nil)
        let resignal = LoopSource(label: "resignal") {
            let remaining = left.mutate { value -> Int in
                value -= 1
                return value
            }
            if remaining > 0 { _ = itself.value?.signal() } else { finished.value = true }
        }
        itself.value = resignal
        defer { itself.value = nil }
        thread.loop.add(resignal, forMode: .default)
        _ = resignal.signalAndWakeUp()
        #expect(Self.waitUntil { finished.value }, "\(left.value) callouts left")
        handle.update()
        let delays = try factory.expectTimer(LoopMetrics.Name.wakeUpDelay, dimensions)
        #expect(delays.values.count - before == callouts, "\(delays.values.count - before) delays for \(callouts) callouts")
        #expect(delays.values.allSatisfy { $0 >= 0 })
    }

    /// The ring alone: values come out in order, a full ring refuses the next, and half full is said once.
    @Test func theDelayRingKeepsOrderAndSaysWhenItIsHalfAndWholeFull() {
        let ring = DelayRing()
        var halves = 0
        for value in 0..<UInt64(DelayRing.capacity) {
            switch ring.push(value) {
            case .stored: break
            case .storedHalfFull: halves += 1
            case .full: Issue.record("full at \(value)")
            }
        }
        #expect(halves == 1)
        if case .full = ring.push(99) {} else { Issue.record("a full ring stored a value") }
        var out: [UInt64] = []
        ring.drain { out.append($0) }
        #expect(out == Array(0..<UInt64(DelayRing.capacity)))
        if case .stored = ring.push(7) {} else { Issue.record("an empty ring refused a value") }
        out.removeAll()
        ring.drain { out.append($0) }
        #expect(out == [7])
    }

    /// With no backend (swift-metrics' no-op factory: nothing bootstrapped) attaching installs nothing, so the
    /// loop's path is the one it had.
    @Test func withNoBackendNothingIsInstalled() {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let tracer = CountingSink()
        LoopEventSink.install(tracer)
        defer { LoopEventSink.install(nil) }
        let handle = LoopMetrics.attach(to: Loop.current, factory: NOOPMetricsHandler.instance)
        #expect(LoopEventSink.current === tracer)
        handle.update()
        handle.detach()
        let group = LoopMetrics.attach(adaptedGroup: 7, factory: NOOPMetricsHandler.instance)
        #expect(LoopEventSink.current === tracer)
        group.detach()
    }

    /// The metrics' sink passes on every one of the seam's calls, the clock lookups included.
    @Test func everyEventOfTheSeamIsPassedOn() {
        let below = CountingSink()
        let sink = MetricsSink(next: below, registry: MeterRegistry())
        let name = "default"
        name.withCString { mode in
            let context = LoopEventSink.Context(loopID: 0, modeCString: mode, depth: 1, iteration: 1)
            sink.loopCreated(loopID: 0, threadID: 1, name: "x")
            sink.itemLabeled(id: 1, kind: .timer, label: "t")
            sink.activity(.entry, context)
            sink.runBegin(context, timeoutNanoseconds: 1, returnAfterSourceHandled: false)
            sink.runEnd(context, result: .finished)
            sink.timerFireBegin(context, timerID: 1, scheduled: 1, tolerance: 0, interval: 0, missed: 0)
            sink.timerFireEnd(context, timerID: 1)
            sink.sourceSignaled(sourceID: 1, at: 1)
            sink.sourcePerformBegin(context, sourceID: 1, kind: .custom, order: 0, signaled: 1)
            sink.sourcePerformEnd(context, sourceID: 1)
            sink.blockBegin(context, blockID: 1, enqueued: 1)
            sink.blockEnd(context, blockID: 1)
            sink.observerBegin(context, observerID: 1, activity: .entry)
            sink.observerEnd(context, observerID: 1)
            sink.wakeUp(context, reason: .manual, slept: 1)
            sink.mainQueueBegin(context)
            sink.mainQueueEnd(context)
            sink.jobBegin(context, jobID: 1, enqueued: 1, priority: 0)
            sink.jobEnd(context, jobID: 1)
            sink.loopAdapted(loopID: 1, adapter: .nio, groupID: 1)
            sink.nioTick(loopID: 1, start: 1, end: 2, sleep: 0, tasks: 1)
            sink.nioIO(loopID: 1, channelID: 1, event: .read, start: 1, end: 2)
            sink.probeFire(loopID: 1, scheduled: 1, lateness: 1, cost: 1)
            sink.loopStall(context, start: 1, busy: 2, threshold: 1, culprit: .none)
            sink.loopHang(loopID: 1, iteration: 1, busy: 2, threshold: 1)
            _ = sink.lastEventTimestamp()
        }
        let counts = below.counts.value
        #expect(counts.count == 26 && counts.values.allSatisfy { $0 == 1 }, "\(counts.sorted { $0.key < $1.key })")
        #expect(sink.layered && sink.layeredOver === below)
    }

    /// A loop deallocated while attached: its series end at the next update, nothing crashes, and with nothing
    /// attached the seam goes back to the sink it had.
    @Test func aDeallocatedLoopsSeriesEnd() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let saved = LoopMetrics.updateInterval
        LoopMetrics.updateInterval = .milliseconds(20)
        defer { LoopMetrics.updateInterval = saved }
        let factory = TestMetrics()
        let handle = Shared<LoopMetricsHandle?>(nil)
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Shared((factory, handle))).toOpaque()
        pthread_create(&thread, nil, { argument in
            let shared = Unmanaged<Shared<(TestMetrics, Shared<LoopMetricsHandle?>)>>.fromOpaque(argument!).takeRetainedValue()
            let (factory, handle) = shared.value
            let loop = Loop.current
            handle.value = LoopMetrics.attach(to: loop, factory: factory)
            loop.perform {}
            _ = loop.run(mode: .default, timeout: .milliseconds(10))
            return nil
        }, box)
        pthread_join(thread, nil)
        #expect(!factory.counters(label: LoopMetrics.Name.iterations).isEmpty, "attached")
        #expect(Self.waitUntil { factory.counters(label: LoopMetrics.Name.iterations).isEmpty }, "the series ended")
        handle.value?.update()
        handle.value?.detach()
        #expect(Self.waitUntil { !(LoopEventSink.current is MetricsSink) }, "the seam is given back")
    }
}

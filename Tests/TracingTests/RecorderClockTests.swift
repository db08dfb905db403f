import Foundation
import Glibc
import RunLoopCore
import Synchronization
import Testing
import TraceReading
import Tracing

/// The recorder's timestamps against CLOCK_MONOTONIC, and its stop handshake against threads still emitting.
@Suite(.serialized) struct RecorderClockTests {
    /// Records `body` with `options`, returning the trace folder, the summary and the clock report.
    private func recording(_ name: String, options: EmbeddedRecorder.Options,
                           _ body: (EmbeddedRecorder) -> Void) throws -> (String, EmbeddedRecorder.Summary, EmbeddedRecorder.ClockReport) {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let folder = temporaryPath(name)
        let (_, recorded) = try Recording.run(.embedded(options), into: folder) { body($0.embeddedRecorder!) }
        return (folder, recorded.recorder!, recorded.clock!)
    }

    /// Each event carries the CLOCK_MONOTONIC time read just before it (as a loop's fire, enqueue and signal
    /// times are read before their events), and the time read just after it is kept aside: its stamp must lie
    /// between the two, give or take `slack` ns. Threads emit in bursts, after sleeps and after busy waits, so
    /// that events fall at every point of an anchor's 1 ms window and renewals check the drift.
    private func checkBrackets(clock: EmbeddedRecorder.TimestampClock, slack: UInt64) throws -> EmbeddedRecorder.ClockReport {
        let threads = 3, perThread = 3000
        // Each thread writes its own range; DispatchGroup.wait orders those writes before the reads.
        let after = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: threads * perThread)
        after.initialize(repeating: 0)
        defer { after.deallocate() }
        let afterAddress = UInt(bitPattern: after.baseAddress!)
        var options = EmbeddedRecorder.Options()
        options.clock = clock
        let mode = strdup("bracket")!
        defer { free(mode) }
        let modeAddress = UInt(bitPattern: mode)
        // Other suites' loops emit into the installed recorder at the same time: only this test's threads count.
        let ours = ThreadIDs()
        let (folder, summary, report) = try recording("clock-\(clock)", options: options) { _ in
            let done = DispatchGroup()
            for thread in 0..<threads {
                done.enter()
                Thread {
                    ours.insert(currentThreadID())
                    var generator = SystemRandomNumberGenerator()
                    let mine = UnsafeMutablePointer<UInt64>(bitPattern: afterAddress)! + thread * perThread
                    let sink = LoopEventSink.current!
                    let modeCString = UnsafePointer<CChar>(bitPattern: modeAddress)!
                    for k in 0..<perThread {
                        if k % 50 == 0 {
                            usleep(UInt32.random(in: 0...3000, using: &generator))
                        } else if k % 7 == 0 {
                            let until = Loop.Instant.now.nanoseconds + UInt64.random(in: 0...1_500_000, using: &generator)
                            while Loop.Instant.now.nanoseconds < until {}
                        }
                        let context = LoopEventSink.Context(loopID: UInt64(thread), modeCString: modeCString, depth: 1,
                                                            iteration: UInt64(k))
                        let before = Loop.Instant.now.nanoseconds
                        sink.blockBegin(context, blockID: UInt64(thread * perThread + k), enqueued: before)
                        mine[k] = Loop.Instant.now.nanoseconds
                    }
                    done.leave()
                }.start()
            }
            done.wait()
        }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(summary.eventsLost == 0)
        var reader = try EmbeddedTraceReader(path: folder)
        let (allEvents, error) = readAll(&reader)
        #expect(error == nil)
        #expect(UInt64(allEvents.count) == summary.eventsRecorded)
        let events = allEvents.filter { ours.contains($0.threadID) }
        #expect(events.count == threads * perThread)
        let afterTimes = Array(after)
        var early = 0, late = 0
        var worstEarly: UInt64 = 0, worstLate: UInt64 = 0
        for event in events {
            guard case .blockBegin(_, let id, let before) = event.payload else { continue }
            let end = afterTimes[Int(id)]
            if event.timestamp < before { worstEarly = max(worstEarly, before - event.timestamp) }
            if event.timestamp > end { worstLate = max(worstLate, event.timestamp - end) }
            if event.timestamp + slack < before { early += 1 }
            if event.timestamp > end + slack { late += 1 }
        }
        #expect(early == 0, "\(early) events stamped more than \(slack) ns before a clock_gettime reading made before them (worst \(worstEarly) ns; \(report))")
        #expect(late == 0, "\(late) events stamped more than \(slack) ns after a clock_gettime reading made after them (worst \(worstLate) ns; \(report))")
        return report
    }

    @Test func tscStampsStayWithinAMicrosecondOfClockGettime() throws {
        let report = try checkBrackets(clock: .automatic, slack: 1000)
        // Where the TSC is not eligible (not x86-64, not invariant, or not the kernel's clocksource) the recording
        // used clock_gettime, which the brackets above checked as well.
        if report.usesTSC || report.fallbacks > 0 {
            #expect(report.fallbacks == 0, "the TSC clock drifted beyond 1 µs: \(report)")
            #expect(report.anchorsChecked > 0)
            #expect(report.maxLeadNanoseconds <= 1000 && report.maxLagNanoseconds <= 1000, "\(report)")
        }
    }

    @Test func clockGettimeStampsLieBetweenTheReadingsAround() throws {
        let report = try checkBrackets(clock: .clockGettime, slack: 0)
        #expect(!report.usesTSC && report.fallbacks == 0)
    }

    /// stop() while threads are in the middle of emitting: it waits for events in progress, later ones are
    /// ignored, and the trace holds exactly what the summary says, per thread in order. Discard mode with room,
    /// discard mode dropping, and the flight recorder; each recording also finds the threads' buffers of the
    /// previous one stale. The threads call the recorder itself, not through LoopEventSink.current, so that
    /// they are still emitting into it when it stops.
    @Test func stoppingWhileThreadsEmitLeavesAConsistentTrace() throws {
        var roomy = EmbeddedRecorder.Options()
        roomy.packetSize = 64 * 1024
        var tight = EmbeddedRecorder.Options()
        tight.packetSize = 4096
        tight.packetsPerThread = 2
        tight.flushInterval = .seconds(10)
        var flight = tight
        flight.mode = .overwrite
        flight.packetsPerThread = 4
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let threads = 4
        let stopEmitting = Atomic<Bool>(false)
        let target = Atomic<UInt>(0)          // the recorder the threads emit into (kept alive in `recorders`)
        var recorders: [EmbeddedRecorder] = []
        let emitters = EmittingThreads()
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread {
                var n: UInt64 = 0
                var reportedTo: UInt = 0
                while !stopEmitting.load(ordering: .relaxed) {
                    let bits = target.load(ordering: .acquiring)
                    guard let pointer = UnsafeRawPointer(bitPattern: bits) else { continue }
                    let recorder = Unmanaged<EmbeddedRecorder>.fromOpaque(pointer).takeUnretainedValue()
                    recorder.sourceSignaled(sourceID: UInt64(thread) << 32 | n, at: 0)
                    n += 1
                    if bits != reportedTo {
                        reportedTo = bits
                        emitters.reached(bits, thread: thread)
                    }
                }
                done.leave()
            }.start()
        }
        defer {
            stopEmitting.store(true, ordering: .relaxed)
            done.wait()
        }
        for (index, options) in [roomy, tight, flight, roomy].enumerated() {
            let folder = temporaryPath("stop-race-\(index)")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let recorder = try EmbeddedRecorder(directory: folder, options: options)
            recorders.append(recorder)
            try recorder.start()
            let bits = UInt(bitPattern: Unmanaged.passUnretained(recorder).toOpaque())
            target.store(bits, ordering: .releasing)
            // Every thread must be emitting into this recorder when it stops: a fixed sleep was not enough on two
            // loaded cores (a thread not scheduled within it left its stream out, and the test failed).
            #expect(emitters.waitUntil(threads, reached: bits, within: .seconds(20)),
                    "not every emitting thread reached recording \(index) within 20 s")
            usleep(10_000)
            let summary = try recorder.stop()
            usleep(5_000)                     // the threads go on emitting into the stopped recorder
            #expect(summary.eventsRecorded > 0)
            if options.packetsPerThread == 2 || options.mode == .overwrite { #expect(summary.eventsLost > 0) }
            var reader = try EmbeddedTraceReader(path: folder)
            let (events, error) = readAll(&reader)
            #expect(error == nil)
            #expect(UInt64(events.count) == summary.eventsRecorded)
            if options.mode == .discard { #expect(reader.health.eventsLost == summary.eventsLost) }
            var last: [Int32: UInt64] = [:]
            var outOfOrder = 0
            for event in events {
                guard case .sourceSignal(let id) = event.payload else { continue }
                if let previous = last[event.threadID], previous >= id { outOfOrder += 1 }
                last[event.threadID] = id
            }
            #expect(outOfOrder == 0)
            #expect(last.count == threads, "recording \(index): streams \(last.keys.sorted()), recorded \(summary.eventsRecorded), lost \(summary.eventsLost)")
        }
    }
}

/// Which emitting threads have reached which recorder, so a test stops a recorder only once all emit into it.
private final class EmittingThreads: @unchecked Sendable {
    private let condition = NSCondition()
    private var reached: [UInt: Set<Int>] = [:]

    func reached(_ recorder: UInt, thread: Int) {
        condition.lock()
        reached[recorder, default: []].insert(thread)
        condition.broadcast()
        condition.unlock()
    }

    func waitUntil(_ count: Int, reached recorder: UInt, within timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        while (reached[recorder]?.count ?? 0) < count {
            if !condition.wait(until: deadline) { return (reached[recorder]?.count ?? 0) >= count }
        }
        return true
    }
}

import Analysis
import Foundation
import Glibc
import RunLoopCore
import Testing
import TraceModel
import TraceReading
import TestSupport
import Tracing

/// The embedded recorder's snapshots on stalls (issue 15, item 2 without LTTng): a flight recorder that copies
/// its rings into a trace folder for each stall the policy accepts, while the loops go on.
@Suite(.serialized) struct StallSnapshotRecorderTests {
    /// A loop whose timer fires every 5 ms and sleeps 30 ms in every 4th callout, for `firings` firings.
    private static func janky(firings: Int) {
        onThread {
            let loop = Loop.current
            let count = Shared(0)
            let timer = LoopTimer(after: .milliseconds(5), interval: .milliseconds(5), label: "tick") { timer in
                let fired = count.mutate { $0 += 1; return $0 }
                if fired % 4 == 0 { usleep(30_000) }
                if fired == firings { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            while timer.isValid { loop.run(mode: .default, timeout: .seconds(2)) }
        }
    }

    private static func recordSnapshots(_ name: String, policy: StallSnapshotPolicy, options: EmbeddedRecorder.Options = .init(),
                                        _ body: (Recording) -> Void) throws -> (folder: String, outcome: Recording.Outcome) {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let folder = temporaryPath(name)
        let (_, outcome) = try Recording.run(.embeddedSnapshots(policy, options), into: folder) { body($0) }
        return (folder, outcome)
    }

    @Test func eachAcceptedStallWritesASnapshotHoldingItAndTheIterationsBeforeIt() throws {
        // 12 firings: stalls at firings 4, 8 and 12; at most 2 snapshots.
        let policy = StallSnapshotPolicy(thresholdNanoseconds: 20_000_000, maxSnapshots: 2, minimumGap: .zero)
        let (folder, outcome) = try Self.recordSnapshots("snapshots-two", policy: policy) { _ in Self.janky(firings: 12) }
        let written = try #require(outcome.snapshots)
        #expect(written.map(\.path) == [folder + "/snapshot-1", folder + "/snapshot-2"])
        #expect(outcome.snapshotProblem == nil)
        // The root is no trace itself; its .snapshots file and each snapshot's .end say what another process needs.
        #expect(!FileManager.default.fileExists(atPath: folder + "/metadata"))
        let root = EmbeddedRecorder.snapshotRoot(folder)
        #expect(root.snapshots == written)
        #expect(root.cutOff.isEmpty)
        #expect(root.eventsRecorded == outcome.recorder?.eventsRecorded)

        for (index, snapshot) in written.enumerated() {
            var reader = try EmbeddedTraceReader(path: snapshot.path)
            let explained = try StallSnapshotReader.read(&reader, path: snapshot.path)
            #expect(explained.eventsLost == 0 && reader.health.packetsLost == 0, "a snapshot of an unwrapped ring lost nothing")
            #expect(!reader.health.recordingCutOff, "a written snapshot has its end file")
            // Snapshot N holds the stalls up to the N-th: its newest is the one that took it.
            #expect(explained.stalls.count == index + 1, "\(explained.stalls.map(\.report.iteration))")
            let trigger = try #require(explained.stalls.last)
            #expect(trigger.report.busyNanoseconds >= 20_000_000)
            #expect(trigger.report.culpritLabel == "tick")
            #expect(trigger.report.loopName != nil)
            // Three firings came before the first stall; the second has the most kept before it.
            #expect(trigger.before.count == (index == 0 ? 3 : StallSnapshotReader.iterationsBefore), "\(trigger.before)")
            #expect(trigger.before.allSatisfy { $0.longestCallout == nil || $0.longestCallout == "timer 'tick'" }, "\(trigger.before)")
            #expect(trigger.report.reportedAtNanoseconds <= snapshot.seenAtNanoseconds)
            // The snapshot says which stall took it, and is cut there: the later stalls stay out however late
            // the snapshot thread copied it.
            #expect(snapshot.takenAtNanoseconds == trigger.report.reportedAtNanoseconds)
            #expect(root.snapshots[index].takenAtNanoseconds == snapshot.takenAtNanoseconds)
        }
    }

    @Test func theGapHoldsBackSnapshotsTooCloseToTheLast() throws {
        // Three stalls within about 200 ms, a gap of 10 s: only the first takes a snapshot.
        let policy = StallSnapshotPolicy(thresholdNanoseconds: 20_000_000, maxSnapshots: 5, minimumGap: .seconds(10))
        let (_, outcome) = try Self.recordSnapshots("snapshots-gap", policy: policy) { _ in Self.janky(firings: 12) }
        #expect(outcome.snapshots?.count == 1)
        // A threshold no stall reaches takes none.
        let high = StallSnapshotPolicy(thresholdNanoseconds: 500_000_000, maxSnapshots: 5, minimumGap: .zero)
        let (folder, calm) = try Self.recordSnapshots("snapshots-none", policy: high) { _ in Self.janky(firings: 8) }
        #expect(calm.snapshots == [])
        #expect((EmbeddedRecorder.snapshotRoot(folder).eventsRecorded ?? 0) > 0, "the ring held events: the loop ran")
    }

    /// The loops' names and labels are made once; a ring that came round has overwritten them, and the snapshot
    /// still names the loop and the callouts before the stall.
    @Test func aSnapshotOfARingThatCameRoundStillNamesItsLoopAndCallouts() throws {
        var options = EmbeddedRecorder.Options()
        options.packetSize = 4096
        options.packetsPerThread = 2
        let policy = StallSnapshotPolicy(thresholdNanoseconds: 20_000_000, maxSnapshots: 1, minimumGap: .zero)
        let (_, outcome) = try Self.recordSnapshots("snapshots-names", policy: policy, options: options) { _ in
            onThread {
                setCurrentThreadName("worker")
                let loop = Loop.current
                let count = Shared(0)
                let timer = LoopTimer(after: .milliseconds(1), interval: .milliseconds(1), label: "frame") { timer in
                    let fired = count.mutate { $0 += 1; return $0 }
                    // 600 iterations fill a 4 KiB packet many times over before the stall.
                    if fired == 600 { usleep(30_000) }
                    if fired == 610 { timer.invalidate() }
                }
                loop.add(timer, forMode: .default)
                while timer.isValid { loop.run(mode: .default, timeout: .seconds(5)) }
            }
        }
        let snapshot = try #require(outcome.snapshots?.first)
        var reader = try EmbeddedTraceReader(path: snapshot.path)
        let explained = try StallSnapshotReader.read(&reader, path: snapshot.path)
        #expect(reader.health.packetsLost == 0 && reader.health.eventsLost == 0, "the overwritten packets are no loss in a snapshot")
        let stall = try #require(explained.stalls.last)
        #expect(stall.report.loopName == "worker")
        #expect(stall.before.count == StallSnapshotReader.iterationsBefore)
        #expect(stall.before.allSatisfy { $0.longestCallout == "timer 'frame'" }, "\(stall.before)")
        #expect((outcome.recorder?.eventsLost ?? 0) > 0, "the ring came round")
    }

    /// Threads fill and wrap their small rings as fast as they can while snapshots are copied again and again:
    /// each snapshot is a readable trace in which every thread's events are its newest, in order, and every gap
    /// is a counted loss.
    @Test func snapshotsCopiedWhileThreadsWrapTheirRingsAreWholeAndInOrder() throws {
        var options = EmbeddedRecorder.Options()
        options.packetSize = 4096
        options.packetsPerThread = 4
        let snapshots = 25
        let policy = StallSnapshotPolicy(thresholdNanoseconds: 1, maxSnapshots: snapshots, minimumGap: .zero)
        let threads = 3
        let (_, outcome) = try Self.recordSnapshots("snapshots-stress", policy: policy, options: options) { recording in
            let recorder = recording.embeddedRecorder!
            let done = Shared(false)
            let writers = (0..<threads).map { index in
                JoinableThread {
                    var counter: UInt64 = 0
                    while !done.value || counter < 50_000 {
                        recorder.probeFire(loopID: UInt64(index) + 1, scheduled: counter, lateness: 0, cost: 0)
                        counter += 1
                    }
                }
            }
            writers.forEach { $0.start() }
            var asked = 0
            while asked < snapshots {
                if recorder.requestSnapshot() { asked += 1 }
                #expect(eventually(timeout: .seconds(20)) { recorder.snapshotsWritten == asked })
            }
            done.value = true
            writers.forEach { $0.join() }
        }
        let written = try #require(outcome.snapshots)
        #expect(written.count == snapshots)
        for snapshot in written {
            var reader = try EmbeddedTraceReader(path: snapshot.path)
            var events: [TraceEvent] = []
            do {
                while let event = try reader.next() { events.append(event) }
            } catch {
                Issue.record("\(snapshot.path): \(error)")
            }
            var counters: [UInt64: [UInt64]] = [:]
            for event in events {
                if case .probeFire(let loopID, let scheduled, _, _) = event.payload { counters[loopID, default: []].append(scheduled) }
            }
            var missing: UInt64 = 0
            for (_, values) in counters {
                #expect(zip(values, values.dropFirst()).allSatisfy { $1 > $0 }, "each thread's events in order")
                missing += zip(values, values.dropFirst()).reduce(0) { $0 + ($1.1 - $1.0 - 1) }
            }
            // A gap inside a snapshot is only ever a drop the reader reports (a thread that found its oldest
            // packet being copied), never a silent hole.
            #expect(missing == reader.health.eventsLost, "\(snapshot.path): \(missing) missing, \(reader.health.eventsLost) reported lost")
            #expect(reader.health.packetsLost == 0)
        }
    }

    @Test func withoutTheSnapshotPolicyNothingChanges() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let folder = temporaryPath("no-snapshots")
        let (_, outcome) = try Recording.run(.embedded(), into: folder) { recording in
            #expect(recording.embeddedRecorder?.requestSnapshot() == false)
        }
        #expect(outcome.snapshots == nil)
        #expect(FileManager.default.fileExists(atPath: folder + "/metadata"))
    }
}

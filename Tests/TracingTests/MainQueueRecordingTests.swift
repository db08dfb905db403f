import Foundation
@_spi(VirtualTime) import RunLoopCore
import Testing
import TraceReading
import Tracing

/// A main-queue servicing (rule 38) is traced like any callout: the embedded recorder writes `main_queue_begin`
/// and `main_queue_end` and the `main_queue` wake reason, and the reader reads them back (the LTTng side:
/// LTTngRoundTripTests.mainQueueServicingsRoundTripThroughAnLTTngSession).
@Suite struct MainQueueRecordingTests {
    @Test func servicingsRoundTripThroughTheEmbeddedRecorder() throws {
        let ids = Shared(LTTngWorkload.IDs())
        let (folder, _) = try record("main-queue") { onThread { ids.value = MainQueueWorkload.run() } }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        let ours = events.filter(ids.value.isOurs)
        #expect(ours.map(\.short) == MainQueueWorkload.expectedEvents)
        #expect(ours.contains { $0.payload == .mainQueueBegin(loopID: ids.value.loopID) })
        #expect(ours.contains { $0.payload == .mainQueueEnd(loopID: ids.value.loopID) })
        let reasons = ours.compactMap { event -> Loop.WakeReason? in
            if case .wakeUp(_, let reason, _) = event.payload { return reason }
            return nil
        }
        #expect(reasons == [.mainQueue])
    }
}

/// A loop on a virtual kernel that serves a fake main queue (as `Loop.main` serves the main dispatch queue): one
/// servicing of two blocks, which ends the run (a servicing counts as a handled source).
enum MainQueueWorkload {
    @Sendable static func run() -> LTTngWorkload.IDs {
        let kernel = VirtualKernel()
        let mainQueue = VirtualMainQueue(servedThrough: kernel)
        let loop = Loop.makeCurrent(on: kernel)
        mainQueue.async {}
        mainQueue.async {}
        var ids = LTTngWorkload.IDs(loopID: loop.id, threadID: loop.threadID)
        ids.result = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
        return ids
    }

    static let expectedEvents = ["loop_create", "run_begin", "entry", "before_timers", "before_sources", "before_waiting",
                                 "wakeup", "after_waiting", "main_queue_begin", "main_queue_end", "exit", "run_end"]
}

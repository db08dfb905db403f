import Dispatch
import Foundation
import Glibc
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// What a recording reports while it runs, and what a second recording in the same process knows.
@Suite(.serialized) struct RecorderProgressTests {
    /// The progress count used to move only when a whole packet (256 KiB) was closed: a run that wrote 805
    /// events showed "0 events written" from start to end.
    @Test func progressCountsEventsBeforeTheirPacketIsWritten() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let folder = temporaryPath("progress")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let recording = try Recording.start(.embedded(), into: folder)   // 256 KiB packets: ten events fill none
        let recorder = recording.embeddedRecorder!
        let before = recording.progress!.recorded
        onThread {
            let context = "progress".utf8CString
            context.withUnsafeBufferPointer { mode in
                let ctx = LoopEventSink.Context(loopID: 77, modeCString: mode.baseAddress!, depth: 1, iteration: 1)
                for _ in 0..<10 { recorder.activity(.beforeTimers, ctx) }
            }
            _ = context
        }
        let during = recording.progress!.recorded
        let summary = try #require(try recording.stop().recorder)
        #expect(during >= before + 10, "progress while recording: \(during) (was \(before))")
        #expect(summary.eventsRecorded >= during, "stop's exact count: \(summary.eventsRecorded)")
        #expect(try recording.stop().recorder == summary, "a second stop returns the first one's outcome")
    }

    /// A loop announces itself once, to the sink installed when it is created: a later recording (rlctl run
    /// --repeat) saw its events but not its name or thread.
    @Test func aLaterRecordingNamesLoopsCreatedUnderAnEarlierOne() throws {
        let created = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        let loopID = Shared<UInt64>(0), threadID = Shared<Int32>(0)
        let thread = JoinableThread {
            let loop = Loop.current
            loopID.value = loop.id
            threadID.value = loop.threadID
            created.signal()
            release.wait()
            // Events of the second recording, from the loop the first one saw created.
            loop.run(mode: .default, timeout: .milliseconds(1))
            done.signal()
        }
        let (first, _) = try record("announce-1") {
            thread.start()
            created.wait()
        }
        defer { try? FileManager.default.removeItem(atPath: first) }
        let (second, _) = try record("announce-2") {
            release.signal()
            done.wait()
        }
        thread.join()
        defer { try? FileManager.default.removeItem(atPath: second) }
        let original = try announcements(in: first, of: loopID.value)
        let again = try announcements(in: second, of: loopID.value)
        #expect(original.count == 1 && original.first?.0 == threadID.value, "the first trace: \(original)")
        #expect(again.count == 1, "loop_create events for the loop in the second trace: \(again)")
        #expect(again.first?.0 == threadID.value && again.first?.1 == original.first?.1, "\(again) vs \(original)")
    }

    private func announcements(in folder: String, of loopID: UInt64) throws -> [(Int32, String)] {
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        return events.compactMap { event in
            if case .loopCreate(let id, let tid, let name) = event.payload, id == loopID { return (tid, name) }
            return nil
        }
    }
}

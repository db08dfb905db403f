import Dispatch
import Foundation
import Glibc
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// A recording interrupted by SIGINT or SIGTERM still leaves a complete, readable trace.
@Suite struct RecorderSignalTests {
    /// Where a child process records: derived from the parent's pid, since exit-test bodies cannot capture.
    static func folder(parent: pid_t, signal: Int32) -> String {
        NSTemporaryDirectory() + "rlctl-tests/signal-\(parent)-\(signal)"
    }

    /// In the child: records a loop that never ends, signals itself after 200 timer firings, and must leave
    /// through the signal handler, which stops the recording and re-raises the signal.
    static func recordUntilSignalled(_ signal: Int32) -> Never {
        let recorder = try! EmbeddedRecorder(directory: folder(parent: getppid(), signal: signal))
        try! recorder.start()
        LoopEventSink.install(recorder)
        // Stopped from another thread while the loop emits, as rlctl's signal watcher does; the handler then
        // ends the process by the signal.
        Glibc.signal(signal, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
        source.setEventHandler {
            let summary = try! recorder.stop()
            print("recorded \(summary.eventsRecorded) lost \(summary.eventsLost)")
            fflush(nil)
            Glibc.signal(signal, SIG_DFL)
            raise(signal)
        }
        source.resume()
        let loop = Loop.current
        var fired = 0
        loop.add(LoopTimer(after: .zero, interval: .microseconds(500)) { _ in
            fired += 1
            if fired == 200 { kill(getpid(), signal) }
        }, forMode: .default)
        loop.run()
        exit(3)   // unreachable unless the signal was lost
    }

    /// Reads what the child recorded and checks it against what the child said it wrote.
    private func check(signal: Int32, childOutput: [UInt8]) throws {
        let folder = Self.folder(parent: getpid(), signal: signal)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let said = String(decoding: childOutput, as: UTF8.self)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(events.filter { $0.payload.eventName == "timer_fire_begin" }.count >= 200)
        #expect(said.contains("recorded \(events.count) lost 0"), "the child said: \(said)")
    }

    @Test func sigtermLeavesAReadableTrace() async throws {
        try? FileManager.default.createDirectory(atPath: NSTemporaryDirectory() + "rlctl-tests", withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: Self.folder(parent: getpid(), signal: SIGTERM))
        let result = await #expect(processExitsWith: .signal(SIGTERM), observing: [\.standardOutputContent]) {
            RecorderSignalTests.recordUntilSignalled(SIGTERM)
        }
        if let result { try check(signal: SIGTERM, childOutput: result.standardOutputContent) }
    }

    @Test func sigintLeavesAReadableTrace() async throws {
        try? FileManager.default.createDirectory(atPath: NSTemporaryDirectory() + "rlctl-tests", withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: Self.folder(parent: getpid(), signal: SIGINT))
        let result = await #expect(processExitsWith: .signal(SIGINT), observing: [\.standardOutputContent]) {
            RecorderSignalTests.recordUntilSignalled(SIGINT)
        }
        if let result { try check(signal: SIGINT, childOutput: result.standardOutputContent) }
    }
}

import Foundation
import Glibc
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// The pipe a test child's signal handler writes to (set before the handler is installed).
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// A recording interrupted by SIGINT or SIGTERM still leaves a complete, readable trace.
@Suite struct RecorderSignalTests {
    /// Where a child process records: derived from the parent's pid, since exit-test bodies cannot capture.
    static func folder(parent: pid_t, signal: Int32) -> String {
        NSTemporaryDirectory() + "rlctl-tests/signal-\(parent)-\(signal)"
    }

    /// In the child: records a loop that never ends, signals itself after 200 timer firings, and must leave
    /// through the signal handler, which stops the recording and re-raises the signal.
    static func recordUntilSignalled(_ signal: Int32) -> Never {
        let recording = try! Recording.start(.embedded(), into: folder(parent: getppid(), signal: signal))
        // Stopped from another thread while the loop emits, as rlctl's signal watcher does: the handler only
        // writes to a pipe (all a handler may safely do); the thread reading it stops the recording and ends the
        // process by the signal.
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0)
        signalPipeWriteEnd = ends[1]
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signo in
            var byte = UInt8(truncatingIfNeeded: signo)
            _ = write(signalPipeWriteEnd, &byte, 1)
        }
        sigaction(signal, &action, nil)
        let readEnd = ends[0]
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(readEnd, &byte, 1) != 1 {}
            let summary = try! recording.stop().recorder!
            print("recorded \(summary.eventsRecorded) lost \(summary.eventsLost)")
            fflush(nil)
            Glibc.signal(signal, SIG_DFL)
            kill(getpid(), signal)   // not raise(): this thread may have inherited a mask that blocks it
        }
        let loop = Loop.current
        let fired = Shared(0)
        loop.add(LoopTimer(after: .zero, interval: .microseconds(500)) { _ in
            if fired.mutate({ $0 += 1; return $0 }) == 200 { kill(getpid(), signal) }
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

import Foundation
import Glibc
import RunLoopCore
import TraceReading
import Tracing

/// A fresh folder under the system temp directory.
func temporaryFolder(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "rlctl-tests/\(name)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    try? FileManager.default.createDirectory(atPath: NSTemporaryDirectory() + "rlctl-tests", withIntermediateDirectories: true)
    return path
}

/// Reads every event of a trace (or the error that stopped it).
func readAll(_ reader: inout some TraceEventReader) -> (events: [TraceEvent], error: TraceReadError?) {
    var events: [TraceEvent] = []
    do {
        while let event = try reader.next() { events.append(event) }
        return (events, nil)
    } catch {
        return (events, error)
    }
}

/// Runs `body` on a new joinable thread and waits for it.
func onThread(_ body: @escaping @Sendable () -> Void) {
    let box = ThreadBox(body)
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { raw in
        Unmanaged<ThreadBox>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, Unmanaged.passRetained(box).toOpaque())
    precondition(rc == 0)
    pthread_join(thread, nil)
}

final class ThreadBox: @unchecked Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// One recording at a time per process: tests that record take this lock.
let recordingLock = NSLock()

/// Records what `body` does (on new threads it starts itself), returning the trace folder and summary.
func record(_ name: String, options: EmbeddedRecorder.Options = .init(), _ body: () -> Void) throws -> (String, EmbeddedRecorder.Summary) {
    recordingLock.lock()
    defer { recordingLock.unlock() }
    let folder = temporaryFolder(name)
    let recorder = try EmbeddedRecorder(directory: folder, options: options)
    try recorder.start()
    LoopEventSink.install(recorder)
    body()
    LoopEventSink.install(nil)
    let summary = try recorder.stop()
    return (folder, summary)
}

extension TraceEvent {
    /// A compact text for comparing sequences: "entry", "timer_fire_begin", …
    var short: String { payload.eventName }
}

/// Kernel thread ids collected from several threads.
final class ThreadIDs: @unchecked Sendable {
    private let lock = NSLock()
    private var ids = Set<Int32>()

    func insert(_ id: Int32) {
        lock.lock()
        ids.insert(id)
        lock.unlock()
    }

    func contains(_ id: Int32) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return ids.contains(id)
    }
}

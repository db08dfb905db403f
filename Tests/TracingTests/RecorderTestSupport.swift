import Foundation
import Glibc
import RunLoopCore
import Testing
// Every file of these tests uses the shared helpers (threads, locked values, temporary paths, the CI rule).
@_exported import TestSupport
import TraceReading
import Tracing

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

/// The error reading the embedded trace at `folder` ends with, whether opening it or reading it: nil when it
/// reads to the end.
func embeddedReadFailure(_ folder: String) -> TraceReadError? {
    do {
        var reader = try EmbeddedTraceReader(path: folder)
        return readAll(&reader).error
    } catch {
        return error
    }
}

/// Records what `body` does (on new threads it starts itself), returning the trace folder and summary.
func record(_ name: String, options: EmbeddedRecorder.Options = .init(), _ body: () -> Void) throws -> (String, EmbeddedRecorder.Summary) {
    recordingLock.lock()
    defer { recordingLock.unlock() }
    let folder = temporaryPath(name)
    let (_, outcome) = try Recording.run(.embedded(options), into: folder) { _ in body() }
    let summary = try #require(outcome.recorder, "the embedded recording of \(name) returned no counts")
    return (folder, summary)
}

extension TraceEvent {
    /// A compact text for comparing sequences: "entry", "timer_fire_begin", …
    var short: String { payload.eventName }
}

/// Kernel thread ids collected from several threads.
typealias ThreadIDs = Shared<Set<Int32>>

extension Shared where Value == Set<Int32> {
    convenience init() { self.init([]) }
    func insert(_ id: Int32) { mutate { _ = $0.insert(id) } }
    func contains(_ id: Int32) -> Bool { value.contains(id) }
}

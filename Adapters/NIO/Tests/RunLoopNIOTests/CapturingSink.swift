import CRunLoopNIO
import Glibc
import NIOCore
import NIOPosix
import RunLoopCore
import TestSupport

/// A sink that keeps what the adapter told it, with the thread each call came on.
final class CapturingSink: LoopEventSink, @unchecked Sendable {
    enum Event: Equatable {
        case loopCreated(loopID: UInt64, threadID: Int32, name: String)
        case loopAdapted(loopID: UInt64, adapter: LoopEventSink.Adapter, groupID: UInt64)
        case itemLabeled(id: UInt64, kind: LoopEventSink.ItemKind, label: String)
        case nioTick(loopID: UInt64, start: UInt64, end: UInt64, sleep: UInt64, tasks: UInt64)
        case nioIO(loopID: UInt64, channelID: UInt64, event: LoopEventSink.NIOEvent, start: UInt64, end: UInt64)
        case probeFire(loopID: UInt64, scheduled: UInt64, lateness: UInt64, cost: UInt64)
        case loopStall(loopID: UInt64, mode: String, iteration: UInt64, start: UInt64, busy: UInt64, threshold: UInt64, culprit: LoopEventSink.Culprit)
    }

    private let captured = Shared<[(event: Event, threadID: Int32)]>([])

    var events: [Event] { captured.value.map(\.event) }
    var eventsWithThreads: [(event: Event, threadID: Int32)] { captured.value }

    private func record(_ event: Event) {
        let thread = rlnio_gettid()
        captured.mutate { $0.append((event, thread)) }
    }

    override func loopCreated(loopID: UInt64, threadID: Int32, name: String) { record(.loopCreated(loopID: loopID, threadID: threadID, name: name)) }
    override func loopAdapted(loopID: UInt64, adapter: Adapter, groupID: UInt64) { record(.loopAdapted(loopID: loopID, adapter: adapter, groupID: groupID)) }
    override func itemLabeled(id: UInt64, kind: ItemKind, label: String) { record(.itemLabeled(id: id, kind: kind, label: label)) }
    override func nioTick(loopID: UInt64, start: UInt64, end: UInt64, sleep: UInt64, tasks: UInt64) {
        record(.nioTick(loopID: loopID, start: start, end: end, sleep: sleep, tasks: tasks))
    }
    override func nioIO(loopID: UInt64, channelID: UInt64, event: NIOEvent, start: UInt64, end: UInt64) {
        record(.nioIO(loopID: loopID, channelID: channelID, event: event, start: start, end: end))
    }
    override func probeFire(loopID: UInt64, scheduled: UInt64, lateness: UInt64, cost: UInt64) {
        record(.probeFire(loopID: loopID, scheduled: scheduled, lateness: lateness, cost: cost))
    }

    override func loopStall(_ context: Context, start: UInt64, busy: UInt64, threshold: UInt64, culprit: Culprit) {
        record(.loopStall(loopID: context.loopID, mode: String(cString: context.modeCString), iteration: context.iteration,
                          start: start, busy: busy, threshold: threshold, culprit: culprit))
    }

    var ticks: [(loopID: UInt64, start: UInt64, end: UInt64, sleep: UInt64, tasks: UInt64)] {
        events.compactMap { if case .nioTick(let l, let s, let e, let sl, let t) = $0 { return (l, s, e, sl, t) } else { return nil } }
    }
    var creations: [(loopID: UInt64, threadID: Int32, name: String)] {
        events.compactMap { if case .loopCreated(let l, let t, let n) = $0 { return (l, t, n) } else { return nil } }
    }
    var reads: [(loopID: UInt64, channelID: UInt64, event: LoopEventSink.NIOEvent, start: UInt64, end: UInt64)] {
        events.compactMap { if case .nioIO(let l, let c, let e, let s, let en) = $0 { return (l, c, e, s, en) } else { return nil } }
    }
}

/// The calling thread's kernel id.
func currentThreadID() -> Int32 { rlnio_gettid() }

/// Installs `sink` for `body`, and no sink after it. LoopEventSink.install is process-wide and suites run in
/// parallel, so this holds `recordingLock`, as every test that installs a sink (MetricsTests' layered sink
/// included) does: a tick of another suite's group never reaches this sink.
func withSink<T>(_ sink: LoopEventSink, _ body: () throws -> T) rethrows -> T {
    recordingLock.lock()
    defer { recordingLock.unlock() }
    LoopEventSink.install(sink)
    defer { LoopEventSink.install(nil) }
    return try body()
}

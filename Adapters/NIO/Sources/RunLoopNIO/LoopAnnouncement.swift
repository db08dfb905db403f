import CRunLoopNIO
import Glibc
import RunLoopCore

/// Tells sinks about the calling thread's SwiftNIO event loop: once per sink, before any of its events, as
/// RunLoopCore's loops announce themselves (`loopCreated`, then `loopAdapted` with adapter `nio`).
///
/// Everything here runs on the event loop's own thread and keeps its state in that thread's C thread-local
/// (`rlnio_thread_state`), so the hot path is a few loads: no lock, no allocation.
enum LoopAnnouncement {
    /// The calling loop's trace id, announced to `sink` first when it has not been yet. Sinks are told apart by
    /// address, which is safe because `LoopEventSink.install` keeps every sink it installed alive for good.
    @inline(__always)
    static func loopID(for sink: LoopEventSink) -> UInt64 {
        let state = rlnio_current_thread_state()!
        let sinkBits = UInt(bitPattern: Unmanaged.passUnretained(sink).toOpaque())
        if state.pointee.announced_sink != sinkBits {
            announce(state, to: sink, sinkBits: sinkBits)
        }
        return state.pointee.loop_id
    }

    /// Records the loop's group (the metrics delegate's), and repeats `loop_adapted` to `sink` when a channel
    /// event announced the loop before its group was known.
    @inline(__always)
    static func noteGroup(_ groupID: UInt64, sink: LoopEventSink?) {
        let state = rlnio_current_thread_state()!
        guard state.pointee.group_id != groupID else { return }
        state.pointee.group_id = groupID
        if let sink, state.pointee.announced_sink == UInt(bitPattern: Unmanaged.passUnretained(sink).toOpaque()) {
            sink.loopAdapted(loopID: state.pointee.loop_id, adapter: .nio, groupID: groupID)
        }
    }

    /// Counts the tick and reports it as a stall (`loop_stall`) when its task phase ran longer than
    /// ``Loop/stallThreshold``, from the tick's own times: NIO tells no task apart, so the culprit is "none". I/O
    /// handled before the tick is not in it (NIO counts it as the tick's sleep).
    @inline(__always)
    static func tickReported(loopID: UInt64, start: UInt64, end: UInt64, sink: LoopEventSink) {
        let state = rlnio_current_thread_state()!
        state.pointee.ticks &+= 1
        let limit = Loop.stallThresholdNanoseconds
        let busy = end > start ? end - start : 0
        guard limit != 0, busy > limit else { return }
        let context = LoopEventSink.Context(loopID: loopID, modeCString: tickMode, depth: 1, iteration: state.pointee.ticks)
        sink.loopStall(context, start: start, busy: busy, threshold: limit, culprit: .none)
    }

    /// The mode NIO loops report in stall events: they have none; their tick's task phase stalled.
    nonisolated(unsafe) private static let tickMode: UnsafePointer<CChar> = UnsafePointer(strdup("nio-tasks")!)

    @inline(never)
    private static func announce(_ state: UnsafeMutablePointer<rlnio_thread_state>, to sink: LoopEventSink, sinkBits: UInt) {
        if state.pointee.loop_id == 0 {
            state.pointee.loop_id = LoopEventSink.makeID()
        }
        state.pointee.announced_sink = sinkBits
        sink.loopCreated(loopID: state.pointee.loop_id, threadID: rlnio_gettid(), name: currentThreadName())
        // group_id 0: a channel event of a loop whose metrics delegate has not ticked yet; its first tick repeats
        // loop_adapted with the group (noteGroup).
        sink.loopAdapted(loopID: state.pointee.loop_id, adapter: .nio, groupID: state.pointee.group_id)
    }

    private static func currentThreadName() -> String {
        var buffer = [CChar](repeating: 0, count: 32)
        guard rlnio_thread_name(&buffer, Int32(buffer.count)) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

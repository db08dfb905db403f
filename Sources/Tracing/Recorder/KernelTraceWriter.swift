import Glibc
import TraceModel

/// Writes the kernel view of a recording (the `kernel_*` events of the schema) as a trace of its own, in the embedded
/// recorder's format: `<trace>/rlctl-kernel/` (`TraceSchema.kernelViewFolder`) holds its metadata, one stream and its end
/// file, so the readers check it like any embedded trace (a stream cut short or deleted is a loss, a missing end file
/// a recording cut off) and merge its events with the trace's by time; babeltrace2 reads the folder as it is.
///
/// The events come from rlctl's kernel recorder, not from the threads they are about: each is stamped with the
/// moment it describes (`TraceEvent.timestamp`), non-decreasing across calls to ``write(_:)``. One producer thread
/// at a time.
public final class KernelTraceWriter: @unchecked Sendable {
    private let trace: OwnTraceWriter
    private let streamTID = getpid()
    public var folder: String { trace.folder }

    /// Creates `folder` (which must not hold a trace yet) with the trace's metadata.
    public init(folder: String) throws {
        trace = try OwnTraceWriter(folder: folder, part: TraceSchema.kernelViewPart, payloads: "kernel events") { payload in
            switch payload {
            case .kernelBegin, .kernelTask, .kernelTimer, .kernelRunQueue, .kernelOffCPU, .kernelLost: return true
            default: return false
            }
        }
    }

    /// Appends kernel events (`kernelBegin` … `kernelLost`); one stamped earlier than the last one written is written
    /// at the last one's time.
    /// - Throws: ``RecorderError`` for another kind of event, and when the stream cannot be written (the kernel view
    ///   is then incomplete, and its folder says why: the write-failure marker).
    public func write(_ batch: [TraceEvent]) throws {
        try trace.write(batch, stream: streamTID)
    }

    /// Writes what is left and the end file; after it, the folder is a complete trace. The records the kernel
    /// recorder dropped are its `kernel_lost` events, which the analysis counts as lost: this trace itself loses
    /// nothing, so its own accounting says 0 and a loss is never counted twice.
    public func finish() throws {
        try trace.finish()
    }
}

/// Writes the wait calls the kernel recorder saw (`rlctl record --pid`) as the trace itself, in the shape the wait
/// interposer's embedded recording has: one stream per thread, each with the thread's `wait_thread` (again when it
/// is renamed) and its waits as `wait_batch` events, one per batch of the recorder. So the trace is summarized exactly
/// as a `--any` recording, and the kernel view beside it (`rlctl-kernel/`) is merged with it as with any trace.
public final class WaitTraceWriter: @unchecked Sendable {
    private let trace: OwnTraceWriter
    public var folder: String { trace.folder }

    /// Creates `folder` (which must not hold a trace yet) with the trace's metadata; `part`: written as a part of
    /// the trace around it (`TraceSchema.kernelWaitsPart`), not as a trace of its own.
    public init(folder: String, part: String? = nil) throws {
        trace = try OwnTraceWriter(folder: folder, part: part, payloads: "wait_thread and wait_batch events") { payload in
            switch payload {
            case .waitThread, .waitBatch: return true
            default: return false
            }
        }
    }

    /// Appends thread `tid`'s events (its `wait_thread`, then `wait_batch` events of its waits, stamped with the
    /// last wait's end), after `lostBefore` of its waits that were lost: a loss window on its stream, so the analysis
    /// breaks its chain of waits there.
    public func write(_ events: [TraceEvent], thread tid: Int32, lostBefore: UInt64 = 0) throws {
        // Each lost wait stands for its wait_begin and wait_end, as the interposer's embedded recorder counts them.
        try trace.write(events, stream: tid, lostBefore: lostBefore * 2)
    }

    /// Writes what is left and the end file; `waitsLostElsewhere`: waits the kernel recorder lost that no thread's
    /// stream could place (a thread that ended, or the recording's end, before its next wait), counted as lost.
    public func finish(waitsLostElsewhere: UInt64 = 0) throws {
        try trace.finish(alsoLost: waitsLostElsewhere * 2)
    }
}

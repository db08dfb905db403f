import Synchronization
import TraceModel

/// Receives every activity and callout of every loop in the process: the one seam tracing plugs into.
///
/// RunLoopCore knows nothing of LTTng or trace files. A tracing backend subclasses this class and installs an
/// instance with ``LoopEventSink/install(_:)``; each run picks up the installed sink when it starts, so with no
/// sink an event costs the loop one predictable branch. Methods are called on the loop's thread, except
/// ``sourceSignaled(sourceID:at:)``, which runs on the signalling thread. Timestamps are CLOCK_MONOTONIC ns.
open class LoopEventSink: @unchecked Sendable {
    public init() {}

    /// Whether this sink passes every event on to ``layeredOver`` (RunLoopMetrics' sink, installed over a tracer
    /// or over none). A run in progress with that sink (or with none, when ``layeredOver`` is nil) adopts this one
    /// at its next iteration once it is installed: the events still reach the sink the run began with, so a
    /// tracer never sees a run cut in two. Any other sink is used from the next run on. Read only when the
    /// installed sink changes.
    open var layered: Bool { false }
    /// The sink this one passes every event on to, when ``layered``; nil for none.
    open var layeredOver: LoopEventSink? { nil }

    /// The kind of a performed source, as `source_perform_begin` reports it.
    public typealias SourceKind = LoopSourceKind
    /// What an item is, for ``itemLabeled(id:kind:label:)``.
    public typealias ItemKind = LoopItemKind
    /// Which adapter traces a loop built on something else, for ``loopAdapted(loopID:adapter:groupID:)``.
    public typealias Adapter = LoopAdapter
    /// What a traced SwiftNIO channel handled, for ``nioIO(loopID:channelID:event:start:end:)``.
    public typealias NIOEvent = NIOIOEvent

    /// Where an event happened: the loop, the run's mode and nesting depth, and the iteration.
    public struct Context {
        public let loopID: UInt64
        /// The mode's name as a NUL-terminated C string that lives as long as the loop. Tracers pass it on as is:
        /// a context holds no Swift string, so making one per event costs no reference counting.
        public let modeCString: UnsafePointer<CChar>
        /// The mode (built from ``modeCString`` on each call: for sinks that need a Swift value).
        public var mode: Loop.Mode { Loop.Mode(String(cString: modeCString)) }
        public let depth: UInt32
        public let iteration: UInt64

        /// For tracers' own tests and benchmarks; loops make their contexts themselves.
        public init(loopID: UInt64, modeCString: UnsafePointer<CChar>, depth: UInt32, iteration: UInt64) {
            self.loopID = loopID
            self.modeCString = modeCString
            self.depth = depth
            self.iteration = iteration
        }
    }

    open func loopCreated(loopID: UInt64, threadID: Int32, name: String) {}
    open func itemLabeled(id: UInt64, kind: ItemKind, label: String) {}
    open func activity(_ activity: Loop.Activity, _ context: Context) {}
    open func runBegin(_ context: Context, timeoutNanoseconds: UInt64, returnAfterSourceHandled: Bool) {}
    open func runEnd(_ context: Context, result: Loop.RunResult) {}
    open func timerFireBegin(_ context: Context, timerID: UInt64, scheduled: UInt64, tolerance: UInt64, interval: UInt64, missed: UInt64) {}
    open func timerFireEnd(_ context: Context, timerID: UInt64) {}
    open func sourceSignaled(sourceID: UInt64, at time: UInt64) {}
    open func sourcePerformBegin(_ context: Context, sourceID: UInt64, kind: SourceKind, order: Int, signaled: UInt64) {}
    open func sourcePerformEnd(_ context: Context, sourceID: UInt64) {}
    open func blockBegin(_ context: Context, blockID: UInt64, enqueued: UInt64) {}
    open func blockEnd(_ context: Context, blockID: UInt64) {}
    open func observerBegin(_ context: Context, observerID: UInt64, activity: Loop.Activity) {}
    open func observerEnd(_ context: Context, observerID: UInt64) {}
    open func wakeUp(_ context: Context, reason: Loop.WakeReason, slept: UInt64) {}
    /// The main loop starts running the main dispatch queue's work (rule 38): `DispatchQueue.main` blocks and
    /// `@MainActor` jobs, as many as were queued, until ``mainQueueEnd(_:)``.
    open func mainQueueBegin(_ context: Context) {}
    open func mainQueueEnd(_ context: Context) {}
    /// An actor job the loop runs as its executor; `priority` is the job's `JobPriority` raw value.
    open func jobBegin(_ context: Context, jobID: UInt64, enqueued: UInt64, priority: UInt8) {}
    open func jobEnd(_ context: Context, jobID: UInt64) {}

    // ===== loops built on something else (the adapters) =====
    // Called on the adapted loop's thread, with the adapter's own timestamps (CLOCK_MONOTONIC ns).

    /// An adapter traces `loopID` (after announcing it with ``loopCreated(loopID:threadID:name:)``).
    open func loopAdapted(loopID: UInt64, adapter: Adapter, groupID: UInt64) {}
    /// A SwiftNIO tick's task phase, from its `NIOEventLoopTickInfo`.
    open func nioTick(loopID: UInt64, start: UInt64, end: UInt64, sleep: UInt64, tasks: UInt64) {}
    /// One I/O event a traced SwiftNIO channel's pipeline handled.
    open func nioIO(loopID: UInt64, channelID: UInt64, event: NIOEvent, start: UInt64, end: UInt64) {}
    /// One run of an adapter's lateness probe.
    open func probeFire(loopID: UInt64, scheduled: UInt64, lateness: UInt64, cost: UInt64) {}

    // ===== stalls =====

    /// What ran longest in a stalled iteration.
    public typealias CalloutKind = LoopCalloutKind

    /// The callout that ran longest in a stalled iteration: its kind, its item's id and label ("" for none), and
    /// how long it ran. Kind `LoopCalloutKind.none` when no callout ran, or the tracer of an adapted loop cannot
    /// see its callouts.
    public struct Culprit: Sendable, Equatable {
        public var kind: CalloutKind
        public var id: UInt64
        public var duration: UInt64
        public var label: String

        public init(kind: CalloutKind, id: UInt64, duration: UInt64, label: String) {
            self.kind = kind
            self.id = id
            self.duration = duration
            self.label = label
        }

        /// No callout to blame.
        public static let none = Culprit(kind: .none, id: 0, duration: 0, label: "")
    }

    /// An iteration (the context's) began at `start` and was busy for `busy` ns, past `threshold`
    /// (``Loop/stallThreshold``): called on the loop's thread when it ends. Adapters call it for their loops too.
    open func loopStall(_ context: Context, start: UInt64, busy: UInt64, threshold: UInt64, culprit: Culprit) {}

    /// The watchdog (``LoopWatchdog``) saw `loopID` busy in `iteration` for at least `busy` ns, past `threshold`,
    /// and still stuck. Called on the watchdog's thread.
    open func loopHang(loopID: UInt64, iteration: UInt64, busy: UInt64, threshold: UInt64) {}

    /// The timestamp this sink gave the last event it recorded on the calling thread (CLOCK_MONOTONIC ns), or 0
    /// when it cannot tell, as here. A loop watching for stalls times its callouts with it, so a tracer that can
    /// tell (the embedded recorder) saves the loop two clock reads per callout.
    open func lastEventTimestamp() -> UInt64 { 0 }

    /// A new id for a loop or an item an adapter traces, from the counter RunLoopCore's loops and items use:
    /// ids never collide within a process.
    public static func makeID() -> UInt64 { Sequence.next() }

    // ===== installation =====

    private static let installed = Atomic<UInt>(0)

    /// Installs `sink` for every loop (runs already in progress keep the sink they started with). The sink is
    /// retained for the life of the process; pass nil to stop sending events.
    public static func install(_ sink: LoopEventSink?) {
        let bits = sink.map { UInt(bitPattern: Unmanaged.passRetained($0).toOpaque()) } ?? 0
        // The previous sink is deliberately leaked: a run that started with it may still be calling it.
        installed.store(bits, ordering: .releasing)
    }

    /// The installed sink, if any.
    @inline(__always)
    public static var current: LoopEventSink? {
        let bits = installed.load(ordering: .acquiring)
        guard bits != 0, let pointer = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<LoopEventSink>.fromOpaque(pointer).takeUnretainedValue()
    }
}

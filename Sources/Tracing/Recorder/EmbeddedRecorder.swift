import CRecorder
import Foundation
import Glibc
import RunLoopCore
import TraceModel

/// Records every loop event in-process into a trace folder (format: `TraceSchema`), with no tracer installed.
///
/// Events go into per-thread buffers with no lock and no allocation on the hot path; a writer thread moves full
/// packets to the thread's stream file. In ``Mode-swift.enum/discard`` mode a thread whose buffers are all full
/// drops new events and counts them; in ``Mode-swift.enum/overwrite`` mode (a flight recorder) it overwrites its
/// oldest packet instead, and everything is written when the recording stops. Either way every lost event is
/// counted in the trace (each packet's `events_discarded`) and in ``Summary``.
///
/// One recording runs at a time in a process. Install the recorder as the `LoopEventSink` to feed it:
/// ```swift
/// let recorder = try EmbeddedRecorder(directory: "run.rltrace")
/// try recorder.start()
/// LoopEventSink.install(recorder)
/// // … run loops …
/// LoopEventSink.install(nil)
/// let summary = try recorder.stop()
/// ```
public final class EmbeddedRecorder: LoopEventSink, @unchecked Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        /// Drop new events when a thread's buffers are full (the default).
        case discard
        /// Keep the newest events: overwrite the oldest packet (a flight recorder).
        case overwrite
    }

    /// How events are timestamped. Either way a timestamp is CLOCK_MONOTONIC nanoseconds, the loop's clock.
    public enum TimestampClock: String, Sendable, CaseIterable {
        /// Where the CPU's TSC is invariant and is the kernel's clocksource (x86-64), the TSC, converted with a
        /// CLOCK_MONOTONIC reading each thread renews every millisecond: about half the cost of clock_gettime.
        /// Such a stamp runs ahead of clock_gettime by at most a few hundred nanoseconds by design (so an event
        /// is not stamped before a time the loop read before it), and every renewal measures the real drift
        /// (``EmbeddedRecorder/clockReport``); a drift beyond 1 µs either way makes the recording fall back to
        /// clock_gettime. Elsewhere, or with `RLCTL_RECORDER_CLOCK=clock_gettime` in the environment, it is
        /// ``clockGettime``.
        case automatic
        /// `clock_gettime(CLOCK_MONOTONIC)` for every event.
        case clockGettime
    }

    public struct Options: Sendable {
        /// Bytes per packet (sub-buffer).
        public var packetSize: Int = 256 * 1024
        /// Packets per thread buffer. A thread's buffer (packetSize × packetsPerThread) is allocated and
        /// populated on its first event, so that no later event takes a page fault.
        public var packetsPerThread: Int = 16
        public var mode: Mode = .discard
        /// How often the writer thread moves full packets to disk (discard mode).
        public var flushInterval: Duration = .milliseconds(20)
        /// How events are timestamped.
        public var clock: TimestampClock = .automatic
        /// A thread's packet is closed at its first event this long after the packet began (discard mode), so
        /// that the writer moves its events to disk even while it is far from full: a process killed without
        /// stopping the recording (SIGKILL, a crash) loses at most about this much of each thread's recent
        /// events, not a whole packet's worth. Nil: packets are written only when full.
        public var switchInterval: Duration? = .milliseconds(100)
        /// Snapshots on stalls: the recorder keeps each thread's newest packets (``Mode-swift.enum/overwrite``,
        /// whatever ``mode`` says) and writes nothing while it runs but, for each stall a loop reports that the
        /// policy accepts, a snapshot of the rings: a trace folder `DIRECTORY/snapshot-N`
        /// (``EmbeddedRecorder/snapshotRoot(_:)`` lists them). Nil: a recording of the whole run.
        public var stallSnapshots: StallSnapshotPolicy?

        public init() {}
    }

    /// How a recording stamps its events, and how closely the TSC clock followed CLOCK_MONOTONIC.
    public struct ClockReport: Sendable, Equatable {
        /// Whether events are stamped from the TSC at the end of the recording (false with clock_gettime, and
        /// after a fallback).
        public var usesTSC: Bool
        /// How often the recording gave up the TSC: a drift beyond 1 µs, or a TSC that went backwards.
        public var fallbacks: UInt64
        /// Anchor renewals that measured the drift.
        public var anchorsChecked: UInt64
        /// The most a TSC stamp ran ahead of CLOCK_MONOTONIC at a renewal (ns).
        public var maxLeadNanoseconds: Int64
        /// The most a TSC stamp fell behind CLOCK_MONOTONIC at a renewal (ns, 0 when it never did).
        public var maxLagNanoseconds: Int64
    }

    /// What a stopped recording wrote.
    public struct Summary: Sendable, Equatable {
        public var directory: String
        public var eventsRecorded: UInt64
        /// Events dropped (full buffers) or overwritten (flight recorder), plus events of threads whose buffer
        /// could not be allocated.
        public var eventsLost: UInt64
        public var threads: Int
        public var bytesWritten: UInt64
        /// With ``Options/stallSnapshots``: the snapshots written, oldest first.
        public var snapshots: [StallSnapshotFolder] = []
        /// With ``Options/stallSnapshots``: why a snapshot could not be written, if one could not.
        public var snapshotProblem: String?
    }

    public let directory: String
    public let options: Options
    private let uuid: [UInt8]
    private var writer: WriterThread?
    private var snapshots: EmbeddedStallSnapshots?
    /// This recording's entry in ``LiveRecordings`` while it records (`rlctl top` follows it).
    private var liveEntry: String?
    private let metadata: String
    private var streams: [Int32: Int32] = [:]       // tid -> fd, writer thread only (then stop)
    /// The first write that failed: what it was, and why.
    private var writeError: (what: String, failure: WriteFailure)?
    private var bytesWritten: UInt64 = 0
    /// Bytes written to each thread's stream file, for the end file's accounting.
    private var streamBytes: [Int32: UInt64] = [:]
    /// Events written into each thread's packets, taken from the C recording before its buffers are freed.
    private var streamEvents: [Int32: UInt64] = [:]
    private var state: State = .idle
    /// Serializes start and stop: a signal handler's thread may stop the recording while the main thread does.
    private let stateLock = NSLock()

    private enum State { case idle, recording, stopped }

    /// Prepares a recording into `directory` (created if needed; must not already hold a trace).
    public init(directory: String, options: Options = Options()) throws {
        guard options.packetSize >= 4096, options.packetSize <= 64 << 20 else {
            throw RecorderError("packet size must be between 4 KiB and 64 MiB (got \(options.packetSize) bytes)")
        }
        guard options.packetsPerThread >= 2, options.packetsPerThread <= 4096 else {
            throw RecorderError("packets per thread must be between 2 and 4096 (got \(options.packetsPerThread))")
        }
        self.directory = directory
        self.options = options
        let bytes = TraceSchema.newUUID()
        self.uuid = bytes
        metadata = TraceSchema.metadata(uuid: bytes, clockOffsetNanoseconds: TraceSchema.currentClockOffsetNanoseconds(),
                                        hostname: ProcessInfo.processInfo.hostName)
        super.init()
        try prepareDirectory()
    }

    private func prepareDirectory() throws {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw RecorderError("\(directory) exists and is not a folder") }
            if fm.fileExists(atPath: directory + "/metadata") {
                throw RecorderError("\(directory) already holds a trace; choose another folder or delete it")
            }
            if options.stallSnapshots != nil,
               ((try? fm.contentsOfDirectory(atPath: directory)) ?? []).contains(where: { $0.hasPrefix(EmbeddedStallSnapshots.folderPrefix) }) {
                throw RecorderError("\(directory) already holds snapshots; choose another folder or delete it")
            }
        } else {
            do { try fm.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
                throw RecorderError("cannot create \(directory): \(error.localizedDescription)")
            }
        }
        // Snapshots carry the metadata each; the folder holding them is no trace itself.
        guard options.stallSnapshots == nil else { return }
        do { try metadata.write(toFile: directory + "/metadata", atomically: true, encoding: .utf8) } catch {
            throw RecorderError("cannot write \(directory)/metadata: \(error.localizedDescription)")
        }
    }

    /// Starts recording events from every thread.
    public func start() throws {
        stateLock.lock()
        defer { stateLock.unlock() }
        guard state == .idle else { throw RecorderError("this recorder was already started") }
        var config = rlrec_config()
        config.sub_buffer_size = UInt32(options.packetSize)
        config.sub_buffer_count = UInt32(options.packetsPerThread)
        config.overwrite = options.mode == .overwrite || options.stallSnapshots != nil ? 1 : 0
        config.clock = options.clock == .automatic ? RLREC_CLOCK_AUTOMATIC : RLREC_CLOCK_GETTIME
        if let interval = options.switchInterval {
            let (seconds, attoseconds) = interval.components
            config.switch_interval_ns = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
        }
        withUnsafeMutableBytes(of: &config.uuid) { raw in
            for (index, byte) in uuid.enumerated() { raw[index] = byte }
        }
        guard rlrec_start(&config) == 0 else {
            throw RecorderError("another embedded recording is running in this process")
        }
        state = .recording
        if let policy = options.stallSnapshots {
            snapshots = EmbeddedStallSnapshots(root: directory, metadata: metadata, policy: policy)
        } else if options.mode == .discard {
            // Overwrite mode writes only at stop: the producers may take back any unwritten packet until then.
            writer = WriterThread(interval: options.flushInterval) { [unowned self] in self.drain() }
            // Only a recording that writes as it goes can be watched while it runs.
            liveEntry = LiveRecordings.register(tracePath: directory)
        }
    }

    /// Whether the recording is running.
    public var isRecording: Bool { state == .recording }

    /// Events recorded and lost so far while recording, counted as each event is recorded, whether or not its
    /// packet has been written yet. The exact figures of a finished recording are in ``stop()``'s ``Summary``.
    public var progress: (recorded: UInt64, lost: UInt64) {
        let stats = rlrec_statistics()
        return (stats.events_recorded, stats.events_discarded + stats.threads_without_buffer)
    }

    /// With ``Options/stallSnapshots``: takes a snapshot now, as a stall would (the calling thread's events so
    /// far are in it), unless the policy's maximum or gap forbids it. Returns whether one was asked for; it is
    /// written by the recorder's snapshot thread (``snapshotsWritten`` counts it once it is on disk).
    @discardableResult
    public func requestSnapshot() -> Bool {
        snapshots?.request(at: Loop.Instant.now.nanoseconds) ?? false
    }

    /// With ``Options/stallSnapshots``: how many snapshots are written so far.
    public var snapshotsWritten: Int { snapshots?.written.count ?? 0 }

    /// The clock of the running recording, or of the last one stopped.
    public var clockReport: ClockReport {
        let stats = rlrec_clock_statistics()
        return ClockReport(usesTSC: stats.tsc != 0, fallbacks: stats.fallbacks, anchorsChecked: stats.anchors_checked,
                           maxLeadNanoseconds: stats.max_lead_ns, maxLagNanoseconds: stats.max_lag_ns)
    }

    /// Stops recording, writes every remaining packet and closes the stream files. Safe to call from a thread
    /// that handles SIGINT/SIGTERM, even while another thread stops it too: the later call waits for the
    /// earlier one and throws "not recording"; the trace is complete and readable when either returns.
    @discardableResult
    public func stop() throws -> Summary {
        stateLock.lock()
        defer { stateLock.unlock() }
        guard state == .recording else { throw RecorderError("this recorder is not recording") }
        state = .stopped
        if let liveEntry { LiveRecordings.unregister(liveEntry) }
        if let snapshots { return try stopSnapshots(snapshots) }
        let stats = stopAndEmpty(writing: true)
        for fd in streams.values {
            if fsync(fd) != 0 && writeError == nil { writeError = ("fsync", WriteFailure(code: errno)) }
            close(fd)
        }
        streams.removeAll()
        if let writeError {
            // An empty file needs no data block, so it can still be made on a full disk: readers then say why the
            // trace ends early instead of taking the recording for killed.
            let marker = directory + "/" + TraceSchema.writeFailureMarker(errno: writeError.failure.code)
            close(Glibc.open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644))
            throw RecorderError("the trace in \(directory) is incomplete: \(writeError.what): \(writeError.failure)")
        }
        // Last: its presence says every packet is in place (readers take a trace without it as cut off), and what
        // it lists is what readers must find in the stream files.
        var accounting = TraceAccounting(eventsRecorded: stats.events_recorded,
                                         eventsLost: stats.events_discarded + stats.threads_without_buffer)
        for (tid, bytes) in streamBytes {
            accounting.streams["stream-\(tid)"] = .init(events: streamEvents[tid], bytes: bytes)
        }
        do { try accounting.text.write(toFile: directory + "/" + TraceSchema.endFileName, atomically: true, encoding: .utf8) } catch {
            throw RecorderError("the trace in \(directory) is incomplete: cannot write its end file: \(error.localizedDescription)")
        }
        return Summary(directory: directory, eventsRecorded: stats.events_recorded,
                       eventsLost: stats.events_discarded + stats.threads_without_buffer,
                       threads: Int(stats.threads), bytesWritten: bytesWritten)
    }

    /// Stops a recording of snapshots on stalls: the snapshot under way completes, the rings are let go unwritten,
    /// and the root's `.snapshots` file counts the run's events.
    private func stopSnapshots(_ snapshots: EmbeddedStallSnapshots) throws -> Summary {
        let taken = snapshots.finish()
        let stats = stopAndEmpty(writing: false)
        let lost = stats.events_discarded + stats.threads_without_buffer
        try EmbeddedStallSnapshots.writeRootFile(directory, recorded: stats.events_recorded, lost: lost, snapshots: taken.count)
        var summary = Summary(directory: directory, eventsRecorded: stats.events_recorded, eventsLost: lost,
                              threads: Int(stats.threads), bytesWritten: 0)
        summary.snapshots = taken
        summary.snapshotProblem = snapshots.problem
        return summary
    }

    /// Stops the C recording, takes every packet left (the final header-only ones too), writing them to the
    /// streams or letting them go, and frees the buffers; returns the recording's exact counts.
    private func stopAndEmpty(writing: Bool) -> rlrec_stats {
        rlrec_stop()
        writer?.finish()
        writer = nil
        drain(writing: writing)
        var packet = rlrec_packet()
        while rlrec_take_final(&packet) == 1 {
            if writing { write(packet) }
            rlrec_release(&packet)
        }
        let stats = rlrec_statistics()
        var index: UInt32 = 0, tid: Int32 = 0, recorded: UInt64 = 0
        while rlrec_thread_statistics(index, &tid, &recorded) == 1 {
            streamEvents[tid, default: 0] += recorded   // a thread id the kernel reused writes to the same stream
            index += 1
        }
        rlrec_reset()
        return stats
    }

    /// Moves every ready packet to its stream file (writer thread, or the stopping thread after it joined), or,
    /// not `writing`, lets it go.
    private func drain(writing: Bool = true) {
        var packet = rlrec_packet()
        while rlrec_take(&packet) == 1 {
            if writing { write(packet) }
            rlrec_release(&packet)
        }
    }

    private func write(_ packet: rlrec_packet) {
        guard writeError == nil else { return }
        let fd: Int32
        if let open = streams[packet.tid] {
            fd = open
        } else {
            fd = Glibc.open(directory + "/stream-\(packet.tid)", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                writeError = ("cannot create stream-\(packet.tid)", WriteFailure(code: errno))
                return
            }
            streams[packet.tid] = fd
        }
        if let problem = writeWhole(fd, packet.data, Int(packet.size)) {
            writeError = ("writing stream-\(packet.tid)", problem)
            return
        }
        bytesWritten += UInt64(packet.size)
        streamBytes[packet.tid, default: 0] += UInt64(packet.size)
    }

    // ===== the events =====

    public override func loopCreated(loopID: UInt64, threadID: Int32, name: String) {
        rlrec_loop_create(loopID, threadID, name)
        snapshots?.loopCreated(loopID, threadID: threadID, name: name)
    }

    public override func itemLabeled(id: UInt64, kind: ItemKind, label: String) {
        rlrec_item_label(id, kind.rawValue, label)
        snapshots?.itemLabeled(id, kind: kind.rawValue, label: label)
    }

    public override func activity(_ activity: Loop.Activity, _ context: Context) {
        rlrec_activity(TraceSchema.EventID.activity(activity).rawValue, context.loopID, context.modeCString,
                       context.iteration, context.depth)
    }

    public override func runBegin(_ context: Context, timeoutNanoseconds: UInt64, returnAfterSourceHandled: Bool) {
        rlrec_run_begin(context.loopID, context.modeCString, timeoutNanoseconds, returnAfterSourceHandled ? 1 : 0)
    }

    public override func runEnd(_ context: Context, result: Loop.RunResult) {
        rlrec_run_end(context.loopID, context.modeCString, UInt8(result.traceValue))
    }

    public override func timerFireBegin(_ context: Context, timerID: UInt64, scheduled: UInt64, tolerance: UInt64,
                                        interval: UInt64, missed: UInt64) {
        rlrec_timer_fire_begin(context.loopID, timerID, scheduled, tolerance, interval, missed)
    }

    public override func timerFireEnd(_ context: Context, timerID: UInt64) {
        rlrec_timer_fire_end(context.loopID, timerID)
    }

    public override func sourceSignaled(sourceID: UInt64, at time: UInt64) {
        rlrec_source_signal(sourceID)
    }

    public override func sourcePerformBegin(_ context: Context, sourceID: UInt64, kind: SourceKind, order: Int, signaled: UInt64) {
        rlrec_source_perform_begin(context.loopID, sourceID, kind.rawValue, Int64(order), signaled)
    }

    public override func sourcePerformEnd(_ context: Context, sourceID: UInt64) {
        rlrec_source_perform_end(context.loopID, sourceID)
    }

    public override func blockBegin(_ context: Context, blockID: UInt64, enqueued: UInt64) {
        rlrec_block_begin(context.loopID, blockID, enqueued)
    }

    public override func blockEnd(_ context: Context, blockID: UInt64) {
        rlrec_block_end(context.loopID, blockID)
    }

    public override func observerBegin(_ context: Context, observerID: UInt64, activity: Loop.Activity) {
        rlrec_observer_begin(context.loopID, observerID, UInt8(truncatingIfNeeded: activity.rawValue))
    }

    public override func observerEnd(_ context: Context, observerID: UInt64) {
        rlrec_observer_end(context.loopID, observerID)
    }

    public override func wakeUp(_ context: Context, reason: Loop.WakeReason, slept: UInt64) {
        rlrec_wakeup(context.loopID, reason.rawValue, slept)
    }

    public override func mainQueueBegin(_ context: Context) {
        rlrec_main_queue_begin(context.loopID)
    }

    public override func mainQueueEnd(_ context: Context) {
        rlrec_main_queue_end(context.loopID)
    }

    public override func jobBegin(_ context: Context, jobID: UInt64, enqueued: UInt64, priority: UInt8) {
        rlrec_job_begin(context.loopID, jobID, enqueued, priority)
    }

    public override func jobEnd(_ context: Context, jobID: UInt64) {
        rlrec_job_end(context.loopID, jobID)
    }

    public override func loopAdapted(loopID: UInt64, adapter: Adapter, groupID: UInt64) {
        rlrec_loop_adapted(loopID, adapter.rawValue, groupID)
    }

    public override func nioTick(loopID: UInt64, start: UInt64, end: UInt64, sleep: UInt64, tasks: UInt64) {
        rlrec_nio_tick(loopID, start, end, sleep, tasks)
    }

    public override func nioIO(loopID: UInt64, channelID: UInt64, event: NIOEvent, start: UInt64, end: UInt64) {
        rlrec_nio_io(loopID, channelID, event.rawValue, start, end)
    }

    public override func probeFire(loopID: UInt64, scheduled: UInt64, lateness: UInt64, cost: UInt64) {
        rlrec_probe_fire(loopID, scheduled, lateness, cost)
    }

    public override func loopStall(_ context: Context, start: UInt64, busy: UInt64, threshold: UInt64, culprit: Culprit) {
        rlrec_loop_stall(context.loopID, context.modeCString, context.iteration, start, busy, threshold,
                         culprit.kind.rawValue, culprit.id, culprit.duration, culprit.label)
        // The stall event's own stamp: the snapshot's cut, and how its listing finds the stall that took it.
        snapshots?.stallReported(busy: busy, at: rlrec_last_timestamp())
    }

    public override func loopHang(loopID: UInt64, iteration: UInt64, busy: UInt64, threshold: UInt64) {
        rlrec_loop_hang(loopID, iteration, busy, threshold)
    }

    public override func lastEventTimestamp() -> UInt64 {
        rlrec_last_timestamp()
    }
}

/// Writes all `size` bytes to `fd`, again after a short write or EINTR; nil, or why it failed (strerror).
func writeWhole(_ fd: Int32, _ data: UnsafePointer<UInt8>, _ size: Int) -> WriteFailure? {
    var offset = 0
    while offset < size {
        let n = Glibc.write(fd, data + offset, size - offset)
        if n < 0 {
            if errno == EINTR { continue }
            return WriteFailure(code: errno)
        }
        offset += n
    }
    return nil
}

/// Why a write failed: the errno, kept to tell readers (a full disk is not a crash), and its text.
struct WriteFailure: CustomStringConvertible {
    let code: Int32
    var description: String { String(cString: strerror(code)) }
}

/// A recorder set-up or I/O problem, in one line.
public struct RecorderError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The thread that periodically moves full packets to disk.
private final class WriterThread: @unchecked Sendable {
    private var thread = pthread_t()
    private let lock = NSCondition()
    private var finishing = false
    private let interval: Duration
    private let body: () -> Void

    init(interval: Duration, body: @escaping () -> Void) {
        self.interval = interval
        self.body = body
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            let me = Unmanaged<WriterThread>.fromOpaque(raw!).takeRetainedValue()
            me.loop()
            return nil
        }, context)
        precondition(rc == 0, "EmbeddedRecorder: cannot start its writer thread (pthread_create: \(rc))")
    }

    private func loop() {
        // The program's threads are its own: this one says whose it is (top -H, a debugger, `--any`'s summary).
        Thread.current.name = "rlctl-writer"
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        while true {
            body()
            lock.lock()
            if !finishing { _ = lock.wait(until: Date(timeIntervalSinceNow: seconds)) }
            let done = finishing
            lock.unlock()
            if done { return }
        }
    }

    func finish() {
        lock.lock()
        finishing = true
        lock.signal()
        lock.unlock()
        pthread_join(thread, nil)
    }
}

import CRecorder
import Foundation
import Glibc
import RunLoopCore
import TraceModel

/// A snapshot written on a stall, and when it was complete on disk (CLOCK_MONOTONIC ns, the trace's clock).
public struct StallSnapshotFolder: Sendable, Equatable {
    public var path: String
    public var seenAtNanoseconds: UInt64
    /// The moment the snapshot shows, when its recorder knows it: the embedded recorder's is the timestamp of
    /// the `loop_stall` event that asked for it (it is copied later, but cut there). Nil for LTTng's.
    public var takenAtNanoseconds: UInt64?
    /// LTTng's: when the trigger that took it was being armed (it fires once, on the first stall it sees). Nil for
    /// the embedded recorder's.
    public var armedAtNanoseconds: UInt64?

    public init(path: String, seenAtNanoseconds: UInt64, takenAtNanoseconds: UInt64? = nil, armedAtNanoseconds: UInt64? = nil) {
        self.path = path
        self.seenAtNanoseconds = seenAtNanoseconds
        self.takenAtNanoseconds = takenAtNanoseconds
        self.armedAtNanoseconds = armedAtNanoseconds
    }
}

/// Which stalls take a snapshot: those at least `thresholdNanoseconds` busy, at most `maxSnapshots` of them, at
/// least `minimumGap` apart.
public struct StallSnapshotPolicy: Sendable, Equatable {
    public var thresholdNanoseconds: UInt64
    public var maxSnapshots: Int
    public var minimumGap: Duration

    public init(thresholdNanoseconds: UInt64, maxSnapshots: Int, minimumGap: Duration) {
        self.thresholdNanoseconds = thresholdNanoseconds
        self.maxSnapshots = maxSnapshots
        self.minimumGap = minimumGap
    }
}

/// The embedded recorder's snapshots on stalls (``EmbeddedRecorder/Options/stallSnapshots``): the recorder is a
/// flight recorder (each thread's ring keeps its newest packets, nothing is written while it runs), and a stall
/// a loop reports at the threshold makes it copy the rings into a new trace folder, `ROOT/snapshot-N`.
///
/// The loop thread that reported the stall only closes its own packet (so that the stall and the iterations
/// before it are in the copy) and wakes the snapshot thread; the copy and the writing happen there, while the
/// loops go on. Other threads contribute the packets they had closed. The copy is cut at the stall: packets
/// closed after it (the same loop's next stall, under load before the copy is made) stay out, so that each
/// snapshot shows the rings as they were when its stall asked for it. Names are in every snapshot: a loop's
/// `loop_create` and an item's `item_label` are emitted once, when the loop or item is made, and a ring that came
/// round has long overwritten them, so the snapshot thread emits the names it remembers (the newest
/// ``namesKept`` of each) into its own packet before each copy, as LTTng's state dump does for its sessions.
/// A snapshot's `.end` file says when it
/// was complete (`snapshot_written_at`, CLOCK_MONOTONIC ns) and the moment it shows (`snapshot_taken_at`); the root's `.snapshots` file, written when the
/// recording stops, counts the events of the whole run.
final class EmbeddedStallSnapshots: @unchecked Sendable {
    static let rootFileName = ".snapshots"
    static let folderPrefix = "snapshot-"

    let root: String
    let policy: StallSnapshotPolicy
    private let gapNanoseconds: UInt64
    private let metadata: String
    private let lock = NSCondition()
    // Guarded by lock.
    private var taken: [StallSnapshotFolder] = []
    private var accepted = 0
    private var lastAcceptedAt: UInt64?
    /// Snapshots accepted whose thread is closing its packet, then those waiting for the snapshot thread (where
    /// each is cut: its `at_ns` is the moment it shows), oldest first.
    private var preparing = 0
    private var pending: [rlrec_snapshot_cut] = []
    /// Snapshot folders made so far, complete or not: a failed one's number is not used again.
    private var attempts = 0
    private var finishing = false
    private var threadDone = false
    private var failure: String?
    private var loopNames = RecentNames<(tid: Int32, name: String)>()
    private var itemLabels = RecentNames<(kind: UInt8, label: String)>()

    /// How many loop names and item labels are remembered for the snapshots (the newest).
    static let namesKept = 4096

    init(root: String, metadata: String, policy: StallSnapshotPolicy) {
        self.root = root
        self.metadata = metadata
        self.policy = policy
        gapNanoseconds = policy.minimumGap.nonNegativeNanoseconds
        let thread = Thread { [self] in work() }
        thread.name = "rlctl-snapshots"
        thread.start()
    }

    /// A loop's stall report, on the loop's thread, right after its `loop_stall` event (stamped `time`): takes a
    /// snapshot when the policy allows one.
    func stallReported(busy: UInt64, at time: UInt64) {
        guard busy >= policy.thresholdNanoseconds else { return }
        _ = request(at: time)
    }

    /// Takes a snapshot unless the policy's count or gap forbids it; the calling thread's packet goes in whole.
    func request(at time: UInt64) -> Bool {
        let take = lock.withLock { () -> Bool in
            guard !finishing, accepted < policy.maxSnapshots else { return false }
            if let last = lastAcceptedAt, time < last + gapNanoseconds { return false }
            accepted += 1
            lastAcceptedAt = time
            // Counted from here, so that a finish() meanwhile waits for it.
            preparing += 1
            return true
        }
        guard take else { return false }
        // Before the snapshot thread may copy: the stall event is in this thread's open packet.
        let cut = rlrec_close_thread_packet(time)
        lock.withLock {
            preparing -= 1
            pending.append(cut)
            lock.broadcast()
        }
        return true
    }

    /// A loop was made (any thread): its name goes into every later snapshot.
    func loopCreated(_ loopID: UInt64, threadID: Int32, name: String) {
        lock.withLock { loopNames.set((threadID, name), for: loopID) }
    }

    /// An item was labeled (any thread): its label goes into every later snapshot.
    func itemLabeled(_ id: UInt64, kind: UInt8, label: String) {
        lock.withLock { itemLabels.set((kind, label), for: id) }
    }

    /// The snapshots written so far.
    var written: [StallSnapshotFolder] { lock.withLock { taken } }

    /// Why a snapshot could not be written, if one could not.
    var problem: String? { lock.withLock { failure } }

    /// Lets a snapshot under way complete, then ends the snapshot thread; before the recording stops.
    func finish() -> [StallSnapshotFolder] {
        lock.lock()
        finishing = true
        lock.broadcast()
        while !threadDone { lock.wait() }
        let result = taken
        lock.unlock()
        return result
    }

    private func work() {
        lock.lock()
        while true {
            while pending.isEmpty && (!finishing || preparing > 0) { lock.wait() }
            if let cut = pending.first {
                attempts += 1
                let number = attempts
                let names = loopNames.all, labels = itemLabels.all
                lock.unlock()
                // Into this thread's own packet, which every copy takes whole, whatever its cut.
                for (loopID, loop) in names { rlrec_loop_create(loopID, loop.tid, loop.name) }
                for (id, item) in labels { rlrec_item_label(id, item.kind, item.label) }
                _ = rlrec_close_thread_packet(cut.at_ns)
                let outcome = write(number: number, cut: cut)
                lock.lock()
                pending.removeFirst()
                switch outcome {
                case .success(let folder): taken.append(folder)
                case .failure(let error): if failure == nil { failure = error.description }
                }
                continue
            }
            break
        }
        threadDone = true
        lock.broadcast()
        lock.unlock()
    }

    /// Copies the rings as they were at `cut` into ROOT/snapshot-NUMBER: metadata, a stream file per thread,
    /// then `.end`.
    private func write(number: Int, cut: rlrec_snapshot_cut) -> Result<StallSnapshotFolder, RecorderError> {
        let takenAt = cut.at_ns
        let folder = root + "/" + Self.folderPrefix + "\(number)"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try metadata.write(toFile: folder + "/metadata", atomically: true, encoding: .utf8)
        } catch {
            return .failure(RecorderError("cannot write the snapshot \(folder): \(error.localizedDescription)"))
        }
        let streams = SnapshotStreams(folder: folder)
        var cut = cut
        let copied = withExtendedLifetime(streams) {
            rlrec_copy_ring({ context, tid, data, size in
                Unmanaged<SnapshotStreams>.fromOpaque(context!).takeUnretainedValue().write(tid: tid, data: data!, size: size)
            }, Unmanaged.passUnretained(streams).toOpaque(), &cut)
        }
        if copied < 0 { return .failure(RecorderError("the snapshot \(folder) is incomplete: out of memory while copying the rings")) }
        if let error = streams.error { return .failure(RecorderError("the snapshot \(folder) is incomplete: \(error)")) }
        let written = Loop.Instant.now.nanoseconds
        do {
            // The streams' sizes too: a reader then finds a stream file deleted or cut short afterwards.
            let accounting = TraceAccounting(streams: streams.bytes.mapValues { .init(events: nil, bytes: $0) })
            try ("snapshot_written_at = \(written);\nsnapshot_taken_at = \(takenAt);\n" + accounting.text).write(toFile: folder + "/" + TraceSchema.endFileName, atomically: true, encoding: .utf8)
        } catch {
            return .failure(RecorderError("the snapshot \(folder) is incomplete: cannot write its end file: \(error.localizedDescription)"))
        }
        return .success(StallSnapshotFolder(path: folder, seenAtNanoseconds: written, takenAtNanoseconds: takenAt))
    }

    /// The root's `.snapshots` file, once the recording stopped.
    static func writeRootFile(_ root: String, recorded: UInt64, lost: UInt64, snapshots: Int) throws {
        let text = "events_recorded = \(recorded);\nevents_lost = \(lost);\nsnapshots = \(snapshots);\n"
        do { try text.write(toFile: root + "/" + rootFileName, atomically: true, encoding: .utf8) } catch {
            throw RecorderError("cannot write \(root)/\(rootFileName): \(error.localizedDescription)")
        }
    }
}

/// The newest names by id, at most ``EmbeddedStallSnapshots/namesKept``: a program that makes labeled items all
/// the time does not grow it without end.
private struct RecentNames<Value> {
    private var values: [UInt64: Value] = [:]
    private var order: [UInt64] = []
    private var next = 0

    mutating func set(_ value: Value, for id: UInt64) {
        if values.updateValue(value, forKey: id) != nil { return }
        if order.count < EmbeddedStallSnapshots.namesKept {
            order.append(id)
        } else {
            values.removeValue(forKey: order[next])
            order[next] = id
            next = (next + 1) % order.count
        }
    }

    var all: [(UInt64, Value)] { values.map { ($0.key, $0.value) } }
}

/// The stream files of one snapshot, written from rlrec_copy_ring's sink.
private final class SnapshotStreams {
    let folder: String
    var error: String?
    /// Bytes written, by stream file name.
    private(set) var bytes: [String: UInt64] = [:]

    init(folder: String) { self.folder = folder }

    func write(tid: Int32, data: UnsafePointer<UInt8>, size: Int) {
        guard error == nil else { return }
        // A thread id the kernel gave again, to a thread started after an earlier one ended: a stream of its own.
        var path = folder + "/stream-\(tid)"
        var again = 1
        while access(path, F_OK) == 0 {
            again += 1
            path = folder + "/stream-\(tid)-\(again)"
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            error = "cannot create stream-\(tid): \(String(cString: strerror(errno)))"
            return
        }
        defer { close(fd) }
        if let problem = writeWhole(fd, data, size) {
            error = "writing stream-\(tid): \(problem)"
            return
        }
        bytes[String(path.dropFirst(folder.count + 1)), default: 0] += UInt64(size)
    }
}

extension EmbeddedRecorder {
    /// What a program recording with ``Options/stallSnapshots`` left in its root folder (another process may
    /// read it, once the program ended): the complete snapshots in order, the folders of snapshots cut off while
    /// being written, and the events the whole run recorded (nil when the recording did not stop: the program
    /// was killed, or never recorded).
    public struct SnapshotRoot: Sendable, Equatable {
        public var snapshots: [StallSnapshotFolder]
        public var cutOff: [String]
        public var eventsRecorded: UInt64?
    }

    public static func snapshotRoot(_ root: String) -> SnapshotRoot {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let numbered = names.compactMap { name -> (Int, String)? in
            guard name.hasPrefix(EmbeddedStallSnapshots.folderPrefix),
                  let number = Int(name.dropFirst(EmbeddedStallSnapshots.folderPrefix.count)) else { return nil }
            return (number, root + "/" + name)
        }.sorted { $0.0 < $1.0 }
        var result = SnapshotRoot(snapshots: [], cutOff: [], eventsRecorded: nil)
        for (_, path) in numbered {
            if let written = field("snapshot_written_at", inFile: path + "/" + TraceSchema.endFileName) {
                let takenAt = field("snapshot_taken_at", inFile: path + "/" + TraceSchema.endFileName)
                result.snapshots.append(StallSnapshotFolder(path: path, seenAtNanoseconds: written, takenAtNanoseconds: takenAt))
            } else {
                result.cutOff.append(path)
            }
        }
        result.eventsRecorded = field("events_recorded", inFile: root + "/" + EmbeddedStallSnapshots.rootFileName)
        return result
    }

    private static func field(_ name: String, inFile path: String) -> UInt64? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0] == name { return UInt64(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: ";"))) }
        }
        return nil
    }
}

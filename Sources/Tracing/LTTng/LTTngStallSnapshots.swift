import Foundation
import Glibc
import RunLoopCore

/// Snapshots on stalls: a snapshot-mode LTTng session keeps the newest events of one process in memory (LTTng's
/// flight recorder: nothing is written until a snapshot), and a trigger on `runloop:loop_stall`, filtered by the
/// stall's busy time and the process, makes the session daemon write a snapshot when that process's loop reports
/// a stall. No rlctl code runs between the stall and the snapshot: the session daemon acts on the event itself.
///
/// The trigger fires once (`--rate-policy=once-after:1`); a thread of this object watches the output folder and,
/// after each snapshot, re-arms it once the minimum gap has passed, until the most snapshots allowed were taken.
/// Each snapshot is a trace folder (`OUTPUT/snapshot-1-DATE-TIME-N`) that every rlctl command reads.
public final class LTTngStallSnapshots: @unchecked Sendable {
    public struct Options: Sendable {
        /// Stalls at least this busy (ns) take a snapshot.
        public var thresholdNanoseconds: UInt64
        public var maxSnapshots: Int
        public var minimumGap: Duration
        /// The traced process (the trigger and the session see only it).
        public var processID: pid_t
        /// `lttng enable-channel` options (sub-buffer size and count: how far back a snapshot reaches).
        public var channelOptions: [String]

        public init(thresholdNanoseconds: UInt64, maxSnapshots: Int, minimumGap: Duration, processID: pid_t, channelOptions: [String] = []) {
            self.thresholdNanoseconds = thresholdNanoseconds
            self.maxSnapshots = maxSnapshots
            self.minimumGap = minimumGap
            self.processID = processID
            self.channelOptions = channelOptions
        }
    }

    /// A snapshot written, and when rlctl first saw its folder (CLOCK_MONOTONIC ns, the trace's clock).
    public typealias Snapshot = StallSnapshotFolder

    public let session: LTTngSession
    public var output: String { session.output }
    public let options: Options
    private let lock = NSCondition()
    // Guarded by lock.
    private var snapshots: [Snapshot] = []
    private var armedTrigger: String?
    /// When the armed trigger's arming began: the snapshot it takes is of the first stall from then on.
    private var armedAt: UInt64?
    private var triggersMade = 0
    private var finished = false
    private var watcher: Thread?
    private var watcherDone = false
    private var rearmFailure: String?

    /// Why the trigger could not be armed again after a snapshot (no more snapshots were taken then), if it failed.
    public var rearmProblem: String? { lock.withLock { rearmFailure } }

    /// Creates and starts the session, arms the trigger and starts watching; a session daemon must answer.
    /// - Parameters:
    ///   - name: the session's name.
    ///   - output: the folder the snapshots are written in, one folder each.
    ///   - options: the stall threshold, the process traced and the limits on snapshots.
    ///   - startTimeout: when the traced process is this one, how long LTTng may take to enable the
    ///     tracepoints in it (waited for, see ``LTTngSession/startForThisProcess(timeout:)``); nil for another process.
    public init(session name: String, output: String, options: Options, startTimeout: Duration? = nil) throws(LTTngError) {
        self.options = options
        session = try LTTngSession.create(name: name, output: output, trackedProcess: options.processID,
                                          channelOptions: options.channelOptions, snapshotMode: true)
        do {
            if let startTimeout { try session.startForThisProcess(timeout: startTimeout) } else { try session.start() }
            try arm()
        } catch {
            session.destroy()
            throw error
        }
        let thread = Thread { [self] in watch() }
        thread.name = "rlctl-snapshots"
        lock.withLock { watcher = thread }
        thread.start()
    }

    /// The trigger's filter: the process's stalls at least as busy as the threshold.
    var filter: String { "busy_ns >= \(options.thresholdNanoseconds) && $ctx.vpid == \(options.processID)" }

    private func arm() throws(LTTngError) {
        let name = lock.withLock { () -> String in
            triggersMade += 1
            // Before the command: a stall while it registers the trigger may already fire it.
            armedAt = Loop.Instant.now.nanoseconds
            return "\(session.name)-stall-\(triggersMade)"
        }
        try LTTngTools.lttng(["add-trigger", "--name=\(name)", "--condition=event-rule-matches", "--type=user",
                              "--name=runloop:loop_stall", "--filter=\(filter)",
                              "--action=snapshot-session", session.name, "--rate-policy=once-after:1"])
        lock.withLock { armedTrigger = name }
    }

    private func disarm() {
        guard let name = lock.withLock({ () -> String? in
            defer { armedTrigger = nil }
            return armedTrigger
        }) else { return }
        _ = try? LTTngTools.lttng(["remove-trigger", name])
    }

    /// The snapshot folders in `output`, oldest first (LTTng numbers them at the end of their names).
    private func folders() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []
        return names.filter { $0.hasPrefix("snapshot-") }
            .sorted { (Int($0.split(separator: "-").last ?? "") ?? 0) < (Int($1.split(separator: "-").last ?? "") ?? 0) }
    }

    /// A new snapshot folder counts; the trigger that fired is removed and, after the gap, re-armed while more
    /// snapshots are allowed. The thread sleeps until the output folder gets an entry (inotify), the gap ends, or
    /// 50 ms pass (to see `finish()`); without inotify it looks every 10 ms.
    private func watch() {
        defer { lock.withLock { watcherDone = true; lock.broadcast() } }
        let changes = FolderChanges(output)
        var rearmAt: UInt64?
        while !lock.withLock({ finished }) {
            let now = Loop.Instant.now.nanoseconds
            let known = lock.withLock { Set(snapshots.map(\.path)) }
            let new = folders().map { output + "/" + $0 }.filter { !known.contains($0) }
            if !new.isEmpty {
                lock.withLock { snapshots += new.map { Snapshot(path: $0, seenAtNanoseconds: now, armedAtNanoseconds: armedAt) } }
                disarm()
                let taken = lock.withLock { snapshots.count }
                rearmAt = taken < options.maxSnapshots ? now &+ Self.nanoseconds(options.minimumGap) : nil
            }
            if let at = rearmAt, now >= at {
                rearmAt = nil
                do { try arm() } catch { lock.withLock { rearmFailure = error.description } }
            }
            let untilRearm = rearmAt.map { Int(($0 &- min($0, Loop.Instant.now.nanoseconds)) / 1_000_000) + 1 } ?? 50
            changes.wait(milliseconds: min(untilRearm, 50))
        }
    }

    /// The snapshots taken so far, oldest first.
    public var taken: [Snapshot] { lock.withLock { snapshots } }

    /// Writes a snapshot of the ring now, into `folder` (not the output folder, so it is not taken for a stall's):
    /// after a program that took none, it tells whether any event reached the session at all.
    public func snapshotNow(into folder: String) throws(LTTngError) {
        try LTTngTools.lttng(["snapshot", "record", "--session=\(session.name)", "file://" + folder])
    }

    /// Stops watching, removes the trigger, lets a snapshot in progress finish, and destroys the session.
    /// Returns the snapshots taken, oldest first.
    public func finish() -> [Snapshot] {
        lock.withLock {
            finished = true
            lock.broadcast()
            while !watcherDone && watcher != nil { lock.wait() }
        }
        disarm()
        // A snapshot the trigger started just before it was removed: its folder appears once the daemon writes it.
        waitForQuietFolders()
        let now = Loop.Instant.now.nanoseconds
        let known = Set(lock.withLock { snapshots.map(\.path) })
        let late = folders().map { output + "/" + $0 }.filter { !known.contains($0) }
        lock.withLock { snapshots += late.map { Snapshot(path: $0, seenAtNanoseconds: now, armedAtNanoseconds: armedAt) } }
        session.destroy()
        return lock.withLock {
            snapshots = Self.numberedInOrder(snapshots)
            return snapshots
        }
    }

    /// The snapshots renamed `snapshot-1`, `snapshot-2`, … in the order they were taken, as the embedded
    /// recorder names its own: LTTng's names (`snapshot-1-20261125-171940-0`, where the first number is the
    /// snapshot output's and the last the snapshot's) do not read as an order. Called once the session is
    /// destroyed, so no snapshot is being written; a folder that cannot be renamed (the name is taken) keeps
    /// LTTng's name.
    static func numberedInOrder(_ snapshots: [Snapshot]) -> [Snapshot] {
        snapshots.enumerated().map { index, snapshot in
            let folder = URL(fileURLWithPath: snapshot.path).deletingLastPathComponent().path
            let numbered = folder + "/snapshot-\(index + 1)"
            guard numbered != snapshot.path, !FileManager.default.fileExists(atPath: numbered),
                  rename(snapshot.path, numbered) == 0 else { return snapshot }
            var renamed = snapshot
            renamed.path = numbered
            return renamed
        }
    }

    /// Waits (at most 2 s) until the output folder's size has not changed for 200 ms.
    private func waitForQuietFolders() {
        var last = -1
        var quietSince = Loop.Instant.now.nanoseconds
        let deadline = quietSince + 2_000_000_000
        while Loop.Instant.now.nanoseconds < deadline {
            let size = Self.bytes(under: output)
            let now = Loop.Instant.now.nanoseconds
            if size != last {
                last = size
                quietSince = now
            } else if now - quietSince >= 200_000_000 {
                return
            }
            usleep(20_000)
        }
    }

    /// A duration in ns (0 for a negative one), for LTTng's filters and the watcher's clock.
    public static func nanoseconds(_ duration: Duration) -> UInt64 {
        duration.nonNegativeNanoseconds
    }

    static func bytes(under path: String) -> Int {
        guard let enumerator = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total = 0
        while let name = enumerator.nextObject() as? String {
            total += ((try? FileManager.default.attributesOfItem(atPath: path + "/" + name))?[.size] as? Int) ?? 0
        }
        return total
    }
}

/// New entries of one folder, through inotify (IN_CREATE, IN_MOVED_TO); a folder inotify cannot watch is polled
/// every 10 ms instead. The folder is created if it does not exist yet (LTTng writes its snapshots into it).
private final class FolderChanges {
    private let descriptor: Int32

    init(_ path: String) {
        _ = mkdir(path, 0o770)
        let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        if fd >= 0, inotify_add_watch(fd, path, UInt32(IN_CREATE | IN_MOVED_TO)) >= 0 {
            descriptor = fd
        } else {
            if fd >= 0 { close(fd) }
            descriptor = -1
        }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Returns when the folder got an entry or after `milliseconds` (10 at most without inotify).
    func wait(milliseconds: Int) {
        guard descriptor >= 0 else {
            usleep(UInt32(min(max(milliseconds, 1), 10)) * 1_000)
            return
        }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, Int32(max(milliseconds, 1))) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while read(descriptor, &buffer, buffer.count) > 0 {}
    }
}

import Foundation
import Glibc

/// Whether LTTng's consumer daemon can get a CPU while a traced program keeps every CPU busy.
///
/// The consumer daemon empties the tracer's buffers; when it does not run, LTTng discards events. With the
/// kernel's autogroup scheduling on (`kernel.sched_autogroup_enabled=1`, the default of many distributions), a
/// daemon started by `lttng-sessiond --daemonize` runs in a scheduler group of its own, and a program that keeps
/// every CPU busy in the user's group can keep it off the CPUs for seconds: on Linux 6.18 a SwiftNIO server and wrk
/// ping-ponging on both of 2 cores kept lttng-consumerd runnable but not running for 2.3 s (`perf sched
/// timehist`), and LTTng discarded 20–60% of the events, whatever the sub-buffers. With autogroup off nothing was
/// lost (4 runs of 4, the trace on disk or in /dev/shm). Real-time priority for the daemon (`chrt -a -f -p 1`) was
/// enough only for a trace in /dev/shm: writing to disk it still lost events in 2 runs of 3, its writes waiting on
/// the kernel's writeback, which is not real-time (2026-11-28).
public struct LTTngConsumerScheduling: Sendable, Equatable {
    /// One running consumer daemon (`lttng-consumerd`; one per bitness and domain).
    public struct Daemon: Sendable, Equatable {
        public let pid: Int32
        /// Its scheduler autogroup ("/autogroup-4"), nil when the kernel does not say.
        public let autogroup: String?

        public init(pid: Int32, autogroup: String?) {
            self.pid = pid
            self.autogroup = autogroup
        }
    }

    /// `kernel.sched_autogroup_enabled`.
    public let autogroupEnabled: Bool
    /// The autogroup of this process, and so of the programs it starts.
    public let ownAutogroup: String?
    public let daemons: [Daemon]

    public init(autogroupEnabled: Bool, ownAutogroup: String?, daemons: [Daemon]) {
        self.autogroupEnabled = autogroupEnabled
        self.ownAutogroup = ownAutogroup
        self.daemons = daemons
    }

    /// What `proc` (the proc file system's mount point; tests pass a folder laid out like it) says now.
    public static func current(proc: String = "/proc") -> LTTngConsumerScheduling {
        let enabled = firstWord(of: proc + "/sys/kernel/sched_autogroup_enabled") == "1"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: proc)) ?? []
        let daemons = entries.compactMap(Int32.init).sorted().compactMap { pid -> Daemon? in
            guard firstWord(of: "\(proc)/\(pid)/comm") == "lttng-consumerd" else { return nil }
            return Daemon(pid: pid, autogroup: firstWord(of: "\(proc)/\(pid)/autogroup"))
        }
        return LTTngConsumerScheduling(autogroupEnabled: enabled, ownAutogroup: firstWord(of: proc + "/self/autogroup"),
                                       daemons: daemons)
    }

    /// The daemons a program started from here can starve: those in another autogroup, with autogroups on.
    public var starvable: [Daemon] {
        guard autogroupEnabled else { return [] }
        return daemons.filter { $0.autogroup != ownAutogroup }
    }

    /// The risk in one sentence, nil when there is none.
    public var risk: String? {
        guard let first = starvable.first else { return nil }
        let pids = starvable.map { String($0.pid) }.joined(separator: ", ")
        return "lttng-consumerd (pid \(pids)) runs in scheduler group \(first.autogroup ?? "?"), this process in "
            + "\(ownAutogroup ?? "?") (kernel.sched_autogroup_enabled=1): a program that keeps every CPU busy can keep it "
            + "off the CPUs for seconds, and LTTng then discards events"
    }

    /// What removes the risk.
    public static let fix = "turn autogroup scheduling off (as root: sysctl -w kernel.sched_autogroup_enabled=0), "
        + "or record such loads with --tracer embedded"

    /// The first whitespace-separated word of a small file (proc files report a size of 0: read as a stream).
    private static func firstWord(of path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 256)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let line = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return line.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).first.map(String.init)
    }
}

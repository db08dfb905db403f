import Foundation
import Glibc
import TraceModel

/// When a process started, in clock ticks since boot (`/proc/PID/stat`, field 22): with the pid, it names one
/// process for good, since a pid is reused but never with the same start time.
public enum ProcessStart {
    public static func time(of pid: pid_t) -> UInt64? {
        ProcessStat(pid: pid)?.startTime
    }
}

/// LTTng sessions an rlctl process made and could not remove: killed by SIGKILL, it leaves its session active in
/// the session daemon, recording (or streaming) for nobody, until someone destroys it.
public enum LTTngLeftoverSessions {
    /// A session removed because its owner is gone.
    public struct Removed: Sendable, Equatable {
        public let name: String
        public let owner: pid_t
        /// Where the session wrote its trace (`lttng list`'s "Trace output"), nil when it did not say.
        public let output: String?
    }

    /// Destroys every `rlctl-…` session (``LTTngSession/uniqueName(_:)``) whose owner is gone: no process with
    /// its pid, or one started at another time (the pid was reused). Sessions of running rlctl processes, and
    /// sessions named otherwise, are left alone. Returns what it removed; nothing when no daemon answers.
    public static func removeOrphans() -> [Removed] {
        guard let listing = try? LTTngTools.lttng(["list"], timeout: .seconds(10)) else { return [] }
        var removed: [Removed] = []
        for (name, output) in sessions(in: listing) {
            guard let owner = owner(of: name), !isRunning(owner) else { continue }
            // Another rlctl may be removing it at the same moment: gone either way.
            _ = try? LTTngTools.lttng(["destroy", name], timeout: .seconds(30))
            removed.append(Removed(name: name, owner: owner.pid, output: output))
        }
        return removed
    }

    /// The sessions `lttng list` shows ("  1) NAME [active]", then "    Trace output: PATH"), with their output.
    static func sessions(in listing: String) -> [(name: String, output: String?)] {
        var found: [(name: String, output: String?)] = []
        for line in listing.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count >= 2, words[0].hasSuffix(")"), Int(words[0].dropLast()) != nil {
                found.append((String(words[1]), nil))
            } else if let range = line.range(of: "Trace output: "), !found.isEmpty, found[found.count - 1].output == nil {
                found[found.count - 1].output = String(line[range.upperBound...]).trimmingCharacters(in: .whitespaces)
            }
        }
        return found
    }

    /// The process an rlctl session name says made it: `rlctl-LABEL-PID.START-RANDOM`, or `rlctl-LABEL-PID-RANDOM`
    /// from an rlctl before the start time was in the name (then the pid alone is checked).
    static func owner(of name: String) -> (pid: pid_t, start: UInt64?)? {
        guard name.hasPrefix("rlctl-") else { return nil }
        let parts = name.split(separator: "-")
        guard parts.count >= 4, UInt32(parts[parts.count - 1]) != nil else { return nil }
        let owner = parts[parts.count - 2].split(separator: ".")
        guard let pid = pid_t(owner[0]) else { return nil }
        switch owner.count {
        case 1: return (pid, nil)
        case 2: return UInt64(owner[1]).map { (pid, $0) }
        default: return nil
        }
    }

    /// Whether `name` is named by an rlctl process (``LTTngSession/uniqueName(_:)``: sessions, temporary trace
    /// folders) that is gone. False for names of running rlctls and for other names.
    public static func ownerIsGone(of name: String) -> Bool {
        owner(of: name).map { !isRunning($0) } ?? false
    }

    private static func isRunning(_ owner: (pid: pid_t, start: UInt64?)) -> Bool {
        guard let start = ProcessStart.time(of: owner.pid) else { return false }
        return owner.start.map { $0 == start } ?? true
    }
}

/// The session daemon that answers this user, found by its pid file (`lttng-sessiond` writes one where its
/// client socket is).
public enum LTTngSessionDaemon {
    /// The pid of the answering session daemon, or nil when its pid file names no running `lttng-sessiond`.
    public static func runningPID() -> pid_t? {
        let environment = ProcessInfo.processInfo.environment
        let folder = getuid() == 0 ? "/var/run/lttng"
            : (environment["LTTNG_HOME"] ?? environment["HOME"] ?? NSHomeDirectory()) + "/.lttng"
        guard let text = try? String(contentsOfFile: folder + "/lttng-sessiond.pid", encoding: .utf8),
              let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)),
              let name = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
              name.trimmingCharacters(in: .whitespacesAndNewlines) == "lttng-sessiond" else { return nil }
        return pid
    }

    /// Stops the session daemon `pid` (SIGTERM, waiting up to 10 s for it to go) unless it still holds a session:
    /// another program, or another rlctl that found it running, records through it. Returns whether it stopped.
    @discardableResult
    public static func stopIfIdle(_ pid: pid_t, started: UInt64?) -> Bool {
        guard ProcessStart.time(of: pid) == started,
              let listing = try? LTTngTools.lttng(["list"], timeout: .seconds(10)),
              LTTngLeftoverSessions.sessions(in: listing).isEmpty else { return false }
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(10)
        while ProcessStart.time(of: pid) == started && ContinuousClock.now < deadline { usleep(20_000) }
        return ProcessStart.time(of: pid) != started
    }

    /// Stops the session daemon now running (one this process started) when this process exits normally, unless it
    /// holds a session then (``stopIfIdle(_:started:)``): for a process that starts a daemon for its own use and has
    /// no exit cleanups of its own (a test run; rlctl registers its own, which also run on signals).
    public static func stopWhenThisProcessExits() {
        guard let daemon = runningPID() else { return }
        StartedDaemon.set(pid: daemon, started: ProcessStart.time(of: daemon))
        atexit { StartedDaemon.stop() }
    }
}

/// The daemon ``LTTngSessionDaemon/stopWhenThisProcessExits()`` stops (an `atexit` handler captures nothing).
private enum StartedDaemon {
    nonisolated(unsafe) private static var pid: pid_t = 0
    nonisolated(unsafe) private static var started: UInt64?

    static func set(pid: pid_t, started: UInt64?) {
        self.pid = pid
        self.started = started
    }

    static func stop() { LTTngSessionDaemon.stopIfIdle(pid, started: started) }
}

import Foundation
import Glibc
import TraceReading
import Tracing

/// What `record`, `run --tracer lttng` and `doctor` share: checking that LTTng can be used, the trace folder,
/// and the session's life.
enum LTTngRecording {
    /// Fails (exit 2, one line saying what to install) unless this build and this machine can record with LTTng
    /// and read the result back.
    static func requireUsable(_ what: String) throws {
        do { try LTTngTools.requireInstalled() } catch { throw Failure.input("\(what) needs lttng-tools: \(error)") }
        guard CTFTraceReader.isAvailable else {
            throw Failure.input("\(what) needs libbabeltrace2 to read the LTTng trace, and this rlctl was built without it: install libbabeltrace2-dev (scripts/install-deps.sh) and rebuild (\(rebuild))")
        }
    }

    /// A rebuild that looks for the system libraries again: SwiftPM caches the manifest's evaluation (where
    /// Package.swift looks for them) by the manifest's text, so a plain `swift build` after installing one keeps
    /// building without it.
    static let rebuild = "swift build --manifest-cache none"

    /// Starts the session daemon unless one answers, saying so on stderr; one started here is stopped when rlctl
    /// ends, however it ends short of SIGKILL, unless another program's session is still in it then (one found
    /// running is left alone). Then removes the sessions rlctl processes killed by SIGKILL left in it.
    static func ensureSessionDaemon() throws {
        do {
            if try LTTngTools.ensureSessionDaemon() {
                let daemon = LTTngSessionDaemon.runningPID()
                FileHandle.standardError.write(Data("rlctl: started the LTTng session daemon (lttng-sessiond --daemonize\(daemon.map { ", pid \($0)" } ?? "")); it stops when rlctl ends\n".utf8))
                if let daemon {
                    let started = ProcessStart.time(of: daemon)
                    ExitCleanups.shared.add { LTTngSessionDaemon.stopIfIdle(daemon, started: started) }
                }
            }
        } catch {
            throw Failure.input("cannot reach or start an LTTng session daemon: \(error)")
        }
        for removed in removeLeftovers() { FileHandle.standardError.write(Data("rlctl: \(removed)\n".utf8)) }
    }

    /// Destroys the sessions whose rlctl is gone (``LTTngLeftoverSessions``), and the temporary trace folders they
    /// wrote in, which their rlctl would have removed (a folder the user named keeps the trace up to the kill),
    /// and stops the relay daemons of gone `rlctl top`s; returns a line for each.
    static func removeLeftovers() -> [String] {
        let removed = LTTngLeftoverSessions.removeOrphans()
        for session in removed {
            if let output = session.output, TraceDestination.isTemporary(output, madeBy: session.owner) {
                try? FileManager.default.removeItem(atPath: output)
            }
        }
        return removed.map(describe) + LTTngLocalLiveSession.removeOrphanedRelays().map(describe)
    }

    /// The line that says a leftover session went.
    static func describe(_ removed: LTTngLeftoverSessions.Removed) -> String {
        "removed the LTTng session \(removed.name), left by rlctl process \(removed.owner), which is gone"
            + (removed.output.map { output in
                if TraceDestination.isTemporary(output, madeBy: removed.owner) { return ", and its temporary folder \(output)" }
                return output.hasPrefix("/") ? "; its trace stays in \(output)" : ""   // a relay's URL: the trace is there
            } ?? "")
    }

    /// The line that says a relay daemon of a gone `rlctl top` was stopped.
    static func describe(_ relay: LTTngLocalLiveSession.OrphanedRelay) -> String {
        "stopped the relay daemon \(relay.relayd) of rlctl top process \(relay.owner), which is gone, and removed its folder \(relay.folder)"
    }

    /// What to do when an LTTng recording lost events, or nil when it lost none: where the consumer daemon can be
    /// starved of CPU (``LTTngConsumerScheduling``), that first, since bigger sub-buffers do not help then.
    static func lossAdvice(lost: UInt64, read: UInt64) -> String? {
        guard lost > 0 else { return nil }
        let share = Double(lost) / Double(lost + read) * 100
        let amount = "LTTng discarded \(lost) events, \(share < 1 ? "under 1" : String(Int(share.rounded())))% of those emitted"
        if let risk = LTTngConsumerScheduling.current().risk {
            return "\(amount); \(risk). Fix: \(LTTngConsumerScheduling.fix)"
        }
        return "\(amount); bigger sub-buffers (--subbuf-size, --num-subbuf) absorb a burst, or record with --tracer embedded"
    }

    /// LTTng channel options from `--subbuf-size` / `--num-subbuf`.
    static func channelOptions(subbufferSize: String?, subbufferCount: Int?) -> [String] {
        var options: [String] = []
        if let subbufferSize { options.append("--subbuf-size=\(subbufferSize)") }
        if let subbufferCount { options.append("--num-subbuf=\(subbufferCount)") }
        return options
    }
}

/// A trace folder: the one the user named (kept), or a temporary one (removed once summarized).
struct TraceDestination {
    let path: String
    let keep: Bool

    /// `requested` must not exist yet or be an empty folder: a trace written among other files would mix with
    /// them (LTTng adds its streams to an old trace's).
    init(requested: String?, label: String) throws {
        if let requested {
            try Self.requireNewFolder(requested)
            path = URL(fileURLWithPath: requested).standardizedFileURL.path
            keep = true
        } else {
            let path = Self.temporaryFolder(label)
            Self.removeOrphanedTemporaryFolders()
            self.path = path
            keep = false
            // Also when a signal ends rlctl before the owner's own removal runs.
            ExitCleanups.shared.add { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    /// Refuses `requested` unless it does not exist yet or is an empty folder, and can be written.
    static func requireNewFolder(_ requested: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: requested, isDirectory: &isDirectory) {
            let empty = isDirectory.boolValue && ((try? FileManager.default.contentsOfDirectory(atPath: requested))?.isEmpty ?? false)
            guard empty else { throw Failure.input("\(requested) already exists: give a new folder for the trace") }
        }
        try requireWritableTraceFolder(requested)
    }

    /// What starts the label of a temporary trace folder's name.
    static let temporaryLabel = "trace-"

    /// A new path for a temporary folder of this rlctl's, named as sessions are (owner's pid and start time,
    /// `rlctl-trace-LABEL-PID.START-RANDOM`): the next rlctl removes it if this one is killed.
    static func temporaryFolder(_ label: String) -> String {
        NSTemporaryDirectory() + LTTngSession.uniqueName(temporaryLabel + label)
    }

    /// Whether `path` is a temporary trace folder that rlctl process `owner` made (and would have removed).
    static func isTemporary(_ path: String, madeBy owner: pid_t) -> Bool {
        let folder = URL(fileURLWithPath: path)
        let name = folder.lastPathComponent
        return folder.deletingLastPathComponent().standardizedFileURL.path == URL(fileURLWithPath: NSTemporaryDirectory()).standardizedFileURL.path
            && name.hasPrefix("rlctl-") && (name.contains("-\(owner)-") || name.contains("-\(owner)."))
    }

    /// Removes the temporary trace folders of rlctl processes that are gone (killed by SIGKILL, nothing of theirs
    /// ran to remove them; a pid since reused does not count); returns their paths. Folders the user named are
    /// never touched: only `rlctl-trace-LABEL-PID.START-RANDOM` ones in the temporary folder (others, such as
    /// `top`'s, are removed with what they belong to).
    @discardableResult
    static func removeOrphanedTemporaryFolders() -> [String] {
        let temporary = NSTemporaryDirectory()
        var removed: [String] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []
        where name.hasPrefix("rlctl-" + temporaryLabel) && LTTngLeftoverSessions.ownerIsGone(of: name) {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: temporary + name, isDirectory: &isDirectory), isDirectory.boolValue,
                  (try? FileManager.default.removeItem(atPath: temporary + name)) != nil else { continue }
            removed.append(temporary + name)
        }
        return removed
    }

    /// After a second signal: the kept trace is complete (say where); a temporary one goes.
    func completedNote() -> String? {
        guard keep else {
            removeUnlessKept()
            return nil
        }
        return "the trace in \(path) is complete"
    }

    func removeUnlessKept() {
        if !keep { try? FileManager.default.removeItem(atPath: path) }
    }

    /// A step after the recording failed (its summary or page could not be written): the recording must not go
    /// with it. A temporary trace moves to a name no later rlctl removes (`rlctl-kept-…` beside it); returns where
    /// the trace is, or nil when it could not be kept.
    func keptAfterFailure() -> String? {
        guard !keep else { return path }
        let kept = (path as NSString).deletingLastPathComponent + "/" + (path as NSString).lastPathComponent
            .replacingOccurrences(of: "rlctl-" + Self.temporaryLabel, with: "rlctl-kept-")
        return rename(path, kept) == 0 ? kept : nil
    }
}

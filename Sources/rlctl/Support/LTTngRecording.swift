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

    /// Starts the session daemon unless one answers, saying so on stderr.
    static func ensureSessionDaemon() throws {
        do {
            if try LTTngTools.ensureSessionDaemon() {
                FileHandle.standardError.write(Data("rlctl: started the LTTng session daemon (lttng-sessiond --daemonize)\n".utf8))
            }
        } catch {
            throw Failure.input("cannot reach or start an LTTng session daemon: \(error)")
        }
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
            path = NSTemporaryDirectory() + "rlctl-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            keep = false
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
}

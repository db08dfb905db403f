import Foundation
import Glibc
import RunLoopCore
import TraceModel

/// The one line a program adds to be traced by `rlctl record` with whichever tracer rlctl chose: rlctl tells
/// the program in its environment, and outside rlctl the call installs nothing and costs nothing after it.
///
/// ```swift
/// import Tracing
/// LoopEventSink.installFromEnvironment()   // at start-up, before the loops run
/// ```
///
/// - `RLCTL_TRACER=lttng`: installs ``LTTngSink`` (rlctl's LTTng session records the `runloop:*` tracepoints).
/// - `RLCTL_TRACER=embedded` and `RLCTL_TRACE_DIR=FOLDER`: records with the embedded recorder into FOLDER, and
///   completes the trace when the process exits (`exit`, a return from `main`) or is ended by SIGINT, SIGTERM
///   or SIGHUP while those still have their default action (the recording is stopped, then the signal is
///   raised again, so the process still ends by it). A process killed by SIGKILL or a crash leaves the packets
///   written so far: readers take it as cut off and say so.
/// - Anything else: nothing is installed; an unusable value is reported once on stderr, never fatal.
/// - `RLCTL_STALL_THRESHOLD=50ms` (read by RunLoopCore itself, `Loop.stallThreshold`): iterations busier than
///   that are traced as `loop_stall` events, with their longest callout.
/// - `RLCTL_SNAPSHOT_ON_STALL=50ms` with `RLCTL_TRACER=embedded` (and `RLCTL_MAX_SNAPSHOTS`, `RLCTL_SNAPSHOT_GAP`):
///   instead of a whole recording, a flight recorder that writes a snapshot into the folder for each stall that
///   busy (`rlctl record --snapshot-on-stall`); set `RLCTL_STALL_THRESHOLD` too, so that the loops report them.
/// - `RLCTL_WATCHDOG=500ms`, with a tracer installed: a `LoopWatchdog` over every loop of the process traces a
///   loop still busy in one iteration after that long as `loop_hang`, while it is stuck.
///
/// Only the program `rlctl record` started takes the tracer (`RLCTL_RECORDER_PID`: a process whose parent is not that
/// rlctl, such as the program a wrapper shell starts, installs nothing), and the tracer variables are removed from
/// the environment once read, so that the programs this one starts are not traced into the same folder; with
/// `rlctl record --follow-children` (`RLCTL_FOLLOW_CHILDREN=1`) they are kept and every program takes them. The
/// adapters (RunLoopFoundation, RunLoopNIO) call this themselves.
extension LoopEventSink {
    /// What ``installFromEnvironment()`` did.
    public enum EnvironmentTracer: Sendable, Equatable {
        /// No tracer was asked for.
        case none
        case lttng
        /// The embedded recorder writes into this folder.
        case embedded(folder: String)
        /// A tracer was asked for and could not be installed (the reason was printed on stderr).
        case failed(String)
    }

    /// Installs the tracer `rlctl record` asked for (see the extension's documentation). Only the first call in
    /// a process reads the environment; every later call returns what the first did.
    @discardableResult
    public static func installFromEnvironment() -> EnvironmentTracer {
        EnvironmentRecording.shared.installOnce()
    }
}

/// The environment variables between `rlctl record` and the program it records.
public enum TracerEnvironment {
    public static let tracer = "RLCTL_TRACER"
    public static let folder = "RLCTL_TRACE_DIR"
    /// A duration: a `LoopWatchdog` over every loop, reporting through the installed tracer.
    public static let watchdog = "RLCTL_WATCHDOG"
    /// A duration: `Loop.stallThreshold` (read by RunLoopCore).
    public static let stallThreshold = "RLCTL_STALL_THRESHOLD"
    /// A duration, with `RLCTL_TRACER=embedded`: the recorder is a flight recorder writing a snapshot into
    /// `RLCTL_TRACE_DIR` for each stall this busy (``EmbeddedRecorder/Options/stallSnapshots``).
    public static let snapshotOnStall = "RLCTL_SNAPSHOT_ON_STALL"
    /// With ``snapshotOnStall``: the most snapshots (default 10).
    public static let maxSnapshots = "RLCTL_MAX_SNAPSHOTS"
    /// With ``snapshotOnStall``: the least time between two snapshots (a duration, default 1s).
    public static let snapshotGap = "RLCTL_SNAPSHOT_GAP"
    /// The process id of the `rlctl record` that started the program: only its own child takes the tracer, not a
    /// program that child starts (which inherits the variables from a program that never reads them, a shell).
    public static let recorderProcess = "RLCTL_RECORDER_PID"
    /// `1`: the tracer variables stay in the environment, so the programs the recorded one starts are traced too.
    public static let followChildren = "RLCTL_FOLLOW_CHILDREN"

    /// The variables that make the programs a process starts trace themselves; read once, then removed.
    static let passedOn = [tracer, folder, snapshotOnStall, maxSnapshots, snapshotGap, watchdog, recorderProcess, followChildren]

    /// Sets who takes the tracer in `environment`, a program's that `rlctl record` starts: that program alone, or
    /// with `followChildren` every program it starts too.
    public static func limit(_ environment: inout [String: String], followChildren: Bool) {
        environment[recorderProcess] = followChildren ? nil : String(getpid())
        environment[Self.followChildren] = followChildren ? "1" : nil
    }
}

/// The process's one environment-requested recording, and its ending at exit or on a terminating signal.
final class EnvironmentRecording: @unchecked Sendable {
    static let shared = EnvironmentRecording()

    private let lock = NSLock()
    private var installed: LoopEventSink.EnvironmentTracer?
    private var recording: Recording?
    private var watchdog: LoopWatchdog?
    /// RLCTL_WATCHDOG as the first call read it (the environment no longer holds it).
    private var watchdogText = ""

    func installOnce() -> LoopEventSink.EnvironmentTracer {
        lock.lock()
        defer { lock.unlock() }
        if let installed { return installed }
        let result = install()
        installed = result
        switch result {
        case .failed(let reason):
            FileHandle.standardError.write(Data("rlctl tracing: \(reason); this process is not traced\n".utf8))
        case .lttng, .embedded:
            startWatchdog()
        case .none:
            break
        }
        return result
    }

    private func install() -> LoopEventSink.EnvironmentTracer {
        let environment = ProcessInfo.processInfo.environment
        let requested = environment[TracerEnvironment.tracer] ?? ""
        let folder = environment[TracerEnvironment.folder] ?? ""
        let snapshotText = environment[TracerEnvironment.snapshotOnStall] ?? ""
        let maxText = environment[TracerEnvironment.maxSnapshots] ?? ""
        let gapText = environment[TracerEnvironment.snapshotGap] ?? ""
        watchdogText = environment[TracerEnvironment.watchdog] ?? ""
        if environment[TracerEnvironment.followChildren] != "1" {
            // Here, at the first call (documented as made at start-up, before the program starts threads): unsetenv
            // is not safe against a getenv running on another thread at the same moment.
            for name in TracerEnvironment.passedOn { unsetenv(name) }
        }
        // A program started by the recorded one (through a wrapper shell, which passes on variables it never read).
        if let recorder = environment[TracerEnvironment.recorderProcess], recorder != String(getppid()) { return .none }
        switch requested {
        case "":
            return .none
        case "lttng":
            LoopEventSink.install(LTTngSink())
            return .lttng
        case "embedded":
            guard !folder.isEmpty else { return .failed("\(TracerEnvironment.tracer)=embedded needs \(TracerEnvironment.folder), the trace folder") }
            let tracer: Recording.Tracer
            if snapshotText.isEmpty {
                tracer = .embedded()
            } else {
                do { tracer = .embeddedSnapshots(try Self.snapshotPolicy(threshold: snapshotText, maximum: maxText, gap: gapText)) } catch {
                    return .failed(error.reason)
                }
            }
            do {
                recording = try Recording.start(tracer, into: folder)
            } catch {
                return .failed("cannot record into \(folder): \(error.reason)")
            }
            EndOfProcess.arrange()
            return .embedded(folder: folder)
        default:
            return .failed("\(TracerEnvironment.tracer)=\(requested) is not a tracer (embedded or lttng)")
        }
    }

    private struct PolicyProblem: Error { let reason: String }

    /// RLCTL_SNAPSHOT_ON_STALL and its limits, each checked.
    private static func snapshotPolicy(threshold: String, maximum: String, gap: String) throws(PolicyProblem) -> StallSnapshotPolicy {
        func nanoseconds(_ name: String, _ text: String) throws(PolicyProblem) -> Int64 {
            do { return try DurationText.nanoseconds(text) } catch {
                throw PolicyProblem(reason: "\(name)=\(text) is not a duration: \(error.description)")
            }
        }
        let thresholdNanoseconds = try nanoseconds(TracerEnvironment.snapshotOnStall, threshold)
        guard thresholdNanoseconds > 0 else {
            throw PolicyProblem(reason: "\(TracerEnvironment.snapshotOnStall)=\(threshold): the threshold must be longer than zero")
        }
        let most = maximum.isEmpty ? 10 : Int(maximum) ?? 0
        guard most >= 1 else {
            throw PolicyProblem(reason: "\(TracerEnvironment.maxSnapshots)=\(maximum) is not a number of snapshots (1 or more)")
        }
        let gapNanoseconds = gap.isEmpty ? 1_000_000_000 : try nanoseconds(TracerEnvironment.snapshotGap, gap)
        guard gapNanoseconds >= 0 else {
            throw PolicyProblem(reason: "\(TracerEnvironment.snapshotGap)=\(gap): the gap cannot be negative")
        }
        return StallSnapshotPolicy(thresholdNanoseconds: UInt64(thresholdNanoseconds), maxSnapshots: most,
                                   minimumGap: .nanoseconds(gapNanoseconds))
    }

    /// RLCTL_WATCHDOG's watchdog over every loop; a value that is not a duration longer than zero is reported on
    /// stderr and ignored.
    private func startWatchdog() {
        let text = watchdogText
        guard !text.isEmpty else { return }
        let threshold: Int64
        do { threshold = try DurationText.nanoseconds(text) } catch {
            FileHandle.standardError.write(Data("rlctl tracing: \(TracerEnvironment.watchdog)=\(text) is ignored: \(error.description); no watchdog runs\n".utf8))
            return
        }
        guard threshold > 0 else {
            FileHandle.standardError.write(Data("rlctl tracing: \(TracerEnvironment.watchdog)=\(text) is ignored: the threshold must be longer than zero; no watchdog runs\n".utf8))
            return
        }
        let watchdog = LoopWatchdog(threshold: .nanoseconds(threshold))
        watchdog.watchEveryLoop()
        self.watchdog = watchdog
    }

    /// Completes the trace; any thread, any number of times.
    func stop() {
        lock.lock()
        let recording = self.recording
        lock.unlock()
        _ = try? recording?.stop()
    }
}

/// Stops the environment's recording when the process ends: at exit, and on SIGINT, SIGTERM and SIGHUP while
/// their action is the default one (a program's own handler, installed before or after, is left alone).
private enum EndOfProcess {
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    /// Written by the signal handler (async-signal-safe), read by the thread that stops the recording.
    nonisolated(unsafe) static var pipe: [Int32] = [-1, -1]

    static func arrange() {
        atexit { EnvironmentRecording.shared.stop() }
        var fds: [Int32] = [-1, -1]
        guard Glibc.pipe(&fds) == 0 else { return }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        pipe = fds
        var arranged = false
        for signo in signals {
            var current = sigaction()
            guard sigaction(signo, nil, &current) == 0, current.__sigaction_handler.sa_handler == nil else { continue }
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { signo in
                var byte = UInt8(truncatingIfNeeded: signo)
                _ = Glibc.write(EndOfProcess.pipe[1], &byte, 1)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            if sigaction(signo, &action, nil) == 0 { arranged = true }
        }
        guard arranged else { return }
        let thread = Thread {
            var byte: UInt8 = 0
            while Glibc.read(EndOfProcess.pipe[0], &byte, 1) < 0 && errno == EINTR {}
            EnvironmentRecording.shared.stop()
            // End by the signal, as the program would have without the recording.
            let signo = Int32(byte)
            signal(signo, SIG_DFL)
            raise(signo)
        }
        thread.name = "rlctl-trace-end"
        thread.start()
    }
}

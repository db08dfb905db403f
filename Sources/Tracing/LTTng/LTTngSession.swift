import Foundation
import Glibc

/// Why an LTTng command could not do its job, in one line that says what to do about it.
public struct LTTngError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// lttng-tools as rlctl drives it: the `lttng` client and the session daemon.
///
/// Every command runs with a time limit. The client always gets `--no-sessiond`: when it spawns a daemon
/// itself, the daemon inherits the caller's pipes and signal mask; ``ensureSessionDaemon()`` starts it cleanly.
public enum LTTngTools {
    /// What to tell someone whose machine lacks lttng-tools.
    public static let installHint = "install lttng-tools (Debian: apt-get install lttng-tools, or run scripts/install-deps.sh)"

    /// The full path of an executable found in PATH (a shell's default PATH when none is set), or nil; for any
    /// program, not only lttng-tools.
    public static func path(of command: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        return path.split(separator: ":").lazy.map { $0 + "/" + command }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The lttng-tools commands rlctl needs that PATH lacks (`lttng`, `lttng-sessiond`).
    public static var missingCommands: [String] { ["lttng", "lttng-sessiond"].filter { path(of: $0) == nil } }

    /// Throws, naming what is missing, unless both `lttng` and `lttng-sessiond` are installed.
    public static func requireInstalled() throws(LTTngError) {
        let missing = missingCommands
        guard missing.isEmpty else {
            throw LTTngError("\(missing.map { "`\($0)`" }.joined(separator: " and ")) not found in PATH: \(installHint)")
        }
    }

    /// Runs `lttng ARGUMENTS` and returns its output; throws with that output when it fails or overruns.
    @discardableResult
    public static func lttng(_ arguments: [String], timeout: Duration = .seconds(30)) throws(LTTngError) -> String {
        try run("lttng", ["--no-sessiond"] + arguments, timeout: timeout)
    }

    /// Runs a command with a time limit and returns its output (stdout and stderr together).
    @discardableResult
    public static func run(_ command: String, _ arguments: [String], timeout: Duration = .seconds(30)) throws(LTTngError) -> String {
        guard let executable = path(of: command) else { throw LTTngError("`\(command)` not found in PATH: \(installHint)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        // Drained while the command runs, so a long output cannot fill the pipe and stall it.
        let collected = OutputCollector(pipe.fileHandleForReading)
        do { try process.run() } catch {
            throw LTTngError("cannot run \(executable): \(error.localizedDescription)")
        }
        try? pipe.fileHandleForWriting.close()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { usleep(5_000) }
        let shown = ([command] + arguments.filter { $0 != "--no-sessiond" }).joined(separator: " ")
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw LTTngError("`\(shown)` took more than \(timeout)")
        }
        let text = collected.wait()
        guard process.terminationStatus == 0 else {
            let reason = text.split(separator: "\n").last { $0.contains("Error") } ?? text.split(separator: "\n").last ?? ""
            throw LTTngError("`\(shown)` failed (exit \(process.terminationStatus)): \(reason.trimmingCharacters(in: .whitespaces))")
        }
        return text
    }

    /// Whether a session daemon answers this user's `lttng` client.
    public static var isSessionDaemonReachable: Bool { (try? lttng(["list"], timeout: .seconds(10))) != nil }

    /// Starts `lttng-sessiond --daemonize` unless a session daemon answers already. Returns whether it started one.
    @discardableResult
    public static func ensureSessionDaemon() throws(LTTngError) -> Bool {
        try requireInstalled()
        if isSessionDaemonReachable { return false }
        let launched = Result { () throws(LTTngError) in try startSessionDaemon() }
        // A launcher that failed may have lost the lock to another one started at the same moment (two `rlctl
        // record`s, or parallel tests): it exits with "A session daemon is already running" before the winner
        // answers. Only whether `lttng list` answers within the wait counts.
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            // Started by this call only if its launcher succeeded.
            if isSessionDaemonReachable { return (try? launched.get()) != nil }
            usleep(100_000)
        }
        if case .failure(let error) = launched { throw error }
        try lttng(["list"])
        return true
    }

    /// Runs `lttng-sessiond --daemonize` and waits for the launcher to exit, which it does once the daemon is
    /// ready. Not through `Process`: the daemon must not inherit the caller's blocked signals (`--daemonize`
    /// waits for SIGUSR1 from the daemon, and a daemon blocking SIGTERM could not be stopped) nor its pipes (it
    /// would hold them open for ever).
    private static func startSessionDaemon() throws(LTTngError) {
        guard let executable = path(of: "lttng-sessiond") else { throw LTTngError("`lttng-sessiond` not found in PATH: \(installHint)") }
        let pid = try spawnDaemon(executable, ["--daemonize"])
        guard let status = waitForExit(pid, within: .seconds(30)) else {
            kill(pid, SIGKILL)
            var ignored: Int32 = 0
            waitpid(pid, &ignored, 0)
            throw LTTngError("`lttng-sessiond --daemonize` did not finish within 30 s")
        }
        let exited = status & 0x7f == 0
        if !exited || (status >> 8) & 0xff != 0 {
            let how = exited ? "exit \((status >> 8) & 0xff)" : "signal \(status & 0x7f)"
            throw LTTngError("`lttng-sessiond --daemonize` failed (\(how)) and no session daemon answers; run it by hand to see why")
        }
    }

    /// Waits for a child to exit: its wait status, or nil when it still runs after `limit`.
    static func waitForExit(_ pid: pid_t, within limit: Duration) -> Int32? {
        var status: Int32 = 0
        let deadline = ContinuousClock.now + limit
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard ContinuousClock.now < deadline else { return nil }
            usleep(10_000)
        }
        return status
    }

    /// Starts a daemon from a clean slate: standard streams on /dev/null, no blocked or ignored signals (the
    /// caller's mask would otherwise be inherited, SIGTERM blocked among them).
    static func spawnDaemon(_ executable: String, _ arguments: [String]) throws(LTTngError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in 0...2 as ClosedRange<Int32> {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        var all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let environment: [UnsafeMutablePointer<CChar>?] =
            ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + environment).forEach { free($0) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
        guard result == 0 else {
            throw LTTngError("cannot start \((executable as NSString).lastPathComponent): \(String(cString: strerror(result)))")
        }
        return pid
    }

    private final class OutputCollector: @unchecked Sendable {
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)
        init(_ handle: FileHandle) {
            Thread.detachNewThread { [self] in
                data = handle.readDataToEndOfFile()
                done.signal()
            }
        }
        func wait() -> String {
            done.wait()
            return String(decoding: data, as: UTF8.self)
        }
    }
}

/// One LTTng recording session that enables every `runloop` event (with the `vtid` context, so each event
/// names its thread) and writes a CTF trace folder that `CTFTraceReader` and `TraceReaders` read.
///
/// ```swift
/// try LTTngTools.ensureSessionDaemon()
/// let session = try LTTngSession.create(name: "demo", output: "/tmp/demo-trace", trackedProcess: child)
/// try session.start()
/// …                                  // the traced program runs
/// try session.stop()                 // flushes the buffers and destroys the session; the folder stays
/// ```
public struct LTTngSession: Sendable {
    public let name: String
    /// The trace folder (`lttng create --output`), or the relay daemon's URL for a session that streams to one.
    public let output: String

    /// A session name no other rlctl process uses: `rlctl-LABEL-PID.START-RANDOM`, the owner's process id and
    /// start time (``LTTngLeftoverSessions`` tells by them a session whose owner is gone, even when its pid was
    /// reused; the dot keeps the name apart from the `rlctl-LABEL-PID-RANDOM` of earlier rlctls, whose label may
    /// end in digits).
    public static func uniqueName(_ label: String) -> String {
        "rlctl-\(label)-\(getpid()).\(ProcessStart.time(of: getpid()) ?? 0)-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Creates the session; a session daemon must answer (``LTTngTools/ensureSessionDaemon()``).
    ///
    /// - Parameters:
    ///   - name: the session's name (rlctl's are `rlctl-LABEL-PID.START-…`, see ``LTTngLeftoverSessions``).
    ///   - output: the folder the trace is written in.
    ///   - trackedProcess: when set, only this process is traced, so other programs emitting `runloop` events
    ///     at the same time (whose loop ids would collide with its own) stay out of the trace. Otherwise
    ///     ``track(processID:)`` can add processes later; until then every process is traced.
    ///   - channelOptions: `lttng enable-channel` options (e.g. `--subbuf-size=1M`); default channel otherwise.
    ///   - snapshotMode: keep the events in memory (overwrite channels) and write only on `lttng snapshot`, into
    ///     `output/snapshot-…` (``LTTngStallSnapshots``).
    ///   - contexts: the context fields each event carries (`vpid` too, for a session of several processes).
    public static func create(name: String, output: String, trackedProcess: pid_t? = nil,
                              channelOptions: [String] = [], snapshotMode: Bool = false,
                              contexts: [String] = ["vtid"]) throws(LTTngError) -> LTTngSession {
        try LTTngTools.lttng(["create", name] + (snapshotMode ? ["--snapshot"] : []) + ["--output=\(output)"])
        return try LTTngSession(name: name, output: output).enableRunLoopEvents(trackedProcess: trackedProcess, channelOptions: channelOptions,
                                                                                contexts: contexts)
    }

    /// Creates a live session that streams to the relay daemon at `relay` (`net://HOST[:CONTROL_PORT[:DATA_PORT]]`,
    /// `lttng create --live --set-url`): the relay writes the trace under its output folder, in
    /// `<this host's name>/<session>-<date>/`, and live readers can follow it while it records. The relay is first
    /// contacted when the events are enabled, so an unreachable one fails here.
    ///
    /// - Parameters:
    ///   - name: the session's name.
    ///   - relay: the relay daemon's URL, `net://HOST[:CONTROL_PORT[:DATA_PORT]]`.
    ///   - trackedProcess: when set, only this process is traced (as for a local session).
    ///   - channelOptions: `lttng enable-channel` options; default channel otherwise.
    ///   - liveTimer: how often the tracer sends what it has to the relay, for live readers (LTTng's default, 1 s,
    ///     when nil).
    ///   - contexts: the context fields each event carries (`vpid` too, for a reader of several processes).
    public static func create(name: String, relay: String, trackedProcess: pid_t? = nil, channelOptions: [String] = [],
                              liveTimer: Duration? = nil, contexts: [String] = ["vtid"]) throws(LTTngError) -> LTTngSession {
        let live = liveTimer.map { "--live=\(max(1, $0.components.seconds * 1_000_000 + $0.components.attoseconds / 1_000_000_000_000))" } ?? "--live"
        try LTTngTools.lttng(["create", name, live, "--set-url=\(relay)"])
        return try LTTngSession(name: name, output: relay).enableRunLoopEvents(trackedProcess: trackedProcess, channelOptions: channelOptions, contexts: contexts)
    }

    /// Enables every `runloop` event with the given contexts in a new session; destroys the session when that fails.
    private func enableRunLoopEvents(trackedProcess: pid_t?, channelOptions: [String],
                                     contexts: [String] = ["vtid"]) throws(LTTngError) -> LTTngSession {
        let session = self
        do {
            if let trackedProcess { try session.track(processID: trackedProcess) }
            var enable = ["enable-event", "--userspace", "runloop:*", "--session=\(name)"]
            if !channelOptions.isEmpty {
                try LTTngTools.lttng(["enable-channel", "--userspace", "--session=\(name)"] + channelOptions + ["rlctl"])
                enable.append("--channel=rlctl")
            }
            try LTTngTools.lttng(enable)
            try LTTngTools.lttng(["add-context", "--userspace"] + contexts.map { "--type=\($0)" } + ["--session=\(name)"]
                                 + (channelOptions.isEmpty ? [] : ["--channel=rlctl"]))
        } catch {
            session.destroy()
            throw error
        }
        return session
    }

    private init(name: String, output: String) {
        self.name = name
        self.output = output
    }

    /// Restricts tracing to the processes tracked so far plus this one.
    public func track(processID: pid_t) throws(LTTngError) {
        try LTTngTools.lttng(["track", "--userspace", "--vpid=\(processID)", "--session=\(name)"])
    }

    /// Creates a session that traces this process only and starts it (see ``startForThisProcess(timeout:)``); a
    /// session that cannot be started is destroyed.
    public static func recordThisProcess(name: String, output: String, channelOptions: [String] = [],
                                         timeout: Duration = .seconds(20)) throws(LTTngError) -> LTTngSession {
        let session = try create(name: name, output: output, trackedProcess: getpid(), channelOptions: channelOptions)
        do {
            try session.startForThisProcess(timeout: timeout)
        } catch {
            session.destroy()
            throw error
        }
        return session
    }

    /// Starts recording. LTTng tells each traced process asynchronously: when the traced process is another one,
    /// its first events may precede the tracking unless it waits (as `rlctl record`'s gated child does).
    public func start() throws(LTTngError) {
        try LTTngTools.lttng(["start", name])
    }

    /// Starts recording and waits until LTTng has enabled every `runloop` tracepoint in this process.
    public func startForThisProcess(timeout: Duration = .seconds(20)) throws(LTTngError) {
        // A session destroyed just before (a previous run's) is disabled asynchronously too: wait for it to go,
        // so that "enabled" below means this session. Another long-lived session tracing every process would
        // keep the count up; then go on after a while.
        let quiet = ContinuousClock.now + .seconds(5)
        while LTTngSink.enabledEventCount > 0 && ContinuousClock.now < quiet { usleep(5_000) }
        try start()
        let deadline = ContinuousClock.now + timeout
        while LTTngSink.enabledEventCount < LTTngSink.providerEventCount {
            guard ContinuousClock.now < deadline else {
                throw LTTngError("the session daemon did not enable the runloop tracepoints in this process within \(timeout) (\(LTTngSink.enabledEventCount) of \(LTTngSink.providerEventCount)); is the daemon running as another user?")
            }
            usleep(5_000)
        }
    }

    /// Stops recording, waiting until the trace on disk is complete, and destroys the session (the folder stays).
    public func stop() throws(LTTngError) {
        defer { destroy() }
        try LTTngTools.lttng(["stop", name])
    }

    /// What a session that streamed to a relay daemon reports at its end (``stopStreaming()``).
    public struct StreamingEnd: Sendable {
        /// Events the tracer discarded on this host because its buffers were full (`lttng list`'s statistics),
        /// nil when the daemon did not say.
        public var discardedEvents: UInt64?
        /// Why the end of the trace may not have reached the relay daemon (it went away mid-session), nil when
        /// the session ended cleanly.
        public var relayProblem: String?
    }

    /// Stops a session, reads how many events this host discarded, and destroys it, saying whether the relay
    /// daemon took the trace to its end (a relay that died makes the daemon fail the final flush).
    public func stopStreaming() throws(LTTngError) -> StreamingEnd {
        var end = StreamingEnd()
        do {
            try LTTngTools.lttng(["stop", name])
        } catch {
            destroy()
            throw error
        }
        if let listing = try? LTTngTools.lttng(["list", name]) {
            let counts = listing.split(separator: "\n").compactMap { line -> UInt64? in
                guard let range = line.range(of: "Discarded events:") else { return nil }
                return UInt64(line[range.upperBound...].trimmingCharacters(in: .whitespaces))
            }
            if !counts.isEmpty { end.discardedEvents = counts.reduce(0, +) }
        }
        do {
            let said = try LTTngTools.lttng(["destroy", name])
            if let complaint = said.split(separator: "\n").first(where: { $0.contains("Error") }) {
                end.relayProblem = complaint.trimmingCharacters(in: .whitespaces)
            }
        } catch {
            // Only lttng's own words, without the command line.
            end.relayProblem = error.description.range(of: "): ").map { String(error.description[$0.upperBound...]) } ?? error.description
        }
        return end
    }

    /// Destroys the session without waiting for anything; for clean-up after a failure.
    public func destroy() {
        _ = try? LTTngTools.lttng(["destroy", name])
    }
}

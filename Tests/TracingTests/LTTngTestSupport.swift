import Foundation
import Glibc
import RunLoopCore
import Testing
import Tracing

/// Whether the LTTng round-trip tests can run here, and what to do when they cannot.
///
/// Where LTTng (the provider compiled in, libbabeltrace2, the `lttng` and `lttng-sessiond` commands) is missing
/// the tests are skipped with the reason, except when `CI=true`: CI installs everything
/// (scripts/install-deps.sh), so there a missing piece is a failure, not a skip.
enum LTTngTestEnvironment {
    static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

    /// What is missing, or nil when everything is there.
    ///
    /// Worked out when Swift Testing evaluates the suite's `.enabled(if:)` trait, before any test runs, and that
    /// is also when the session daemon is started if none runs: every process linked with liblttng-ust connects
    /// to a daemon that appears, and tests elsewhere that count a child process's descriptors (exit tests)
    /// must not see that happen in the middle of their count.
    static let missing: String? = {
        var missing: [String] = []
        if !LTTngSink.isCompiledIn { missing.append("the runloop LTTng provider (built without liblttng-ust-dev, or with RLCTL_DISABLE_LTTNG)") }
        if !CTFTraceReader.isAvailable { missing.append("libbabeltrace2 (built without libbabeltrace2-dev, or with RLCTL_DISABLE_BABELTRACE2)") }
        for command in ["lttng", "lttng-sessiond"] where executable(command) == nil {
            missing.append("the `\(command)` command (lttng-tools)")
        }
        if missing.isEmpty {
            do {
                try LTTngSession.ensureSessionDaemon()
            } catch {
                missing.append("a session daemon (\(error))")
            }
        }
        return missing.isEmpty ? nil : missing.joined(separator: ", ")
    }()

    /// Run unless something is missing outside CI.
    static var shouldRun: Bool { missing == nil || isCI }

    static var skipComment: Comment {
        Comment(rawValue: "LTTng is not usable here, missing: \(missing ?? "nothing") (install with scripts/install-deps.sh; with CI=true this fails instead)")
    }

    /// Records a failure when the test runs (CI=true) although something is missing. Returns whether to go on.
    static func requireAvailable(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard let missing else { return true }
        Issue.record("CI=true but LTTng is not usable: missing \(missing). CI installs it with scripts/install-deps.sh, so this is a broken CI machine, not a skip.",
                     sourceLocation: sourceLocation)
        return false
    }

    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin"]
        return directories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// Same rule for the CTF reader tests that only need libbabeltrace2.
enum BabeltraceTestEnvironment {
    static var shouldRun: Bool { CTFTraceReader.isAvailable || LTTngTestEnvironment.isCI }
    static let skipComment: Comment = "built without libbabeltrace2 (install libbabeltrace2-dev and rebuild; with CI=true this fails instead)"

    static func requireAvailable(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        if CTFTraceReader.isAvailable { return true }
        Issue.record("CI=true but rlctl was built without libbabeltrace2 (CI installs libbabeltrace2-dev)", sourceLocation: sourceLocation)
        return false
    }
}

struct LTTngCommandError: Error, CustomStringConvertible {
    var description: String
}

/// Runs `lttng` and friends, each call with a time limit, and owns one uniquely named recording session.
struct LTTngSession {
    let name: String
    let output: String

    /// Runs a command; throws with its output when it fails or overruns `timeout`.
    @discardableResult
    static func run(_ command: String, _ arguments: [String], timeout: Duration = .seconds(30)) throws -> String {
        guard let executable = LTTngTestEnvironment.executable(command) else {
            throw LTTngCommandError(description: "`\(command)` is not installed")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        // Never let the client spawn a session daemon itself: it would inherit this thread's blocked signals and
        // our pipe (see startSessionDaemon()).
        process.arguments = command == "lttng" ? ["--no-sessiond"] + arguments : arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw LTTngCommandError(description: "`\(command) \(arguments.joined(separator: " "))` took more than \(timeout)")
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw LTTngCommandError(description: "`\(command) \(arguments.joined(separator: " "))` failed (\(process.terminationStatus)): \(text)")
        }
        return text
    }

    /// Starts `lttng-sessiond --daemonize` unless a session daemon answers already.
    static func ensureSessionDaemon() throws {
        if (try? run("lttng", ["list"])) != nil { return }
        // "A session daemon is already running" is fine too: only whether `lttng list` answers afterwards counts.
        try startSessionDaemon()
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if (try? run("lttng", ["list"])) != nil { return }
            usleep(100_000)
        }
        try run("lttng", ["list"])
    }

    /// Runs `lttng-sessiond --daemonize` and waits for the launcher to exit, which it does once the daemon is
    /// ready. Not through `Process`: the daemon must not inherit the test thread's blocked signals (`--daemonize`
    /// waits for SIGUSR1 from the daemon, and a daemon blocking SIGTERM could not be stopped), nor our pipes
    /// (it would hold them open for ever).
    static func startSessionDaemon() throws {
        guard let executable = LTTngTestEnvironment.executable("lttng-sessiond") else {
            throw LTTngCommandError(description: "`lttng-sessiond` is not installed")
        }
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
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup(executable), strdup("--daemonize"), nil]
        let environment: [UnsafeMutablePointer<CChar>?] =
            ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (arguments + environment).forEach { free($0) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, executable, &actions, &attributes, arguments, environment)
        guard result == 0 else {
            throw LTTngCommandError(description: "cannot start lttng-sessiond: \(String(cString: strerror(result)))")
        }
        var status: Int32 = 0
        let deadline = ContinuousClock.now + .seconds(30)
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard ContinuousClock.now < deadline else {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                throw LTTngCommandError(description: "`lttng-sessiond --daemonize` did not finish within 30 s")
            }
            usleep(10_000)
        }
    }

    /// Creates a session tracing `runloop:*` with the `vtid` context, for this process only (so other processes —
    /// exit-test children, other test runs — are not given its buffers), writing under a new temporary folder.
    /// `channel` options (e.g. tiny sub-buffers) go to `lttng enable-channel`.
    static func create(_ label: String, channelOptions: [String] = []) throws -> LTTngSession {
        try ensureSessionDaemon()
        let unique = "rlctl-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let output = NSTemporaryDirectory() + "rlctl-lttng-tests/" + unique
        try FileManager.default.createDirectory(atPath: NSTemporaryDirectory() + "rlctl-lttng-tests", withIntermediateDirectories: true)
        let session = LTTngSession(name: unique, output: output)
        try run("lttng", ["create", unique, "--output=\(output)"])
        do {
            try run("lttng", ["track", "--userspace", "--vpid=\(getpid())", "--session=\(unique)"])
            var eventOptions = ["enable-event", "--userspace", "runloop:*", "--session=\(unique)"]
            if !channelOptions.isEmpty {
                try run("lttng", ["enable-channel", "--userspace", "--session=\(unique)"] + channelOptions + ["rlctl"])
                eventOptions.append("--channel=rlctl")
            }
            try run("lttng", eventOptions)
            try run("lttng", ["add-context", "--userspace", "--type=vtid", "--session=\(unique)"])
        } catch {
            session.destroy()
            throw error
        }
        return session
    }

    /// Starts recording and waits until LTTng has enabled every `runloop` tracepoint in this process (the
    /// session daemon tells the process asynchronously).
    func start() throws {
        // A session destroyed just before (the previous test's) is disabled asynchronously too: wait for it to go,
        // so that "enabled" below means this session. Another long-lived session tracing every process would
        // keep the count up; then go on after a while.
        let quiet = ContinuousClock.now + .seconds(5)
        while LTTngSink.enabledEventCount > 0 && ContinuousClock.now < quiet { usleep(10_000) }
        try Self.run("lttng", ["start", name])
        let deadline = ContinuousClock.now + .seconds(20)
        while LTTngSink.enabledEventCount < 20 {
            guard ContinuousClock.now < deadline else {
                throw LTTngCommandError(description: "LTTng did not enable the runloop tracepoints in this process within 20 s (\(LTTngSink.enabledEventCount) of 20 enabled)")
            }
            usleep(10_000)
        }
    }

    /// Stops recording (waiting until the trace is readable) and destroys the session.
    func stop() throws {
        try Self.run("lttng", ["stop", name])
        try Self.run("lttng", ["destroy", name])
    }

    /// Best-effort clean-up after a failure.
    func destroy() {
        _ = try? Self.run("lttng", ["destroy", name])
    }

    func removeOutput() {
        try? FileManager.default.removeItem(atPath: output)
    }
}

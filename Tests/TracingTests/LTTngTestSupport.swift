import Foundation
import Glibc
import RunLoopCore
import Testing
import TraceReading
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
        for command in LTTngTools.missingCommands {
            missing.append("the `\(command)` command (lttng-tools)")
        }
        if missing.isEmpty {
            do {
                try LTTngTools.ensureSessionDaemon()
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

/// One uniquely named recording session that traces this process only, for one test.
struct TestSession {
    let session: LTTngSession
    var output: String { session.output }

    /// `channel` options (e.g. tiny sub-buffers) go to `lttng enable-channel`.
    static func create(_ label: String, channelOptions: [String] = []) throws -> TestSession {
        let name = LTTngSession.uniqueName(label)
        let folder = NSTemporaryDirectory() + "rlctl-lttng-tests"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // Only this process: exit-test children and other test runs are not given its buffers.
        return TestSession(session: try LTTngSession.create(name: name, output: folder + "/" + name,
                                                             trackedProcess: getpid(), channelOptions: channelOptions))
    }

    /// Starts recording and waits until LTTng has enabled every `runloop` tracepoint in this process.
    func start() throws { try session.startForThisProcess() }

    func stop() throws { try session.stop() }
    func destroy() { session.destroy() }
    func removeOutput() { try? FileManager.default.removeItem(atPath: output) }
}

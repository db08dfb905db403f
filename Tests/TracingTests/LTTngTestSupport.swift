import Foundation
import Glibc
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// Whether the LTTng round-trip tests can run here (the provider compiled in, libbabeltrace2, the `lttng` and
/// `lttng-sessiond` commands), and what is missing when they cannot (skipped outside CI, failed in CI).
enum LTTngTestEnvironment {
    /// Worked out when Swift Testing evaluates the suite's `.enabled(if:)` trait, before any test runs, and that
    /// is also when the session daemon is started if none runs: every process linked with liblttng-ust connects
    /// to a daemon that appears, and tests elsewhere that count a child process's descriptors (exit tests)
    /// must not see that happen in the middle of their count.
    static let requirement: TestRequirement = {
        var missing: [String] = []
        if !LTTngSink.isCompiledIn { missing.append("the runloop LTTng provider (built without liblttng-ust-dev, or with RLCTL_DISABLE_LTTNG)") }
        if !CTFTraceReader.isAvailable { missing.append("libbabeltrace2 (built without libbabeltrace2-dev, or with RLCTL_DISABLE_BABELTRACE2)") }
        for command in LTTngTools.missingCommands {
            missing.append("the `\(command)` command (lttng-tools)")
        }
        if missing.isEmpty {
            do {
                if try LTTngTools.ensureSessionDaemon() { LTTngSessionDaemon.stopWhenThisProcessExits() }
            } catch {
                missing.append("a session daemon (\(error))")
            }
        }
        return TestRequirement(missing: missing.isEmpty ? nil : missing.joined(separator: ", "), problem: "LTTng is not usable here")
    }()

    static var shouldRun: Bool { requirement.shouldRun }
    static var skipComment: Comment { requirement.skipComment }
    static func requireAvailable(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        requirement.requireMet(sourceLocation: sourceLocation)
    }
}

/// Same rule for the CTF reader tests that only need libbabeltrace2.
enum BabeltraceTestEnvironment {
    static let requirement = TestRequirement(
        missing: CTFTraceReader.isAvailable ? nil : "libbabeltrace2 (install libbabeltrace2-dev and rebuild)",
        problem: "rlctl was built without libbabeltrace2")
    static var shouldRun: Bool { requirement.shouldRun }
    static var skipComment: Comment { requirement.skipComment }
    static func requireAvailable(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        requirement.requireMet(sourceLocation: sourceLocation)
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

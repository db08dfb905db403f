import Foundation
import Glibc
import Testing

/// Where the tests run, and what that machine is expected to have.
public enum TestEnvironment {
    /// CI installs every optional dependency (scripts/install-deps.sh): there a missing one is a failure, elsewhere
    /// the tests that need it are skipped.
    public static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

    /// Whether this test process (and so the package it tests, built the same way) runs under ThreadSanitizer:
    /// `swift test --sanitize=thread` links the TSan runtime, whose entry point is then visible (nil: RTLD_DEFAULT).
    public static let isThreadSanitized = dlsym(nil, "__tsan_init") != nil

    /// The path of `tool` on PATH, or nil.
    public static func executable(_ tool: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(folder)/\(tool)"
            if access(path, X_OK) == 0 { return path }
        }
        return nil
    }
}

/// Something a group of tests needs from the machine (LTTng, libbabeltrace2, …), and the one rule for when it is
/// missing: skipped with the reason outside CI, failed in CI.
public struct TestRequirement: Sendable {
    /// What is missing, or nil when the requirement is met.
    public let missing: String?
    /// What the skip and the failure say about it: "LTTng is not usable here".
    public let problem: String

    public init(missing: String?, problem: String) {
        self.missing = missing
        self.problem = problem
    }

    /// For `.enabled(if:)`: run when met, and in CI, where `requireMet()` then fails the test.
    public var shouldRun: Bool { missing == nil || TestEnvironment.isCI }

    public var skipComment: Comment {
        Comment(rawValue: "\(problem): \(missing ?? "nothing missing") (install with scripts/install-deps.sh; with CI=true this fails instead)")
    }

    /// Whether the test can go on; a test that runs although the requirement is not met (CI=true, see
    /// `shouldRun`) fails.
    public func requireMet(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard let missing else { return true }
        guard TestEnvironment.isCI else { return false }
        Issue.record("CI=true but \(problem): \(missing). CI installs it with scripts/install-deps.sh, so this is a broken CI machine, not a skip.",
                     sourceLocation: sourceLocation)
        return false
    }
}

/// A fresh path under the system temporary folder (its parent exists, the path itself does not), unique to this
/// process and call. An extension stays last ("report.json" → ".../report-PID-N.json"): rlctl picks formats by it.
public func temporaryPath(_ name: String) -> String {
    let folder = NSTemporaryDirectory() + "rlctl-tests"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let url = URL(fileURLWithPath: name)
    let stem = url.deletingPathExtension().lastPathComponent
    let ext = url.pathExtension
    return folder + "/\(stem)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))" + (ext.isEmpty ? "" : ".\(ext)")
}

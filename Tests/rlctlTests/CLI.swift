import Foundation
import Testing
import TestSupport

/// Runs the built rlctl binary.
enum CLI {
    static let binary: String = {
        // Another build of rlctl (an older commit, a release build) can be put under the same tests.
        if let other = ProcessInfo.processInfo.environment["RLCTL_TEST_BINARY"], !other.isEmpty { return other }
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("rlctl").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return dir.appendingPathComponent("rlctl").path
    }()

    /// A program built next to rlctl (runloop-demo).
    static func sibling(_ name: String) -> String {
        URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// Starts rlctl in a process group of its own, so that a run killed at its time limit takes the programs it
    /// started (`record`'s program, lttng) with it.
    static func start(_ arguments: [String], environment: [String: String?] = [:],
                      timeout: Duration = .seconds(180)) throws -> RunningProcess {
        try RunningProcess(binary, arguments, ProcessOptions(environment: environment, timeout: timeout, ownProcessGroup: true))
    }

    /// Runs rlctl to its end; `environment` entries replace (nil: remove) the inherited ones.
    @discardableResult
    static func run(_ arguments: [String], environment: [String: String?] = [:], timeout: Duration = .seconds(180),
                    sourceLocation: SourceLocation = #_sourceLocation) throws -> ProcessOutput {
        try start(arguments, environment: environment, timeout: timeout).wait(sourceLocation: sourceLocation)
    }

    /// Writes `text` to a new temporary file named after `name` (its extension kept) and returns its path.
    static func file(_ name: String, _ text: String) throws -> String {
        let path = temporaryPath(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

/// Runs rlctl and checks its exit status and its whole stdout and stderr, as golden text: a usage error's one
/// line, a manual, a report. A mismatch shows the lines that differ.
func assertCommand(_ arguments: [String], stdout: String = "", stderr: String = "", status: Int32,
                   environment: [String: String?] = [:], sourceLocation: SourceLocation = #_sourceLocation) throws {
    let result = try CLI.run(arguments, environment: environment, sourceLocation: sourceLocation)
    let command = "rlctl " + arguments.joined(separator: " ")
    #expect(result.termination == .exited(status), "\(command): \(result.termination), expected exit status \(status); stderr: \(result.stderr)",
            sourceLocation: sourceLocation)
    expectSameText(result.stdout, stdout, "\(command): stdout", sourceLocation: sourceLocation)
    expectSameText(result.stderr, stderr, "\(command): stderr", sourceLocation: sourceLocation)
}

/// A usage error: `rlctl: <message>` as the only output, exit status 2.
func expectUsageError(_ arguments: [String], _ message: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    try assertCommand(arguments, stderr: "rlctl: \(message)\n", status: 2, sourceLocation: sourceLocation)
}

/// A recorded trace shared by the tests that read one (recorded once, by the binary).
let sharedTrace: String = {
    let path = temporaryPath("shared.rltrace")
    let result = try! CLI.run(["run", "mixed", "--duration", "700ms", "--trace", path, "--format", "json"])
    precondition(result.status == 0, "rlctl run failed: \(result.stderr)")
    return path
}()

import Foundation
import Testing
import TestSupport

/// scripts/readme-flows.sh is what keeps the README's commands honest in CI; these checks make `swift test`
/// (the README's own test command) notice when the runner itself stops catching failures, or when the README
/// gains a block or a path the runner would mishandle, long before the slower CI step runs the blocks.
@Suite struct ReadmeFlowsTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func script(_ arguments: [String]) throws -> ProcessOutput {
        // The caller's settings would point the script at another document or folder.
        let unset = ProcessInfo.processInfo.environment.keys.filter { $0.hasPrefix("README_FLOWS_") }
        return try runProcess("/bin/bash", [repository.appendingPathComponent("scripts/readme-flows.sh").path] + arguments,
                              ProcessOptions(environment: Dictionary(uniqueKeysWithValues: unset.map { ($0, nil) }),
                                             workingDirectory: repository.path))
    }

    @Test func theRunnerFailsBrokenBlocksAtTheirLineAndPassesWorkingOnes() throws {
        let result = try Self.script(["--self-test"])
        #expect(result.status == 0, "\(result.termination): \(result.stdout)\(result.stderr)")
        #expect(result.stdout.hasSuffix("readme-flows: self-test passed\n"), "\(result.stdout)\(result.stderr)")
    }

    @Test func everyReadmeShellBlockRunsExceptTheTestCommandCIRunsItself() throws {
        let result = try Self.script(["--list"])
        try #require(result.status == 0, "\(result.termination): \(result.stdout)\(result.stderr)")
        let plan = result.stdout.split(separator: "\n").map(String.init)
        let skipped = plan.filter { $0.hasPrefix("skip ") }
        #expect(skipped.count == 1, "\(plan)")

        // The list must account for every shell fence of the README, so none is silently left out.
        let readme = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let shellFences = readme.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { ["```sh", "```bash", "```shell"].contains($0.trimmingCharacters(in: .whitespaces)) }
        #expect(plan.filter { $0.hasPrefix("run ") || $0.hasPrefix("skip ") }.count == shellFences.count, "\(plan)")
        #expect(plan.contains { $0.hasPrefix("file ") && $0.hasSuffix(" perf.budget") }, "the CI example's budget is not written")
        #expect(!readme.contains("../"), "the README points outside the repository")
    }
}

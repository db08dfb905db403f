import Foundation
import Testing

/// scripts/readme-flows.sh is what keeps the README's commands honest in CI; these checks make `swift test`
/// (the README's own test command) notice when the runner itself stops catching failures, or when the README
/// gains a block or a path the runner would mishandle, long before the slower CI step runs the blocks.
@Suite struct ReadmeFlowsTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func script(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [repository.appendingPathComponent("scripts/readme-flows.sh").path] + arguments
        process.currentDirectoryURL = repository
        // The caller's settings would point the script at another document or folder.
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("README_FLOWS_") }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func theRunnerFailsBrokenBlocksAtTheirLineAndPassesWorkingOnes() throws {
        let result = try Self.script(["--self-test"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("readme-flows: self-test passed"))
    }

    @Test func everyReadmeShellBlockRunsExceptTheTestCommandCIRunsItself() throws {
        let result = try Self.script(["--list"])
        try #require(result.status == 0, "\(result.output)")
        let plan = result.output.split(separator: "\n").map(String.init)
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

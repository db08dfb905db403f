import Foundation
import Testing
import TestSupport

/// scripts/readme-flows.sh is what keeps the README's commands honest in CI; these checks make `swift test`
/// (the README's own test command) notice when the runner itself stops catching failures, or when the README
/// gains a block or a path the runner would mishandle, long before the slower CI step runs the blocks.
@Suite struct ReadmeFlowsTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func script(_ arguments: [String], file: String? = nil) throws -> ProcessOutput {
        // The caller's settings would point the script at another document or folder.
        let unset = ProcessInfo.processInfo.environment.keys.filter { $0.hasPrefix("README_FLOWS_") }
        var environment: [String: String?] = Dictionary(uniqueKeysWithValues: unset.map { ($0, nil) })
        if let file { environment["README_FLOWS_FILE"] = file }
        return try runProcess("/bin/bash", [repository.appendingPathComponent("scripts/readme-flows.sh").path] + arguments,
                              ProcessOptions(environment: environment, workingDirectory: repository.path))
    }

    /// The shell fences of a Markdown file: every one must be run (or, in the README, be the test command).
    static func shellFences(_ path: String) throws -> Int {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .filter { ["```sh", "```bash", "```shell"].contains($0.trimmingCharacters(in: .whitespaces)) }.count
    }

    /// The guides .ci/run runs after the README: `for guide in docs/….md …; do`.
    static func guidesCIRuns() throws -> [String] {
        let ci = try String(contentsOf: repository.appendingPathComponent(".ci/run"), encoding: .utf8)
        let line = try #require(ci.split(separator: "\n").first { $0.hasPrefix("for guide in ") })
        return line.dropFirst("for guide in ".count).split(separator: ";").first!.split(separator: " ").map(String.init)
    }

    /// Every page a README section sends a reader to for a use (a guide under docs/ with shell blocks) runs in CI, and
    /// every one of its blocks is in the plan: the depth moved out of the README is still checked.
    @Test func everyGuideTheReadmeLinksRunsInCI() throws {
        let guides = try Self.guidesCIRuns()
        // The sections on each use, not the reference pages listed under "More" (their commands are fragments).
        let whole = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let readme = try #require(whole.components(separatedBy: "\n## More\n").first)
        for page in try FileManager.default.contentsOfDirectory(atPath: Self.repository.appendingPathComponent("docs").path).sorted()
        where page.hasSuffix(".md") && readme.contains("](docs/\(page))") {
            guard try Self.shellFences("docs/" + page) > 0 else { continue }
            #expect(guides.contains("docs/" + page), "docs/\(page) has commands and the README links it, but .ci/run does not run it")
        }
        for guide in guides {
            let result = try Self.script(["--list"], file: guide)
            try #require(result.status == 0, "\(guide): \(result.stdout)\(result.stderr)")
            let plan = result.stdout.split(separator: "\n").filter { $0.hasPrefix("run ") }
            #expect(plan.count == (try Self.shellFences(guide)), "\(guide): \(plan)")
        }
        #expect(guides.count >= 7, "\(guides)")
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

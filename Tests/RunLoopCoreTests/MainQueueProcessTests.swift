import Foundation
import Testing

/// Rule 38 on the real main dispatch queue. Inside `swift test` the main thread belongs to the test harness, so
/// these run main-queue-fixture (Tests/MainQueueFixture), a process whose main thread runs `Loop.main`, and compare
/// its whole log: activities, main-queue blocks, @MainActor jobs and run results, in the order they ran.
@Suite struct MainQueueProcessTests {
    static func run(_ program: String, _ arguments: [String] = []) throws -> ProcessOutput {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // The test bundle sits next to the products (or one folder deeper, depending on the runner).
        let candidates = [folder, folder.deletingLastPathComponent()].map { $0.appendingPathComponent(program).path }
        let path = candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
        return try runProcess(path, arguments, ProcessOptions(timeout: .seconds(60)))
    }

    static func log(_ entries: String) -> String {
        entries.split(separator: " ").joined(separator: "\n") + "\n"
    }

    @Test func mainQueueBlocksAndMainActorJobsRunWhileLoopMainRunsACommonMode() throws {
        let result = try Self.run("main-queue-fixture", ["common"])
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        // block1 and the task's first half were queued before the run: its first wait returns at once. The task's
        // second half, queued by `await Task.yield()` during that servicing, runs at the next one; block2, queued
        // by another thread once the loop slept, wakes it.
        expectSameText(result.stdout, Self.log("""
            Entry BT BS BW AW block1 task1 BT BS BW AW task2 BT BS BW AW block2 Exit =>stopped
            """), "main-queue-fixture common")
    }

    @Test func aPrivateModeLeavesMainQueueWorkWaitingAndDoesNotWakeForIt() throws {
        let result = try Self.run("main-queue-fixture", ["private"])
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        // The modal run sleeps until its timer although work is queued before it and during its sleep (block2):
        // one wait, no spurious iteration. The default mode's run then serves all of it in one servicing.
        expectSameText(result.stdout, Self.log("""
            Entry BT BS BW AW timer Exit =>finished Entry BT BS BW AW block1 task1 block2 Exit =>handled_source
            """), "main-queue-fixture private")
    }

    @Test func foundationsRunLoopMainAndLoopMainShareTheMainQueue() throws {
        let result = try Self.run("main-queue-fixture", ["foundation"])
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        // Whichever loop runs serves the queue. Nested in the other's servicing, a loop wakes for work queued meanwhile
        // but cannot run it (libdispatch's drain is not re-entrant): it returns as if it had handled a source, and
        // the work runs at the outer loop's next servicing (block4 under Loop.main, block6 under RunLoop.main).
        expectSameText(result.stdout, """
            block1
            RunLoop.main.run: true
            block2
            Loop.main.run: =>handled_source
            block3
              nested RunLoop.main.run: true
            Loop.main.run: =>handled_source
            block4
            Loop.main.run: =>handled_source
            block5
              nested Loop.main.run: =>handled_source
            RunLoop.main.run: true
            block6
            RunLoop.main.run: true

            """, "main-queue-fixture foundation")
    }

    /// The RunLoopCore example (docs/runloopcore.md) is Examples/main-queue-demo, word for word, and it runs: the @MainActor
    /// task and the DispatchQueue.main block run, and the task's stop ends the run.
    @Test func theReadmeExampleIsTheMainQueueDemoAndItRuns() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: repository.appendingPathComponent("docs/runloopcore.md"), encoding: .utf8)
        let demo = try String(contentsOf: repository.appendingPathComponent("Examples/main-queue-demo/main.swift"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "# RunLoopCore in one example").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```swift\n").dropFirst().first?.components(separatedBy: "```\n").first)
        // The program only adds a header comment.
        let program = demo.split(separator: "\n", omittingEmptySubsequences: false).drop { $0.hasPrefix("//") }.joined(separator: "\n")
        expectSameText(block, program, "docs/runloopcore.md's example against Examples/main-queue-demo/main.swift")

        let result = try Self.run("main-queue-demo")
        #expect(result.status == 0, "\(result.termination): \(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("a @MainActor task on the main thread"), "\(result.stdout)")
        #expect(lines.contains("a DispatchQueue.main block"), "\(result.stdout)")
        #expect(lines.contains("hello from the loop thread"), "\(result.stdout)")
        #expect(lines.last == "stopped", "\(result.stdout)")
    }
}

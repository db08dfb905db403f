import Foundation
import Glibc
import Testing
import TestSupport

/// The progress line: on a terminal for runs over a second, never in a pipe or a log.
@Suite struct ProgressTests {
    /// Runs rlctl with stderr on a pseudo-terminal and returns what the terminal received.
    private func terminalOutput(_ arguments: [String]) throws -> (status: Int32?, terminal: String) {
        let result = try runProcess(CLI.binary, arguments, ProcessOptions(stderrOnTerminal: true))
        return (result.status, result.stderr)
    }

    @Test func aRunOverASecondShowsProgressOnATerminalAndClearsIt() throws {
        let (status, terminal) = try terminalOutput(["run", "timers", "--count", "2", "--duration", "1500ms"])
        #expect(status == 0)
        let updates = terminal.components(separatedBy: "\r\u{1B}[K").filter { !$0.isEmpty }
        #expect(updates.count >= 2, "updates: \(updates)")
        #expect(updates.allSatisfy { $0.hasPrefix("running… ") && $0.contains("of 1.50s, ") && $0.contains("events written") && $0.hasSuffix(" lost") }, "\(updates)")
        #expect(terminal.hasSuffix("\r\u{1B}[K"), "the line is cleared before the summary: \(terminal.suffix(80))")
    }

    /// The count used to move only per written packet (256 KiB): a whole jank run that wrote 805 events showed
    /// "0 events written" from start to end.
    @Test func theProgressLineCountsEventsAsTheyAreRecorded() throws {
        let (status, terminal) = try terminalOutput(["run", "jank", "--duration", "1500ms"])
        #expect(status == 0)
        let counts = terminal.components(separatedBy: "\r\u{1B}[K").compactMap { update -> Int? in
            guard let range = update.range(of: " events written") else { return nil }
            return Int(update[..<range.lowerBound].split(separator: " ").last ?? "")
        }
        #expect(counts.count >= 2, "updates: \(terminal)")
        #expect((counts.last ?? 0) > 0, "the last update still says 0 events: \(counts)")
        #expect(counts == counts.sorted(), "the count never goes back: \(counts)")
    }

    @Test func shortRunsAndPipesShowNoProgress() throws {
        let (status, terminal) = try terminalOutput(["run", "timers", "--count", "2", "--duration", "600ms"])
        #expect(status == 0)
        #expect(terminal.isEmpty, "a run of a second or less shows nothing: \(terminal)")
        let piped = try CLI.run(["run", "timers", "--count", "2", "--duration", "1200ms"])
        #expect(piped.status == 0 && piped.stderr.isEmpty, "stderr is a pipe: \(piped.stderr)")
    }
}

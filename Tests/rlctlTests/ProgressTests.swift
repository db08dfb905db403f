import Foundation
import Glibc
import Testing

/// The progress line: on a terminal for runs over a second, never in a pipe or a log.
@Suite struct ProgressTests {
    /// Runs rlctl with stderr on a pseudo-terminal and returns what the terminal received.
    private func terminalOutput(_ arguments: [String]) throws -> (status: Int32, terminal: String) {
        // posix_openpt/unlockpt/ptsname by hand (Glibc's module does not export them): unlock, then ask the number.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        try #require(master >= 0)
        defer { close(master) }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        // TIOCSPTLCK and TIOCGPTN, whose _IOW/_IOR macros Swift cannot import (same values on x86_64 and arm64).
        try #require(ioctl(master, 0x4004_5431, &unlock) == 0 && ioctl(master, 0x8004_5430, &number) == 0)
        let replica = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        try #require(replica >= 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(fileDescriptor: replica, closeOnDealloc: false)
        try process.run()
        close(replica)
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Reading ends with EIO once the last holder of the replica (rlctl) has exited.
        while true {
            let n = read(master, &buffer, buffer.count)
            if n > 0 { received.append(contentsOf: buffer[0..<n]) } else if n < 0 && errno == EINTR { continue } else { break }
        }
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: received, as: UTF8.self))
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

import Foundation
import Glibc
import Testing
import TestSupport

/// The executable a process runs ("" once it is gone).
func executablePath(of pid: pid_t) -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? ""
}

/// Watching a started rlctl (or a program it records) reach the state a test acts in.
extension RunningProcess {
    /// The process's children, as the kernel lists them (a zombie among them until it is reaped).
    var children: [pid_t] {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        return text.split(separator: " ").compactMap { pid_t($0) }
    }

    /// The child once it runs `program` (until then `record`'s child is rlctl's fork, waiting at its gate while
    /// rlctl sets the recording up, which a loaded machine can stretch to seconds); nil if that takes over a
    /// minute.
    func child(running program: String) -> pid_t? {
        var found: pid_t?
        _ = eventually(timeout: .seconds(60)) {
            found = children.first { URL(fileURLWithPath: executablePath(of: $0)).lastPathComponent == program }
            return found != nil
        }
        return found
    }

    /// Waits (bounded) until the process has made its recorder in `folder` (which writes the metadata as it is
    /// made, just before the recording starts): a set-up that a loaded machine stretches is then behind it, and
    /// the callers' sleep after this covers the few milliseconds left before the run.
    func waitUntilRecording(into folder: String, within limit: Duration = .seconds(60),
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        let recording = eventually(timeout: limit) { FileManager.default.fileExists(atPath: folder + "/metadata") || !isRunning }
        try #require(recording && isRunning, "no recording started in \(folder) (process \(pid))", sourceLocation: sourceLocation)
    }

    /// Waits (bounded) until rlctl catches SIGINT: before that, the dynamic loader is still mapping its libraries
    /// and no code of the program has run, so no program could handle a signal yet.
    func waitUntilSignalsAreCaught(within limit: Duration = .seconds(20), sourceLocation: SourceLocation = #_sourceLocation) throws {
        let end = ContinuousClock.now + limit
        while ContinuousClock.now < end {
            if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
               let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
               let mask = UInt64(line.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16),
               mask & (1 << (UInt64(SIGINT) - 1)) != 0 {
                return
            }
            if !isRunning { return }
            usleep(1_000)
        }
        Issue.record("rlctl did not install its signal handler within \(limit)", sourceLocation: sourceLocation)
    }
}

import ArgumentParser
import Foundation
import Glibc

@main
struct RLCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rlctl",
        abstract: "Make run-loop behaviour visible: why timers drift, where latency goes, whether a change made it slower.",
        discussion: """
        Exit status: 0 success; 1 a budget violation or a regression; 2 a usage or input error; 3 the data is \
        incomplete (lost events) and the budget forbids that.
        """,
        subcommands: [Run.self, Record.self, Summarize.self, Export.self, Check.self, Compare.self, List.self, Doctor.self]
    )

    /// Every failure ends as one line on stderr and a documented exit status; never a stack trace.
    static func main() {
        acceptTerminationSignals()
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let failure as Failure {
            FileHandle.standardError.write(Data("rlctl: \(failure.message)\n".utf8))
            Foundation.exit(failure.status.rawValue)
        } catch let exit as ExitCode {
            Foundation.exit(exit.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            FileHandle.standardError.write(Data("rlctl: \(message)\n".utf8))
            Foundation.exit(Status.usage.rawValue)
        }
    }
}

/// A parent that started rlctl from a thread blocking SIGINT/SIGTERM (test harnesses, some supervisors) passes
/// that mask on; unblocked here, Ctrl-C and SIGTERM always end a run with a complete trace, and `record` can pass
/// SIGTERM on to its program.
private func acceptTerminationSignals() {
    var signals = sigset_t()
    sigemptyset(&signals)
    for signo in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&signals, signo) }
    pthread_sigmask(SIG_UNBLOCK, &signals, nil)
}

/// The documented exit statuses.
enum Status: Int32 {
    case success = 0
    case violation = 1
    case usage = 2
    case incomplete = 3
}

/// A failure with its one-line message and exit status.
struct Failure: Error {
    let message: String
    let status: Status

    static func input(_ message: String) -> Failure { Failure(message: message, status: .usage) }
}

import ArgumentParser
import Foundation
import Glibc
import Tracing

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
        // Before anything else: a signal during start-up must not end rlctl with nothing (see Interruptions).
        Interruptions.shared.install()
        do {
            let arguments = joiningNegativeValues(Array(CommandLine.arguments.dropFirst()))
            try requireCommand(arguments)
            var command = try parseAsRoot(arguments)
            if !(command is Run || command is Record) { Interruptions.shared.endOnSignal() }
            try command.run()
        } catch let failure as Failure {
            fail(failure.message, status: failure.status.rawValue)
        } catch let exit as ExitCode {
            Foundation.exit(exit.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                Interruptions.shared.output { print(fullMessage(for: error)) }
                Foundation.exit(0)
            }
            fail(oneLine(message(for: error)), status: Status.usage.rawValue)
        }
    }

    private static func fail(_ message: String, status: Int32) -> Never {
        Interruptions.shared.output { FileHandle.standardError.write(Data("rlctl: \(message)\n".utf8)) }
        Foundation.exit(status)
    }

    /// `rlctl` alone and `rlctl help TOPIC` for an unknown topic are usage errors (ArgumentParser prints the
    /// overview and exits 0 for both).
    private static func requireCommand(_ arguments: [String]) throws {
        let names = configuration.subcommands.map { $0._commandName }
        guard let first = arguments.first else {
            throw Failure.input("name a command: \(names.joined(separator: ", ")) (rlctl --help describes them)")
        }
        if first == "help", arguments.count > 1 {
            let topic = arguments[1]
            guard names.contains(topic) else {
                throw Failure.input("no help topic \"\(topic)\": the commands are \(names.joined(separator: ", "))")
            }
            guard arguments.count == 2 else {
                throw Failure.input("rlctl help takes one command (got \(arguments.dropFirst().joined(separator: " ")))")
            }
        }
    }

    /// `--duration -1s` reads to ArgumentParser as an option with no value followed by an unknown flag ("Missing
    /// value"); joined as `--duration=-1s`, the value reaches the option, which says what is wrong with it. Not
    /// after `--`: that is record's program and its arguments.
    static func joiningNegativeValues(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { return result + arguments[index...] }
            if argument.hasPrefix("--"), !argument.contains("="), index + 1 < arguments.count,
               arguments[index + 1].hasPrefix("-"), let next = arguments[index + 1].dropFirst().first, next.isNumber || next == "." {
                result.append("\(argument)=\(arguments[index + 1])")
                index += 2
                continue
            }
            result.append(argument)
            index += 1
        }
        return result
    }

    /// ArgumentParser lists an option's values one per line; the failure stays one line with the values in it.
    static func oneLine(_ message: String) -> String {
        var lines = message.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard var head = lines.first else { return message }
        lines.removeFirst()
        let values = lines.prefix { $0.hasPrefix("  - ") }.map { $0.dropFirst(4) }
        if !values.isEmpty {
            if head.hasSuffix(":") { head.removeLast() }
            head += ": " + values.joined(separator: ", ")
        }
        return head
    }
}

/// What SIGINT and SIGTERM mean at each moment of `run` and `record`.
///
/// Installed first thing in `main` (and, for the moments before `main`, by CRecorder's load-time hook), so no
/// signal finds the default action, which would end rlctl with status 130 and nothing: no summary, and a trace
/// left half written. The first signal asks the command to wrap up: a workload not yet started does not start,
/// a running one is cancelled, a summary being computed is finished; the trace is completed and the summary
/// printed either way. A second signal (at least ``TerminationSignals/repeatWindow`` later: one request
/// delivered twice is one) completes the trace, says the summary was skipped and ends rlctl at once.
/// Commands with nothing to save end as the signal would have ended them.
final class Interruptions: @unchecked Sendable {
    static let shared = Interruptions()

    enum Phase {
        /// Not run or record (summarize, export, …): a signal ends rlctl as it would have.
        case plain
        /// Start-up, and run/record before the workload or program starts.
        case preparing
        /// The workload runs; the closure cancels it.
        case running(@Sendable () -> Void)
        /// record's program runs: SIGTERM is passed on to it; SIGINT is its own (the terminal sent it there too).
        case forwarding(pid_t)
        /// Tracing stops and the summary is computed and printed.
        case summarizing
    }

    private let lock = NSLock()
    private var phase: Phase = .preparing
    private var first: Int32?
    /// What a signal during preparation keeps from starting, for the message.
    private var preparing = "the workload"
    private var ending = false
    /// Completes the trace when a second signal ends rlctl; returns what to tell the user about it.
    private var completion: (@Sendable () -> String?)?

    func install() {
        do {
            try TerminationSignals.watch { [self] signo in received(signo) }
        } catch {
            FileHandle.standardError.write(Data("rlctl: \(error); Ctrl-C will end rlctl without a summary\n".utf8))
        }
        // A parent that started rlctl from a thread blocking SIGINT/SIGTERM (test harnesses, some supervisors)
        // passes that mask on; `record` must also be able to pass SIGTERM on to its program.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signo in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&signals, signo) }
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    /// The signal that interrupted the command, if one did.
    var interruption: Int32? {
        lock.lock()
        defer { lock.unlock() }
        return first
    }

    /// For commands with nothing to save; a signal that came during start-up ends rlctl now.
    func endOnSignal() {
        lock.lock()
        phase = .plain
        let pending = first
        lock.unlock()
        if let pending { TerminationSignals.exit(reraising: pending) }
    }

    /// Names what the command is preparing to start ("the workload", "the program").
    func prepare(_ what: String) {
        lock.lock()
        preparing = what
        lock.unlock()
    }

    /// Moves to running; false (and no change) when a signal already asked to stop, so nothing starts.
    func startRunning(cancel: @escaping @Sendable () -> Void) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard first == nil else { return false }
        phase = .running(cancel)
        return true
    }

    /// record: the program starts; false when a signal already asked to stop.
    func startForwarding(to pid: pid_t) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard first == nil else { return false }
        phase = .forwarding(pid)
        return true
    }

    func startSummarizing() {
        lock.lock()
        phase = .summarizing
        lock.unlock()
    }

    /// What a second signal does to leave a complete trace behind (nil: nothing to complete).
    func onSecondSignal(_ complete: (@Sendable () -> String?)?) {
        lock.lock()
        completion = complete
        lock.unlock()
    }

    /// Writes output unless a second signal is ending rlctl: then the summary was skipped, and is not half printed.
    func output(_ write: () -> Void) {
        lock.lock()
        if ending {
            lock.unlock()
            while true { pause() }   // the signal's thread is ending the process
        }
        write()
        fflush(nil)   // all streams: the summary is out before a signal's exit
        lock.unlock()
    }

    private func received(_ signo: Int32) {
        let name = signo == SIGINT ? "SIGINT" : (signo == SIGTERM ? "SIGTERM" : "signal \(signo)")
        lock.lock()
        switch phase {
        case .plain:
            lock.unlock()
            TerminationSignals.exit(reraising: signo)
        case .forwarding(let pid):
            if signo == SIGTERM { kill(pid, SIGTERM) }
            if first == nil { first = signo }
            lock.unlock()
        case .preparing, .running, .summarizing:
            if first == nil {
                first = signo
                let note: String
                switch phase {
                case .running(let cancel):
                    cancel()
                    note = "\(name): ending the run early; the summary follows (again to skip it)"
                case .summarizing: note = "\(name): finishing the summary (again to skip it)"
                default: note = "\(name): \(preparing) will not start (again to end at once)"
                }
                FileHandle.standardError.write(Data("rlctl: \(note)\n".utf8))
                lock.unlock()
                return
            }
            ending = true
            let complete = completion
            lock.unlock()
            let said = complete?()
            FileHandle.standardError.write(Data("rlctl: \(name) again: summary skipped\(said.map { "; \($0)" } ?? "")\n".utf8))
            TerminationSignals.exit(reraising: signo)
        }
    }
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

import ArgumentParser
import Foundation
import TraceModel

@main
struct RLCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rlctl",
        abstract: "Make run-loop behaviour visible: why timers drift, where latency goes, whether a change made it slower.",
        discussion: """
        Exit status: 0 success; 1 a budget violation or a regression; 2 a usage or input error; 3 the data is \
        incomplete (lost events) and the budget forbids that.
        """,
        version: RLCtl.version,
        subcommands: [Run.self, Record.self, Summarize.self, Export.self, Report.self, Check.self, Compare.self, List.self, Top.self, Doctor.self]
    )

    /// `rlctl --version`: the tool's version and the trace format it writes and reads.
    static let version = "rlctl 0.9.0 (trace format \(TraceSchema.formatVersion))"

    /// Every failure ends as one line on stderr and a documented exit status; never a stack trace.
    static func main() {
        // Before anything else: a signal during start-up must not end rlctl with nothing (see Interruptions).
        Interruptions.shared.install()
        do {
            let arguments = joiningNegativeValues(Array(CommandLine.arguments.dropFirst()))
            try requireCommand(arguments)
            var command = try parseAsRoot(arguments)
            if !(command is Run || command is Record || command is Top) { Interruptions.shared.endOnSignal() }
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
        if !first.hasPrefix("-"), first != "help", !names.contains(first) {
            throw Failure.input("unknown command \"\(first)\"" + suggestion(first, among: names) + " (the commands: \(names.joined(separator: ", ")))")
        }
        if first == "help", arguments.count > 1 {
            let topic = arguments[1]
            guard names.contains(topic) else {
                throw Failure.input("no help topic \"\(topic)\"" + suggestion(topic, among: names) + " (the commands: \(names.joined(separator: ", ")))")
            }
            guard arguments.count == 2 else {
                throw Failure.input("help takes one command (got \(arguments.dropFirst().joined(separator: " ")))")
            }
        }
    }

    /// `: did you mean summarize?` for the command closest to a mistyped one, else nothing.
    static func suggestion(_ word: String, among names: [String]) -> String {
        Spelling.closest(to: word, among: names).map { ": did you mean \($0)?" } ?? ""
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

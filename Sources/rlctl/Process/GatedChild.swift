import CProcess
import Foundation
import Glibc
import Tracing

/// A program started by rlctl that waits, already forked, until rlctl lets it run: `record` tracks its
/// process id in the LTTng session first, so its first events are not lost and no other process gets in.
final class GatedChild {
    let pid: pid_t
    let command: String
    private var child: rl_gated_child

    /// Forks the child for `arguments` (the first is the program, looked up in PATH when it has no slash), with
    /// `environment` (rlctl's own by default).
    init(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let program = arguments.first, !program.isEmpty else { throw Failure.input("give the command to run after --") }
        guard let path = Self.resolve(program) else {
            throw Failure.input("\(program): no such program (not a file, and not found in PATH)")
        }
        command = program
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child = rl_gated_child()
        let rc = rl_child_spawn_gated(path, argv, envp, &child)
        guard rc == 0 else { throw Failure.input("cannot start \(program): \(String(cString: strerror(rc)))") }
        self.child = child
        pid = child.pid
    }

    /// Lets the program run; fails when it could not be executed, or (status 1, a failed program) when it was
    /// killed while it waited at the gate. On a failure, `beforeReaping` runs as for ``waitForExit(beforeReaping:)``.
    func release(beforeReaping: () -> Void = {}) throws {
        let rc = rl_child_release(&child)
        guard rc == 0 else {
            let ending = waitForExit(beforeReaping: beforeReaping)
            if rc == EPIPE, case .signaled = ending {
                throw Failure(message: "\(command) \(ending) before it started; it did not run", status: .violation)
            }
            throw Failure.input("cannot run \(command): \(String(cString: strerror(rc)))")
        }
    }

    /// Makes the child exit without running the program (after a failure to set up tracing).
    func abandon() {
        rl_child_abandon(&child)
        _ = waitForExit()
    }

    /// How the program ended.
    enum Ending: CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        var succeeded: Bool { if case .exited(0) = self { return true } else { return false } }

        var description: String {
            switch self {
            case .exited(let status): return "exited with status \(status)"
            case .signaled(let signal): return "was killed by signal \(signal) (\(String(cString: strsignal(signal))))"
            }
        }
    }

    /// Waits for the program to end. `beforeReaping` runs once it has ended but is still a zombie: until the
    /// reap its pid cannot be reused, so a signal forwarded meanwhile cannot reach another process, and whoever
    /// watches the pid go sees the state `beforeReaping` set.
    func waitForExit(beforeReaping: () -> Void = {}) -> Ending {
        var ended = siginfo_t()
        while waitid(P_PID, id_t(pid), &ended, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        beforeReaping()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
    }

    private static func resolve(_ program: String) -> String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        return LTTngTools.path(of: program)
    }
}

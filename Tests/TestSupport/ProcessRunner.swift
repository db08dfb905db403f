import CTestSupport
import Foundation
import Glibc
import Testing

/// How a process ended.
public enum Termination: Equatable, Sendable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    public var description: String {
        switch self {
        case .exited(let status): return "exit status \(status)"
        case .signaled(let signal): return "signal \(signal) (\(String(cString: strsignal(signal))))"
        }
    }
}

/// What a process printed and how it ended.
public struct ProcessOutput: Sendable {
    public var termination: Termination
    public var stdout: String
    /// Its standard error, or what its terminal received with `ProcessOptions.stderrOnTerminal`.
    public var stderr: String
    /// The runner killed it at its time limit (and recorded that as a test failure).
    public var timedOut: Bool

    /// The exit status; nil when a signal ended the process, so that a signal never passes for a status.
    public var status: Int32? {
        if case .exited(let status) = termination { return status }
        return nil
    }
}

public struct ProcessOptions: Sendable {
    /// Changes to the inherited environment: a value replaces the variable, nil removes it.
    public var environment: [String: String?] = [:]
    public var workingDirectory: String?
    /// What the process reads on its standard input; nil: /dev/null.
    public var stdin: Data?
    /// From the start; a process still running then is killed and the test fails with the output so far.
    public var timeout: Duration = .seconds(120)
    /// Starts the process in a process group of its own, and kills the whole group at the time limit (the
    /// programs it started too).
    public var ownProcessGroup = false
    /// Standard error on a pseudo-terminal instead of a pipe, for programs that behave differently on a terminal.
    public var stderrOnTerminal = false

    public init(environment: [String: String?] = [:], workingDirectory: String? = nil, stdin: Data? = nil,
                timeout: Duration = .seconds(120), ownProcessGroup: Bool = false, stderrOnTerminal: Bool = false) {
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.stdin = stdin
        self.timeout = timeout
        self.ownProcessGroup = ownProcessGroup
        self.stderrOnTerminal = stderrOnTerminal
    }
}

public struct ProcessStartError: Error, CustomStringConvertible {
    public let description: String
}

/// Runs `executable` to its end, reading its stdout and stderr at the same time (a child that fills one pipe
/// while the test waits on the other never blocks), within `options.timeout`.
public func runProcess(_ executable: String, _ arguments: [String], _ options: ProcessOptions = ProcessOptions(),
                       sourceLocation: SourceLocation = #_sourceLocation) throws -> ProcessOutput {
    try RunningProcess(executable, arguments, options).wait(sourceLocation: sourceLocation)
}

/// A started process whose output is collected while it runs, for tests that act on it meanwhile (signals).
public final class RunningProcess: @unchecked Sendable {
    public let pid: pid_t
    public let executable: String
    private let options: ProcessOptions
    private let deadline: ContinuousClock.Instant
    private let state = Shared(State())
    private var pump: JoinableThread!

    private struct State {
        var stdout = Data()
        var stderr = Data()
        var termination: Termination?
        var finished = false
        var stopReading = false
    }

    public init(_ executable: String, _ arguments: [String], _ options: ProcessOptions = ProcessOptions()) throws {
        self.executable = executable
        self.options = options
        deadline = ContinuousClock.now + options.timeout
        var streams = try ChildStreams(options)
        do {
            pid = try spawn(executable, [executable] + arguments, options, streams)
        } catch {
            streams.closeAll()
            throw error
        }
        streams.closeChildEnds()
        let parentEnds = streams.parentEnds()
        pump = JoinableThread { [self] in self.collect(parentEnds) }
        pump.start()
    }

    /// Whether it has not ended yet (its end is noticed within a few milliseconds).
    public var isRunning: Bool { state.value.termination == nil }

    /// Sends `signal` to the process (to its group with `toGroup`, when it has one of its own).
    public func send(_ signal: Int32, toGroup: Bool = false) {
        guard isRunning else { return }
        kill(toGroup && options.ownProcessGroup ? -pid : pid, signal)
    }

    /// What it has printed so far.
    public var outputSoFar: (stdout: String, stderr: String) {
        let state = state.value
        return (String(decoding: state.stdout, as: UTF8.self), String(decoding: state.stderr, as: UTF8.self))
    }

    /// Waits for its end and the end of its output, until the time limit set at its start.
    public func wait(sourceLocation: SourceLocation = #_sourceLocation) -> ProcessOutput {
        var timedOut = false
        if !waitUntilFinished(deadline) {
            if isRunning {
                timedOut = true
                let output = outputSoFar
                Issue.record("""
                    \(executable) did not end within \(options.timeout): killed. Its output so far:
                    stdout: \(output.stdout.suffix(2000))
                    stderr: \(output.stderr.suffix(2000))
                    """, sourceLocation: sourceLocation)
                kill(options.ownProcessGroup ? -pid : pid, SIGKILL)
            } else {
                Issue.record("\(executable) ended, but a process it started still holds its output open after \(options.timeout)",
                             sourceLocation: sourceLocation)
            }
            if !waitUntilFinished(.now + .seconds(10)) {
                state.mutate { $0.stopReading = true }
            }
        }
        pump.join()
        let state = state.value
        return ProcessOutput(termination: state.termination ?? .signaled(SIGKILL),
                             stdout: String(decoding: state.stdout, as: UTF8.self),
                             stderr: String(decoding: state.stderr, as: UTF8.self), timedOut: timedOut)
    }

    private func waitUntilFinished(_ deadline: ContinuousClock.Instant) -> Bool {
        while !state.value.finished {
            if ContinuousClock.now >= deadline { return false }
            usleep(1_000)
        }
        return true
    }

    /// The pump thread: reads both outputs, feeds stdin, and reaps the process.
    private func collect(_ ends: ChildStreams.ParentEnds) {
        // A child that exits before reading all its input must not end the test process with SIGPIPE: blocked
        // here, the write fails with EPIPE instead.
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        defer {
            var none = timespec()
            while sigtimedwait(&pipeSignal, nil, &none) > 0 {}
        }
        var readers: [(fd: Int32, isStdout: Bool)] = [(ends.stdout, true), (ends.stderr, false)]
        var input = options.stdin.map { [UInt8]($0) } ?? []
        var inputFD = ends.stdin
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var reaped = false
        while true {
            if state.value.stopReading || (readers.isEmpty && inputFD < 0) {
                break
            }
            var fds = readers.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            if inputFD >= 0 { fds.append(pollfd(fd: inputFD, events: Int16(POLLOUT), revents: 0)) }
            // Short, so that the process's end is noticed while a process it started keeps the pipes open.
            _ = poll(&fds, nfds_t(fds.count), reaped ? 50 : 5)
            for (index, reader) in readers.enumerated().reversed() where fds[index].revents != 0 {
                let n = read(reader.fd, &buffer, buffer.count)
                if n > 0 {
                    let chunk = Data(buffer[0..<n])
                    state.mutate { if reader.isStdout { $0.stdout.append(chunk) } else { $0.stderr.append(chunk) } }
                } else if n == 0 || (errno != EINTR && errno != EAGAIN) {
                    // End of file; EIO on a terminal once the process and its children have closed it.
                    close(reader.fd)
                    readers.remove(at: index)
                }
            }
            if inputFD >= 0, let last = fds.last, last.revents != 0 {
                let n = input.isEmpty ? 0 : write(inputFD, input, input.count)
                if n > 0 { input.removeFirst(n) }
                if input.isEmpty || (n < 0 && errno != EINTR && errno != EAGAIN) {
                    close(inputFD)
                    inputFD = -1
                }
            }
            if !reaped { reaped = reap(blocking: false) }
        }
        for reader in readers { close(reader.fd) }
        if inputFD >= 0 { close(inputFD) }
        if !reaped { _ = reap(blocking: true) }
        state.mutate { $0.finished = true }
    }

    private func reap(blocking: Bool) -> Bool {
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, blocking ? 0 : WNOHANG) } while result < 0 && errno == EINTR
        guard result == pid else { return false }
        let signal = status & 0x7f
        let termination: Termination = signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
        state.mutate { $0.termination = termination }
        return true
    }
}

/// The pipes (or terminal) between the test and the child, both ends until the child has them.
private struct ChildStreams {
    struct ParentEnds: Sendable {
        var stdout: Int32
        var stderr: Int32
        /// -1 without input: the child reads /dev/null.
        var stdin: Int32
    }

    /// [parent, child] descriptors for each stream; close-on-exec, so that no other child inherits them.
    var stdout: [Int32] = [-1, -1]
    var stderr: [Int32] = [-1, -1]
    var stdin: [Int32] = [-1, -1]

    init(_ options: ProcessOptions) throws {
        do {
            stdout = try Self.pipe()
            stderr = options.stderrOnTerminal ? try Self.terminal() : try Self.pipe()
            if options.stdin != nil {
                let ends = try Self.pipe()
                stdin = [ends[1], ends[0]]
                _ = fcntl(stdin[0], F_SETFL, fcntl(stdin[0], F_GETFL) | O_NONBLOCK)
            }
        } catch {
            closeAll()
            throw error
        }
    }

    /// [read end, write end].
    private static func pipe() throws -> [Int32] {
        var ends: [Int32] = [-1, -1]
        guard rltest_pipe_cloexec(&ends) == 0 else { throw ProcessStartError(description: "pipe: \(String(cString: strerror(errno)))") }
        return ends
    }

    /// A pseudo-terminal: [its master side, its replica]. By hand, since Swift's Glibc module does not export
    /// posix_openpt/unlockpt/ptsname.
    private static func terminal() throws -> [Int32] {
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0 else { throw ProcessStartError(description: "/dev/ptmx: \(String(cString: strerror(errno)))") }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        // TIOCSPTLCK and TIOCGPTN, whose _IOW/_IOR macros Swift cannot import (same values on x86_64 and arm64).
        guard ioctl(master, 0x4004_5431, &unlock) == 0 && ioctl(master, 0x8004_5430, &number) == 0 else {
            Glibc.close(master)
            throw ProcessStartError(description: "cannot unlock a pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        let replica = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard replica >= 0 else {
            Glibc.close(master)
            throw ProcessStartError(description: "/dev/pts/\(number): \(String(cString: strerror(errno)))")
        }
        return [master, replica]
    }

    mutating func closeChildEnds() { close(side: 1) }

    mutating func closeAll() {
        close(side: 0)
        close(side: 1)
    }

    private mutating func close(side: Int) {
        for fd in [stdout[side], stderr[side], stdin[side]] where fd >= 0 { Glibc.close(fd) }
        stdout[side] = -1
        stderr[side] = -1
        stdin[side] = -1
    }

    func parentEnds() -> ParentEnds { ParentEnds(stdout: stdout[0], stderr: stderr[0], stdin: stdin[0]) }
}

private func spawn(_ executable: String, _ argv: [String], _ options: ProcessOptions, _ streams: ChildStreams) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if streams.stdin[1] >= 0 {
        posix_spawn_file_actions_adddup2(&actions, streams.stdin[1], 0)
    } else {
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    }
    posix_spawn_file_actions_adddup2(&actions, streams.stdout[1], 1)
    posix_spawn_file_actions_adddup2(&actions, streams.stderr[1], 2)
    rltest_spawn_add_close_from_3(&actions)
    if let directory = options.workingDirectory {
        rltest_spawn_add_chdir(&actions, directory)
    }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // The test runner may block or ignore signals; the program starts as from a shell, with none of that.
    var none = sigset_t(), all = sigset_t()
    sigemptyset(&none)
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
    if options.ownProcessGroup {
        flags |= Int32(POSIX_SPAWN_SETPGROUP)
        posix_spawnattr_setpgroup(&attributes, 0)
    }
    posix_spawnattr_setflags(&attributes, Int16(flags))

    var environment = ProcessInfo.processInfo.environment
    for (name, value) in options.environment { environment[name] = value }
    let cArguments = argv.map { strdup($0) } + [nil]
    let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        cArguments.forEach { free($0) }
        cEnvironment.forEach { free($0) }
    }
    var pid = pid_t()
    let rc = posix_spawn(&pid, executable, &actions, &attributes, cArguments, cEnvironment)
    guard rc == 0 else {
        throw ProcessStartError(description: "cannot start \(executable): \(String(cString: strerror(rc)))")
    }
    return pid
}

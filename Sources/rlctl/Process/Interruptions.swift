import Foundation
import Glibc

/// What SIGINT, SIGTERM and SIGHUP mean at each moment of `run`, `record` and `top`; SIGHUP (a closed terminal
/// or connection) means what SIGTERM does, except that it is ignored under nohup(1).
///
/// Installed first thing in `main` (and, for the moments before `main`, by CRecorder's load-time hook), so no
/// signal finds the default action, which would end rlctl with status 130 and nothing: no summary, and a trace
/// left half written. The first signal asks the command to wrap up: a workload not yet started does not start,
/// a running one is cancelled, a summary being computed is finished; the trace is completed and the summary
/// printed either way. A second signal (at least ``TerminationSignals/repeatWindow`` later: one request
/// delivered twice is one) completes the trace, says the summary was skipped and ends rlctl at once.
/// `top` ends its view as `q` does. Commands with nothing to save end as the signal would have ended them.
/// Whenever a signal ends rlctl, what it made goes first (``ExitCleanups``).
final class Interruptions: @unchecked Sendable {
    static let shared = Interruptions()

    enum Phase {
        /// Not run or record (summarize, export, …): a signal ends rlctl as it would have.
        case plain
        /// Start-up, and run/record before the workload or program starts.
        case preparing
        /// The workload runs; the closure cancels it.
        case running(@Sendable () -> Void)
        /// record's program runs: SIGTERM and SIGHUP are passed on to it; SIGINT is its own (the terminal sent it
        /// there too).
        case forwarding(pid_t)
        /// top shows its view; the closure ends it, as `q` does.
        case viewing(@Sendable () -> Void)
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
    func startRunning(cancel: @escaping @Sendable () -> Void) -> Bool { start(.running(cancel)) }

    /// top: the view starts; false when a signal already asked to stop, so none starts.
    func startViewing(stop: @escaping @Sendable () -> Void) -> Bool { start(.viewing(stop)) }

    /// record: the program starts; false when a signal already asked to stop.
    func startForwarding(to pid: pid_t) -> Bool { start(.forwarding(pid)) }

    private func start(_ next: Phase) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard first == nil else { return false }
        phase = next
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
        let name = signalName(signo)
        lock.lock()
        switch phase {
        case .plain:
            lock.unlock()
            TerminationSignals.exit(reraising: signo)
        case .forwarding(let pid):
            if signo == SIGTERM || signo == SIGHUP { kill(pid, signo) }
            if first == nil { first = signo }
            lock.unlock()
        case .viewing(let stop):
            guard first == nil else {
                // A view slow to close (a relay daemon that does not answer) is ended at once by a second signal.
                lock.unlock()
                TerminationSignals.exit(reraising: signo)
            }
            first = signo
            lock.unlock()
            stop()
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

/// One line on stderr about how a signal changed the run.
func note(_ text: String) {
    Interruptions.shared.output { FileHandle.standardError.write(Data("rlctl: \(text)\n".utf8)) }
}

func signalName(_ signo: Int32) -> String {
    switch signo {
    case SIGINT: "SIGINT"
    case SIGTERM: "SIGTERM"
    case SIGHUP: "SIGHUP"
    default: "signal \(signo)"
    }
}

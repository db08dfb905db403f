import Analysis
import CProcess
import Foundation
import Glibc
import KernelTracing
import TraceModel
import Workloads

/// `rlctl record --pid PID`: a program already running, attached from the kernel's side. Its threads' wait calls
/// come from the syscall tracepoints and their times off the CPU from the scheduler's (the kernel view), through
/// rlctl's BPF probe: the program is never stopped or ptraced, and nothing is loaded into it, so it works for
/// programs that make raw system calls (Go) as for any other. Summarized exactly as a `--any` recording.
extension Record {
    /// A process `--pid` names, checked before anything is attached.
    struct AttachedProcess {
        let pid: Int32
        let command: String
        /// Readable when the process has ended (pidfd_open): no pid reuse can fool the wait for its end.
        let exitDescriptor: Int32
    }

    /// Why `pid` cannot be attached to, in one line (nil: it can).
    static func whyNotAttachable(_ pid: Int32) -> String? {
        if pid <= 0 { return "--pid \(pid): a process id is a positive number" }
        if pid == getpid() { return "--pid \(pid) is this rlctl itself: give the pid of the program to record" }
        guard let stat = ProcessStat(pid: pid) else { return "--pid \(pid): no such process (it is not running, or it ended)" }
        if stat.isKernelThread { return "--pid \(pid) is a kernel thread, which has no wait loop of a program to record" }
        if stat.state == "Z" { return "--pid \(pid) has ended (a zombie waiting for its parent)" }
        // A thread's id reads like a process's in /proc: the process is the thread group.
        if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Tgid:") }),
           let group = Int32(line.dropFirst(5).trimmingCharacters(in: .whitespaces)), group != pid {
            return "--pid \(pid) is a thread of process \(group): give the process id, --pid \(group)"
        }
        // The wait calls are matched by x86-64's system call numbers; a 32-bit program's are others.
        if let header = FileManager.default.contents(atPath: "/proc/\(pid)/exe")?.prefix(5), header.count == 5,
           header.starts(with: [0x7F, 0x45, 0x4C, 0x46]), header.last == 1 {
            return "--pid \(pid) is a 32-bit program, whose system calls rlctl cannot read (only 64-bit programs)"
        }
        return nil
    }

    /// Every `--pid`, checked, each with its exit descriptor (the caller closes them); none is left open on a failure.
    func checkAttachable() throws -> [AttachedProcess] {
        var processes: [AttachedProcess] = []
        var complete = false
        defer { if !complete { for process in processes { Glibc.close(process.exitDescriptor) } } }
        for pid in Set(pids).sorted() {
            if let why = Self.whyNotAttachable(pid) { throw Failure.input(why) }
            let command = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .newlines) ?? "pid \(pid)"
            let descriptor = rl_process_exit_descriptor(pid)
            guard descriptor >= 0 else {
                let why = -descriptor == ESRCH ? "no such process (it ended)" : String(cString: strerror(-descriptor))
                throw Failure.input("--pid \(pid): cannot watch for its end: \(why)")
            }
            processes.append(AttachedProcess(pid: pid, command: command, exitDescriptor: descriptor))
        }
        complete = true
        return processes
    }

    /// How an attached recording ended.
    enum AttachEnding: CustomStringConvertible {
        case duration(DurationValue)
        case interrupted(Int32)
        case processesEnded

        var description: String {
            switch self {
            case .duration(let duration): return "after \(duration)"
            case .interrupted(let signo): return "at \(signalName(signo))"
            case .processesEnded: return "when the processes ended"
            }
        }
    }

    func recordAttached() throws {
        Interruptions.shared.prepare("the attach")
        if let reason = KernelView.unavailableReason(recordingWaits: true) {
            throw Failure.input("rlctl record --pid attaches through the kernel view, which is not available here: \(reason)")
        }
        let processes = try checkAttachable()
        defer { for process in processes { Glibc.close(process.exitDescriptor) } }
        let destination = try TraceDestination(requested: output, label: "attach")
        defer { destination.removeUnlessKept() }
        let recording: KernelViewRecording
        do {
            recording = try KernelViewRecording.attach(to: processes.map(\.pid), followChildren: followChildren,
                                                       traceFolder: destination.path)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure.input("cannot attach to \(Self.names(processes)): \(error)")
        }
        let attached = ContinuousClock.now
        note("attached to \(Self.names(processes)); recording " + (duration.map { "for \($0)" } ?? "until Ctrl-C or its end"))
        let ending = try waitForAttachEnd(processes)
        let recorded = ContinuousClock.now - attached
        let outcome = recording.stop()
        note("detached (\(ending)); summarizing")
        let seconds = Double(recorded.components.seconds) + Double(recorded.components.attoseconds) / 1e18
        Interruptions.shared.onSecondSignal { destination.completedNote() }
        if let problem = outcome.problem { note("the recording is incomplete: \(problem)") }
        if let problem = outcome.waitsProblem { note("the recording of the wait calls is incomplete: \(problem)") }
        var summary = try summarizeTrace(at: destination.path, options: analysis.summarizerOptions(drawing: report != nil))
        kernelView.describe(in: &summary, unavailable: nil, outcome: outcome)
        outcome.noteWaitsLost(in: &summary)
        let what = Self.names(processes)
        let nothing = (summary.waits?.loops.isEmpty ?? true) && (summary.waits?.rareWaiters.isEmpty ?? true)
        if nothing {
            try deliverNothingRecorded(summary, trace: destination.path, options: analysis.summarizerOptions(drawing: false))
            throw Failure(message: "\(what) made no wait call that returned while rlctl was attached "
                          + "(\(String(format: "%.1f", seconds)) s, ended \(ending)): a thread blocked in one wait the whole time, "
                          + "or in calls rlctl does not follow (io_uring, futex)", status: .incomplete)
        }
        let tracerName = "kernel (syscall tracepoints), attached \(String(format: "%.1f", seconds)) s"
        let title = "\(what) — \(tracerName)" + (destination.keep ? ", trace \(destination.path)" : "")
        try SummaryDestination(path: self.summary).deliver(try format.render(summary, title: format == .json ? nil : title, brief: briefOption.brief))
        if let report {
            try HTMLReportOptions.write(RunReport(workload: what, tracer: tracerName, repetitions: [summary]),
                                        title: "rlctl report: \(what)", about: ["attached to: \(what) (ended \(ending))", "tracer: \(tracerName)"],
                                        to: report)
        }
        if outcome.problem != nil || outcome.waitsProblem != nil || outcome.waitsLost > 0 {
            throw Failure(message: "the recording of \(what) is incomplete"
                          + (outcome.waitsLost > 0 ? ": \(outcome.waitsLost) wait calls were lost (the kernel recorder's ring buffer was full)" : ""),
                          status: .incomplete)
        }
    }

    /// `node (pid 4242)`, `2 processes: node (pid 4242), go-server (pid 4243)`.
    static func names(_ processes: [AttachedProcess]) -> String {
        let each = processes.map { "\($0.command) (pid \($0.pid))" }
        return each.count == 1 ? each[0] : "\(each.count) processes: " + each.joined(separator: ", ")
    }

    /// Until --duration passed, a signal asked to stop, or every attached process ended.
    private func waitForAttachEnd(_ processes: [AttachedProcess]) throws -> AttachEnding {
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else {
            throw Failure.input("cannot wait for the recording's end: pipe: \(String(cString: strerror(errno)))")
        }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let (stop, stopWriter) = (pipeEnds[0], pipeEnds[1])
        defer {
            // A signal from here on finishes the summary: it must not write into the pipe once it is closed (its
            // descriptor may be a trace file's by then).
            Interruptions.shared.startSummarizing()
            Glibc.close(stop)
            Glibc.close(stopWriter)
        }
        guard Interruptions.shared.startRunning(cancel: { var one: UInt8 = 1; _ = write(stopWriter, &one, 1) }) else {
            return .interrupted(Interruptions.shared.interruption ?? SIGINT)
        }
        let deadline = duration.map { ContinuousClock.now + $0.duration }
        var ended = Set<Int32>()
        while true {
            var descriptors = [pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
            for process in processes where !ended.contains(process.pid) {
                descriptors.append(pollfd(fd: process.exitDescriptor, events: Int16(POLLIN), revents: 0))
            }
            var timeout: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                if left <= .zero { return .duration(duration!) }
                let (seconds, attoseconds) = left.components
                timeout = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0 && errno != EINTR {
                throw Failure.input("cannot wait for the recording's end: poll: \(String(cString: strerror(errno)))")
            }
            if descriptors[0].revents != 0 { return .interrupted(Interruptions.shared.interruption ?? SIGINT) }
            for descriptor in descriptors.dropFirst() where descriptor.revents != 0 {
                if let process = processes.first(where: { $0.exitDescriptor == descriptor.fd }) { ended.insert(process.pid) }
            }
            if ended.count == processes.count { return .processesEnded }
        }
    }
}

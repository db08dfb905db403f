import Analysis
import ArgumentParser
import Foundation
import Glibc
import TraceModel
import TraceReading
import Tracing
import Workloads

/// The tracer `rlctl record` records a program with.
enum RecordTracer: String, ExpressibleByArgument, CaseIterable {
    /// LTTng when it can be used here, otherwise the embedded recorder.
    case auto
    case embedded
    case lttng
}

/// What records `rlctl record --any`'s wait calls.
enum AnyVia: String, ExpressibleByArgument, CaseIterable {
    /// The interposer where it reaches, the kernel (when its view is available) where it does not.
    case auto
    /// The wait interposer alone (LD_PRELOAD): nothing machine-wide, no root.
    case preload
    /// The kernel alone (the syscall tracepoints): nothing loaded into the program.
    case kernel
}

struct Record: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a program whose loops are traced (RunLoopCore, or an adapter) and summarize what they did.",
        discussion: """
        The program must call LoopEventSink.installFromEnvironment() (module Tracing) at start-up, or use an \
        adapter (RunLoopFoundation, RunLoopNIO), which calls it: under rlctl record that installs the tracer rlctl \
        chose, and outside rlctl it installs nothing. rlctl tells the program in its environment (RLCTL_TRACER, \
        RLCTL_TRACE_DIR, and RLCTL_RECORDER_PID so that only rlctl's own child takes them); programs it starts in \
        turn are not traced (a wrapper script should exec the program) unless --follow-children asks for them: \
        then LTTng records every process that installs the tracer, and the embedded recorder's folder takes the \
        first one's recording (any later process says on stderr that the folder already holds a trace).

        --tracer auto (the default) uses LTTng when lttng-tools is installed, this rlctl reads LTTng traces and a \
        session daemon answers or can be started; otherwise the embedded recorder, which needs nothing installed: \
        the program writes the trace itself, into the trace folder. --tracer lttng or embedded forces one. With \
        LTTng, rlctl creates a session that enables runloop:* (with the vtid context) for the program's process \
        only, starting the session daemon if none runs.

        The loops can report their own stalls: with RLCTL_STALL_THRESHOLD=50ms in the program's environment, each \
        iteration busier than that is traced as a loop_stall event with its longest callout, and with \
        RLCTL_WATCHDOG=500ms a loop still busy in one iteration after that long is traced as a loop_hang while it \
        is stuck. The summary lists both ("stalls the loops reported", "hangs the watchdog reported").

        Snapshots on stalls (--snapshot-on-stall 50ms): instead of a whole recording, only the program's newest \
        events are kept, in memory, and each stall its loops report at that threshold (loop_stall, which rlctl \
        asks for with RLCTL_STALL_THRESHOLD) writes a snapshot: a trace folder holding the events before and \
        including the stall. With LTTng, a session in snapshot mode and a trigger on the stall event, so the \
        session daemon writes the snapshot with no rlctl code in between; the sub-buffers (--subbuf-size, \
        --num-subbuf) set how far back it reaches. With the embedded recorder (--tracer embedded, or when LTTng \
        cannot be used here, which rlctl says), the program's recorder is a flight recorder: 16 packets of \
        256 KiB per thread, and the stalled loop's thread hands its newest packet over before a thread of the \
        recorder copies the rings to disk. At most --max-snapshots are taken, at least --snapshot-gap apart. \
        When the program ends, rlctl lists them (in --summary FILE when given) and explains each: the stall, its \
        longest callout and the iterations before it. The snapshots stay in --output (default: a new folder rlctl-snapshots-PID in the \
        current folder); every rlctl command reads them.

        A program killed by SIGKILL or a crash still leaves a readable embedded trace, up to each thread's last \
        written packet; the summary says the recording was cut off. SIGINT, SIGTERM or SIGHUP with their default \
        action complete the trace before the program ends.

        Ctrl-C goes to the program as usual; rlctl waits for it to end, then summarizes. SIGTERM and SIGHUP (a \
        closed terminal; under nohup, rlctl and the program both ignore it) sent to rlctl are passed on to the program, and rlctl summarizes once \
        it ended (status 1 when the signal ended it). A SIGINT, SIGTERM or SIGHUP that reaches rlctl before the \
        program started means it does not start (exit status 1, rlctl says so). After the program ended, a further \
        Ctrl-C (more than 0.3 s after the last) stops the recording, says the summary was skipped and ends rlctl at \
        once (status 130). The program never outlives rlctl: should rlctl be killed (SIGKILL, a crash), the kernel \
        kills the program with SIGKILL (PR_SET_PDEATHSIG).

        Nothing is left behind: however rlctl ends, it destroys its LTTng session, removes a temporary trace folder \
        and stops a session daemon it had to start (unless another program's session is in it then; one it found \
        running is left alone). Sessions are named rlctl-LABEL-PID.START-… after their rlctl; each LTTng-using \
        command (and rlctl doctor) destroys those whose rlctl is gone, killed by SIGKILL, with their temporary \
        folders, and says so. A session daemon that dies during the recording leaves what it wrote: rlctl \
        summarizes it, says the daemon went away and the trace is cut off there, and exits 3 when the program \
        succeeded.

        Any program, with no code change (--any): rlctl preloads its wait interposer (LD_PRELOAD, the program's \
        own preloads kept), which records every epoll_wait, epoll_pwait, epoll_pwait2, poll, ppoll, select and \
        pselect call of every thread: each thread that waits again and again on one epoll descriptor (or with \
        poll/select) is a loop, summarized by its iterations, busy time per iteration, sleep, utilization, wake \
        causes (ready, timed out, interrupted), wake lateness (slept beyond the timeout it asked for), ready \
        events per wake-up and stalls (busy stretches over --stall). Which callout ran is not visible from \
        outside: those figures are "not available". Node.js, Python asyncio, Redis, nginx, Java and Swift \
        programs all wait this way. Programs it starts are recorded too with --follow-children (npm start, \
        shell wrappers; a script that execs its program needs nothing: the same process goes on being \
        recorded). A process that switches users (setuid: nginx's workers become www-data) goes on recording: \
        before the switch it makes a folder of its own in the trace folder, writable by that user alone, which \
        rlctl moves into the trace. Thread names follow renames through libc (prctl, pthread_setname_np). The \
        interposer's own threads in the program are named rlctl-writer (embedded) and rlctl-flusher (LTTng).

        Where LD_PRELOAD cannot reach, the kernel records the waits (--any-via, docs/any-program.md): a statically \
        linked or set-user-ID program, a Go program (its runtime waits with raw system calls), and, when a script \
        or --follow-children may start anything, each thread the interposer does not claim (it claims a thread at \
        its first wait through libc). That takes the kernel view (root; --any-via auto, the default, falls back to \
        it only when it is available) and costs every system call of the machine about 120 ns while it records, so \
        a lone dynamic program is the interposer's alone. --any-via preload never loads it; --any-via kernel \
        records every process from the kernel's side, with nothing loaded into it. The summary says which \
        mechanism recorded each process ("recorded by"). A 32-bit program cannot be recorded either way (rlctl \
        says so before starting it). When nothing was recorded rlctl says why, in one line: a program that waits \
        with raw system calls (Go) and that only the interposer watched shows no loop however it ended; one whose \
        children hold the loops (nginx's master) gets a pointer to --follow-children; --format json still prints \
        the (empty) summary.

        The program's stdout is rlctl's: a script that reads the summary (--format json) gives --summary FILE, and \
        the summary goes to that file alone, never mixed with what the program prints. --summary and --report are \
        checked before the program starts (their folder must exist and be writable; otherwise exit status 2 and \
        nothing runs), and each is written beside its path and renamed over it once whole.

        Exit status: 0 the program exited 0; 1 the program failed or did not start (the summary is still printed \
        when its loops recorded events; otherwise rlctl says that none were); 2 a usage error, a tracer that cannot \
        be used, or an unreadable trace; 3 the program exited 0 but no runloop events reached the trace (it did \
        not install a tracer; with --any: no wait call went through libc). A program that failed or was killed is \
        status 1 also when nothing was recorded, with the reason.

        Examples:
          rlctl record -- .build/release/runloop-demo 2
          rlctl record --tracer embedded --output demo-trace --format markdown -- ./my-app --flag
          rlctl record --format json --summary summary.json -- ./my-server
          rlctl record --any --stall 20ms -- node server.js
          rlctl record --any --follow-children -- npm start
          rlctl record --any -- ./my-go-server
          rlctl record --snapshot-on-stall 50ms --output stalls -- ./my-server
        """
    )

    @Option(help: "Keep the trace in this new folder (default: a temporary folder, removed afterwards).")
    var output: String?

    @Option(help: "auto (LTTng when usable, else embedded), embedded (the program records itself) or lttng.")
    var tracer: RecordTracer = .auto

    @Option(help: "LTTng sub-buffer size per CPU or per user, e.g. 1M (lttng enable-channel --subbuf-size); raise it when events are lost.")
    var subbufSize: String?

    @Option(help: "LTTng sub-buffer count (lttng enable-channel --num-subbuf).")
    var numSubbuf: Int?

    @Option(help: "Output format: text, json or markdown.")
    var format: SummaryFormat = .text

    @OptionGroup var briefOption: BriefOption

    @Option(help: "Also draw the recording as an HTML page (rlctl report) in this file.")
    var report: String?

    @Option(help: "Write the summary (in --format) to this file instead of stdout, apart from the program's own output.")
    var summary: String?

    @Flag(help: "Record any program's event loops through the wait interposer, with no change to the program.")
    var any = false

    @Option(name: .customLong("any-via"), help: "With --any, what records the waits: auto (the interposer where LD_PRELOAD reaches, the kernel where it does not, when the kernel view is available), preload (the interposer alone) or kernel (the kernel alone; root).")
    var anyVia: AnyVia?

    @Flag(help: "Record the programs it starts too (their children, and what those exec), e.g. through a wrapper script that does not exec.")
    var followChildren = false

    @Option(name: .customLong("pid"), help: ArgumentHelp("Attach to this running process instead of starting one (again for several): its threads' wait calls and scheduling, from the kernel (root; nothing is loaded into it, Go included).", valueName: "pid"))
    var pids: [Int32] = []

    @Option(help: "With --pid: stop after this long, e.g. 10s (default: at Ctrl-C, or when the processes end).", transform: durationArgument)
    var duration: DurationValue?

    @Option(help: "Stream to the LTTng relay daemon at this URL (net://HOST[:CONTROL_PORT[:DATA_PORT]]) instead of writing a local trace.")
    var relayd: String?

    @OptionGroup var snapshots: SnapshotOnStallOptions

    @OptionGroup var analysis: AnalysisOptions
    @OptionGroup var quietOption: QuietOption

    @OptionGroup var kernelView: KernelViewOptions

    @Argument(parsing: .captureForPassthrough, help: "-- then the program and its arguments.")
    var command: [String] = []

    mutating func validate() throws {
        // Before `--` these are rlctl's own flags (every command answers them with its manual); after it, they
        // are the program's.
        if let first = command.first, first == "--help" || first == "-h" { throw CleanExit.helpRequest(Self.self) }
        if command.first == "--" { command.removeFirst() }
        if !pids.isEmpty {
            try validateAttach()
            return
        }
        if duration != nil { throw ValidationError("--duration goes with --pid (a program started by rlctl is recorded until it ends)") }
        if let anyVia {
            if !any { throw ValidationError("--any-via goes with --any") }
            if anyVia == .kernel {
                if kernelView.kernel == .off { throw ValidationError("--any-via kernel records through the kernel view: not with --kernel off") }
                if tracer != .auto { throw ValidationError("--any-via kernel records through the kernel, not a tracer in the program: not with --tracer") }
                if relayd != nil { throw ValidationError("--any-via kernel writes a local trace: not with --relayd") }
            }
        }
        guard !command.isEmpty else { throw ValidationError("give the program to record after --, e.g. rlctl record -- ./my-app, or attach to a running one with --pid PID") }
        if let numSubbuf, numSubbuf < 2 { throw ValidationError("--num-subbuf must be at least 2 (got \(numSubbuf))") }
        try snapshots.check()
        if snapshots.snapshotOnStall != nil {
            if any { throw ValidationError("--snapshot-on-stall goes with loops that report their stalls (RunLoopCore, the adapters), not with --any") }
            if report != nil { throw ValidationError("--report draws a whole recording; with --snapshot-on-stall run rlctl report on a snapshot folder") }
            if followChildren { throw ValidationError("--snapshot-on-stall takes snapshots of one program: not with --follow-children") }
        }
        if kernelView.kernel == .on {
            if snapshots.snapshotOnStall != nil { throw ValidationError("--kernel on goes with a whole recording: not with --snapshot-on-stall") }
            if relayd != nil { throw ValidationError("--kernel on writes the kernel view beside a local trace: not with --relayd") }
        }
        if let relayd {
            guard RelayURL.isWellFormed(relayd) else {
                throw ValidationError("--relayd takes a relay daemon's URL, net://HOST[:CONTROL_PORT[:DATA_PORT]] (or net6://, tcp://, tcp6://), got \"\(relayd)\"")
            }
            if tracer == .embedded { throw ValidationError("--relayd streams through LTTng: not with --tracer embedded") }
            if output != nil { throw ValidationError("--relayd streams the trace to the relay daemon instead of writing it here: not with --output") }
            if report != nil { throw ValidationError("--relayd leaves no trace here to draw: run rlctl report on the relay's output folder") }
            if snapshots.snapshotOnStall != nil { throw ValidationError("--snapshot-on-stall writes its snapshots here: not with --relayd") }
        }
        if tracer == .embedded && (subbufSize != nil || numSubbuf != nil) {
            throw ValidationError("--subbuf-size and --num-subbuf set up LTTng's buffers: not with --tracer embedded")
        }
    }

    /// --pid: what goes with attaching to running processes.
    private func validateAttach() throws {
        if !command.isEmpty { throw ValidationError("--pid attaches to a running process: give no program after -- (or drop --pid to start one)") }
        if any || anyVia != nil { throw ValidationError("--pid records any program's waits through the kernel already: not with --any or --any-via") }
        if let duration, duration.nanoseconds <= 0 { throw ValidationError("--duration must be longer than 0 (got \(duration))") }
        if kernelView.kernel == .off { throw ValidationError("--pid records through the kernel view: not with --kernel off") }
        if tracer != .auto { throw ValidationError("--pid records through the kernel, not a tracer in the program: not with --tracer") }
        if relayd != nil { throw ValidationError("--pid writes a local trace: not with --relayd") }
        if snapshots.snapshotOnStall != nil { throw ValidationError("--snapshot-on-stall goes with loops that report their stalls: not with --pid") }
        if subbufSize != nil || numSubbuf != nil { throw ValidationError("--subbuf-size and --num-subbuf set up LTTng's buffers: not with --pid") }
    }

    func run() throws {
        quietOption.apply()
        try requireWritableOutputs(report, self.summary)
        if !pids.isEmpty { return try recordAttached() }
        if let threshold = snapshots.snapshotOnStall { return try recordSnapshots(threshold: threshold) }
        if let relayd { return try recordToRelay(relayd) }
        Interruptions.shared.prepare("the program")
        let kernelUnavailable = try kernelView.requireAvailable()
        let anyRoute = any ? try chooseAnyRoute(kernelUnavailable: kernelUnavailable) : nil
        let useLTTng = anyRoute?.byKernelAlone == true ? false : try chooseLTTng()
        let destination = try TraceDestination(requested: output, label: "record")
        defer { destination.removeUnlessKept() }

        var environment = ProcessInfo.processInfo.environment
        let anyProgram = anyRoute?.byKernelAlone == false
            ? try AnyProgramSetup(program: command[0], lttng: useLTTng, followChildren: followChildren, destination: destination,
                                  claimToken: anyRoute?.claimToken ?? 0)
            : nil
        defer { anyProgram?.removeMarkerFolder() }
        if let anyProgram {
            environment = anyProgram.recording.environment(environment)
        } else if anyRoute != nil {
            // The kernel alone records: nothing in the program's environment asks it to record itself.
            environment[TracerEnvironment.tracer] = nil
            environment[TracerEnvironment.folder] = nil
        } else {
            environment[TracerEnvironment.tracer] = useLTTng ? "lttng" : "embedded"
            environment[TracerEnvironment.folder] = useLTTng ? nil : destination.path
            TracerEnvironment.limit(&environment, followChildren: followChildren)
        }
        let child = try GatedChild(command, environment: environment)
        var session: LTTngSession?
        if useLTTng {
            do {
                // Children have process ids not known yet: following them, the session records every process that
                // loads the provider (a concurrent recording's too), with its pid, so that the summary keeps this
                // recording's processes alone.
                session = try LTTngSession.create(name: LTTngSession.uniqueName("record"), output: destination.path,
                                                  trackedProcess: followChildren ? nil : child.pid,
                                                  channelOptions: LTTngRecording.channelOptions(subbufferSize: subbufSize, subbufferCount: numSubbuf),
                                                  contexts: followChildren ? ["vtid", "vpid"] : ["vtid"])
                try session?.start()
            } catch {
                child.abandon()
                session?.destroy()
                throw Failure.input("cannot set up the LTTng session: \(error)")
            }
        }
        let made = session
        let sessionCleanup = ExitCleanups.shared.add { made?.destroy() }
        defer { ExitCleanups.shared.remove(sessionCleanup) }
        // While the program is held at its gate: the kernel view sees it from its first instruction.
        let kernel: KernelViewRecording?
        do {
            kernel = try KernelViewRecording.start(kernelView, unavailable: kernelUnavailable, traceFolder: destination.path,
                                                   following: child.pid, followChildren: followChildren, waits: anyRoute?.waits,
                                                   claimToken: anyRoute?.claimToken ?? 0)
        } catch {
            child.abandon()
            session?.destroy()
            throw error
        }

        let ending = try runToItsEnd(child) { session?.destroy(); _ = kernel?.stop() }
        let kernelOutcome = kernel?.stop()
        let started = session
        Interruptions.shared.onSecondSignal {
            try? started?.stop()
            return destination.completedNote()
        }
        // A session daemon that died during the recording cannot stop the session, but what its consumer wrote
        // before is a readable trace: summarized, with the cause named, instead of lost.
        var sessionLost: String?
        if let session {
            do { try session.stop() } catch {
                guard !LTTngTools.isSessionDaemonReachable, TraceReaders.containsTrace(at: destination.path) else {
                    throw Failure.input("cannot stop the LTTng session: \(error)")
                }
                sessionLost = "the LTTng session daemon went away during the recording, so the trace ends where it stopped writing"
            }
        }

        let anyOutcome = anyProgram?.finish(ending: ending)
        // No trace at all: LTTng writes none for a program that never registered a runloop tracepoint, and the
        // program writes none that never installed the embedded recorder.
        var summary: TraceSummary?
        var summaryOptions = analysis.summarizerOptions(drawing: report != nil)
        // Following children through LTTng, the session takes every interposed process's events (their pids are not
        // known in advance), a concurrent recording's too: only this recording's processes are summarized.
        if useLTTng, followChildren, let anyOutcome {
            summaryOptions.onlyProcesses = Set(anyOutcome.processes.map(\.pid)).union((kernel?.processesRecorded ?? []).map(\.pid))
        }
        do {
            summary = TraceReaders.containsTrace(at: destination.path)
                ? try summarizeTrace(at: destination.path, options: summaryOptions) : nil
        } catch let failure as Failure where sessionLost != nil {
            throw Failure(message: "\(sessionLost!), and what it wrote is not a readable trace (\(failure.message))", status: failure.status)
        }
        if let sessionLost { note("\(sessionLost); the summary covers what it wrote") }
        // An LTTng trace does not know that a process was killed before it sent its last waits; its markers do.
        if useLTTng, let anyOutcome, !anyOutcome.cutOff.isEmpty { summary?.health.trace.recordingCutOff = true }
        if sessionLost != nil { summary?.health.trace.recordingCutOff = true }
        if summary != nil {
            kernelView.describe(in: &summary!, unavailable: kernelUnavailable, outcome: kernelOutcome)
            if let anyRoute {
                Self.describe(anyRoute, in: &summary!, interposer: anyOutcome, kernel: kernel, outcome: kernelOutcome)
            }
        }
        if let anyRoute, anyRoute.byKernelAlone, (summary?.waits?.loops.isEmpty ?? true) && (summary?.waits?.rareWaiters.isEmpty ?? true) {
            try deliverNothingRecorded(summary, trace: destination.path, options: analysis.summarizerOptions(drawing: false))
            let status: Status = ending.succeeded ? .incomplete : .violation
            throw Failure(message: "\(child.command) \(ending) without a wait call the kernel saw return (epoll_wait, epoll_pwait, "
                          + "epoll_pwait2, poll, ppoll, select, pselect6): it never waited, or it waits in calls rlctl does not "
                          + "follow (io_uring, futex)", status: status)
        }
        guard let summary, summary.health.eventsRead > 0 else {
            if let anyOutcome {
                try deliverNothingRecorded(summary, trace: destination.path, options: analysis.summarizerOptions(drawing: false))
                throw anyOutcome.nothingRecorded(child.command, ending, followedChildren: followChildren)
            }
            // A program that failed before its loops ran (bad arguments, say) is a failed program first.
            guard ending.succeeded else {
                throw Failure(message: "\(child.command) \(ending), and no runloop events were recorded (nothing to summarize)",
                              status: .violation)
            }
            throw nothingTraced(child, ending, reached: "the trace", folder: destination.path)
        }
        if let anyOutcome, (summary.waits?.loops.isEmpty ?? true) && (summary.waits?.rareWaiters.isEmpty ?? true) {
            try deliverNothingRecorded(summary, trace: destination.path, options: analysis.summarizerOptions(drawing: false))
            throw anyOutcome.nothingRecorded(child.command, ending, followedChildren: followChildren)
        }
        let tracerName = anyRoute.map { $0.tracerName(lttng: useLTTng, kernelRecorded: kernel?.processesRecorded.count ?? 0) }
            ?? (useLTTng ? "LTTng" : "embedded recorder")
        let title = "\(command.joined(separator: " ")) — \(tracerName)" + (destination.keep ? ", trace \(destination.path)" : "")
        do {
            try SummaryDestination(path: self.summary).deliver(try format.render(summary, title: format == .json ? nil : title, brief: briefOption.brief))
            if useLTTng, let advice = LTTngRecording.lossAdvice(lost: summary.health.eventsLost, read: summary.health.eventsRead) {
                note(advice)
            }
            if let report {
                // Also for a program that failed: the page shows what its loops did until then.
                try HTMLReportOptions.write(RunReport(workload: command.joined(separator: " "), tracer: tracerName, repetitions: [summary]),
                                            title: "rlctl report: \(command.joined(separator: " "))",
                                            about: ["program: \(command.joined(separator: " ")) (\(ending))", "tracer: \(tracerName)"], to: report)
            }
        } catch let failure as Failure {
            // The program ran and its recording is whole: a file that could not be written (a disk that filled
            // meanwhile) must not take the recording with it.
            guard let kept = destination.keptAfterFailure() else { throw failure }
            throw Failure(message: failure.message + "; the recording is kept in \(kept) (rlctl summarize \(kept))", status: failure.status)
        }
        guard ending.succeeded else { throw Failure(message: "\(child.command) \(ending)", status: .violation) }
        if let sessionLost { throw Failure(message: "the recording is incomplete: \(sessionLost)", status: .incomplete) }
        if anyRoute?.waits != nil, let problem = kernelOutcome?.waitsProblem {
            throw Failure(message: "the recording is incomplete: the kernel's trace of the wait calls could not be written (\(problem))",
                          status: .incomplete)
        }
        if anyRoute?.waits != nil, let lost = kernelOutcome?.waitsLost, lost > 0 {
            throw Failure(message: "the recording is incomplete: the kernel recorder lost \(lost) wait calls (its ring buffer was full)",
                          status: .incomplete)
        }
        if let failure = summary.health.trace.writeFailure {
            throw Failure(message: "the trace in \(destination.path) is incomplete: the program's recorder could not write it (\(failure))",
                          status: .incomplete)
        }
    }

    /// `--format json` writes a summary also when no wait was recorded: a script reading it gets the empty
    /// loops and the trace's health on stdout, and the reason on stderr with the exit status.
    func deliverNothingRecorded(_ summary: TraceSummary?, trace: String, options: TraceSummarizer.Options) throws {
        guard format == .json else { return }
        // rlctl wrote the embedded trace's metadata before the program started: a trace without a stream reads as
        // one without events. Only a folder where no trace began (LTTng's, when no process registered) has none.
        guard let written = summary ?? (try? summarizeTrace(at: trace, options: options)) else { return }
        try SummaryDestination(path: self.summary).deliver(try format.render(written, title: nil))
    }

    /// --snapshot-on-stall: the program runs with RLCTL_STALL_THRESHOLD, an LTTng snapshot session and its
    /// trigger take the snapshots, and each is explained when the program has ended.
    private func recordSnapshots(threshold: DurationValue) throws {
        Interruptions.shared.prepare("the program")
        guard try chooseLTTng(fallingBackTo: "taking the snapshots with the embedded recorder's flight recorder") else {
            return try recordEmbeddedSnapshots(threshold: threshold)
        }
        let destination = try StallSnapshots.destination(output)
        var environment = ProcessInfo.processInfo.environment
        environment[TracerEnvironment.tracer] = "lttng"
        environment[TracerEnvironment.folder] = nil
        environment[TracerEnvironment.stallThreshold] = "\(threshold.nanoseconds)ns"
        TracerEnvironment.limit(&environment, followChildren: false)
        let child = try GatedChild(command, environment: environment)
        let session: LTTngStallSnapshots
        do {
            session = try LTTngStallSnapshots(
                session: LTTngSession.uniqueName("snapshots"), output: destination.path,
                options: .init(thresholdNanoseconds: UInt64(threshold.nanoseconds), maxSnapshots: snapshots.maximum,
                               minimumGap: snapshots.gap, processID: child.pid,
                               channelOptions: LTTngRecording.channelOptions(subbufferSize: subbufSize, subbufferCount: numSubbuf)))
        } catch {
            child.abandon()
            throw Failure.input("cannot set up the LTTng snapshot session: \(error)")
        }
        let sessionCleanup = ExitCleanups.shared.add { _ = session.finish() }
        defer { ExitCleanups.shared.remove(sessionCleanup) }
        let ending = try runToItsEnd(child) { _ = session.finish() }
        // No snapshot: whether that is because no loop stalled, or because no event came at all (a program that
        // does not install the tracer), the ring tells.
        let nothingCame = session.taken.isEmpty && !StallSnapshots.ringHoldsEvents(session)
        let taken = session.finish()
        if !nothingCame, let problem = session.rearmProblem { note("no snapshot after the last one listed: \(problem)") }
        try explainSnapshots(taken, nothingCame: nothingCame, reached: "the snapshot session", tracer: "LTTng",
                             child: child, ending: ending, folder: destination.path, threshold: threshold)
    }

    /// --snapshot-on-stall with the embedded recorder: the program's own recorder is the flight recorder and
    /// writes the snapshots (told by RLCTL_SNAPSHOT_ON_STALL and its limits); rlctl reads what it left.
    private func recordEmbeddedSnapshots(threshold: DurationValue) throws {
        let destination = try StallSnapshots.destination(output)
        var environment = ProcessInfo.processInfo.environment
        environment[TracerEnvironment.tracer] = "embedded"
        environment[TracerEnvironment.folder] = destination.path
        environment[TracerEnvironment.stallThreshold] = "\(threshold.nanoseconds)ns"
        environment[TracerEnvironment.snapshotOnStall] = "\(threshold.nanoseconds)ns"
        environment[TracerEnvironment.maxSnapshots] = "\(snapshots.maximum)"
        environment[TracerEnvironment.snapshotGap] = "\(snapshots.gap.nanosecondsClamped)ns"
        TracerEnvironment.limit(&environment, followChildren: false)
        let child = try GatedChild(command, environment: environment)
        let ending = try runToItsEnd(child) {}
        let root = EmbeddedRecorder.snapshotRoot(destination.path)
        for folder in root.cutOff { note("\(folder) is cut off: the program ended while it was being written") }
        try explainSnapshots(root.snapshots, nothingCame: root.snapshots.isEmpty && root.cutOff.isEmpty && (root.eventsRecorded ?? 0) == 0,
                             reached: "the flight recorder", tracer: "embedded flight recorder",
                             child: child, ending: ending, folder: destination.path, threshold: threshold)
    }

    /// How a run with snapshots ends, whoever took them: when no runloop event came at all, what the program must
    /// do; otherwise every snapshot explained, and the program's failure, if it failed.
    private func explainSnapshots(_ taken: [StallSnapshotFolder], nothingCame: Bool, reached place: String, tracer: String,
                                  child: GatedChild, ending: GatedChild.Ending, folder: String, threshold: DurationValue) throws {
        if nothingCame {
            guard ending.succeeded else {
                throw Failure(message: "\(child.command) \(ending), and no runloop events reached \(place)", status: .violation)
            }
            throw nothingTraced(child, ending, reached: place)
        }
        let text = try StallSnapshots.listing(taken, thresholdNanoseconds: UInt64(threshold.nanoseconds),
                                              maxSnapshots: snapshots.maximum, folder: folder,
                                              program: command.joined(separator: " "), tracer: tracer)
        try SummaryDestination(path: summary).deliver(format == .json ? text.json() : text.text())
        guard ending.succeeded else { throw Failure(message: "\(child.command) \(ending)", status: .violation) }
    }

    /// --relayd: the program's events stream to a relay daemon through a live LTTng session; nothing is written
    /// here, so rlctl says where the trace went and what this host lost instead of summarizing it.
    private func recordToRelay(_ url: String) throws {
        Interruptions.shared.prepare("the program")
        do { try LTTngTools.requireInstalled() } catch { throw Failure.input("rlctl record --relayd needs lttng-tools: \(error)") }
        try LTTngRecording.ensureSessionDaemon()
        if let reason = RelayURL.unreachableReason(url) {
            throw Failure.input("cannot reach the relay daemon at \(url): \(reason) (is lttng-relayd running there, listening on that port?)")
        }
        var environment = ProcessInfo.processInfo.environment
        let anyProgram = any ? try AnyProgramSetup(program: command[0], lttng: true, followChildren: followChildren,
                                                   destination: TraceDestination(requested: nil, label: "relay")) : nil
        defer { anyProgram?.removeMarkerFolder() }
        if let anyProgram {
            environment = anyProgram.recording.environment(environment)
        } else {
            environment[TracerEnvironment.tracer] = "lttng"
            environment[TracerEnvironment.folder] = nil
            TracerEnvironment.limit(&environment, followChildren: followChildren)
        }
        let child = try GatedChild(command, environment: environment)
        let session: LTTngSession
        do {
            // A flush every 500 ms: what `rlctl top` shows is at most that old, plus its own interval; vpid tells
            // the processes of a session apart (--follow-children) there.
            session = try LTTngSession.create(name: LTTngSession.uniqueName("relay"), relay: url,
                                              trackedProcess: followChildren ? nil : child.pid,
                                              channelOptions: LTTngRecording.channelOptions(subbufferSize: subbufSize, subbufferCount: numSubbuf),
                                              liveTimer: .milliseconds(500), contexts: ["vtid", "vpid"])
            try session.start()
        } catch {
            child.abandon()
            throw Failure.input("cannot stream to the relay daemon at \(url): \(error)")
        }
        let sessionCleanup = ExitCleanups.shared.add { session.destroy() }
        defer { ExitCleanups.shared.remove(sessionCleanup) }
        let ending = try runToItsEnd(child) { session.destroy() }
        let end: LTTngSession.StreamingEnd
        do { end = try session.stopStreaming() } catch { throw Failure.input("cannot stop the LTTng session: \(error)") }
        let host = HostName.local
        var lines = ["\(command.joined(separator: " ")) \(ending); its runloop events streamed to the relay daemon at \(url)",
                     "  on the relay: <its output folder>/\(host)/\(session.name)-<date>/ (rlctl summarize <output folder> reads every host; --host \(host) this one)"]
        switch end.discardedEvents {
        case .some(0): lines.append("  lost on this host: none")
        case .some(let lost): lines.append("  lost on this host: \(lost) events discarded with full buffers (raise --subbuf-size or --num-subbuf); the summary counts them too")
        case nil: lines.append("  lost on this host: unknown (the session daemon did not say)")
        }
        try SummaryDestination(path: summary).deliver(lines.joined(separator: "\n"))
        if let problem = end.relayProblem {
            throw Failure(message: "the relay daemon at \(url) did not take the end of the trace (\(problem)): it went away during the recording, and what it holds of session \(session.name) stops early",
                          status: .incomplete)
        }
        guard ending.succeeded else { throw Failure(message: "\(child.command) \(ending)", status: .violation) }
    }

    /// A program that ran but sent no event: what it must do to be traced.
    private func nothingTraced(_ child: GatedChild, _ ending: GatedChild.Ending, reached place: String, folder: String? = nil) -> Failure {
        // A full disk leaves the program's recorder no room even to say that it could not write: the cause then.
        var status = statvfs()
        if let folder, statvfs(folder, &status) == 0, UInt64(status.f_bavail) * UInt64(status.f_frsize) < 256 * 1024 {
            let free = UInt64(status.f_bavail) * UInt64(status.f_frsize) / 1024
            return Failure(message: "no runloop events reached \(place) from \(child.command), which \(ending): the trace folder's file system is full (No space left on device; \(free) KiB free), so its recorder could not write there",
                           status: .incomplete)
        }
        return Failure(message: "no runloop events reached \(place) from \(child.command), which \(ending): the program must call LoopEventSink.installFromEnvironment() (module Tracing), or use an adapter, before its loops run",
                       status: .incomplete)
    }

    /// Releases the program from its gate and waits for its end, signals forwarded to it; `abandon` undoes the
    /// set-up when it never ran or could not be waited for. A signal during the set-up means it never runs.
    private func runToItsEnd(_ child: GatedChild, abandon: () -> Void) throws -> GatedChild.Ending {
        guard Interruptions.shared.startForwarding(to: child.pid) else {
            child.abandon()
            abandon()
            let signo = Interruptions.shared.interruption ?? SIGINT
            throw Failure(message: "\(signalName(signo)) before \(child.command) started: it did not run", status: .violation)
        }
        // A signal after the program's end is rlctl's own (finish the summary), not one to forward.
        let ended = { Interruptions.shared.startSummarizing() }
        do {
            try child.release(beforeReaping: ended)   // when it fails, after `ended`
        } catch {
            abandon()
            throw error
        }
        return child.waitForExit(beforeReaping: ended)
    }

    /// Whether to record with LTTng: as asked, or (auto) when it can be used here, saying why not on stderr.
    private func chooseLTTng(fallingBackTo fallback: String = "recording with the embedded recorder") throws -> Bool {
        switch tracer {
        case .embedded:
            return false
        case .lttng:
            try LTTngRecording.requireUsable("rlctl record --tracer lttng")
            try LTTngRecording.ensureSessionDaemon()
            return true
        case .auto:
            do {
                try LTTngRecording.requireUsable("LTTng")
                try LTTngRecording.ensureSessionDaemon()
                return true
            } catch let failure as Failure {
                FileHandle.standardError.write(Data("rlctl: \(fallback): \(failure.message)\n".utf8))
                return false
            }
        }
    }
}

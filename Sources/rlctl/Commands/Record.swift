import ArgumentParser
import Foundation
import Glibc
import TraceReading
import Tracing

struct Record: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a program that uses RunLoopCore under an LTTng session and summarize what its loops did.",
        discussion: """
        The program must install the LTTng sink at start-up (import Tracing; LoopEventSink.install(LTTngSink())); \
        its loops then emit the runloop:* tracepoints, which cost a couple of nanoseconds while no session is \
        recording. rlctl starts the session daemon if none runs, creates a session that enables runloop:* (with \
        the vtid context) for this program's process only, starts the program, stops the session when the \
        program exits, and prints the summary. Only that process is traced, not programs it starts: a wrapper script \
        should exec the program. Needs lttng-tools (and an rlctl built with libbabeltrace2).

        Ctrl-C goes to the program as usual; rlctl waits for it to end, then summarizes. SIGTERM sent to rlctl is \
        passed on to the program. A SIGINT or SIGTERM that reaches rlctl before the program started means it does \
        not start (exit status 1, rlctl says so). After the program ended, a further Ctrl-C (more than 0.3 s \
        after the last) stops the session, says the summary was skipped and ends rlctl at once (status 130).

        Exit status: 0 the program exited 0; 1 the program failed or did not start (the summary is still printed \
        when its loops recorded events; otherwise rlctl says that none were); 2 a usage error, lttng-tools \
        missing, or an unreadable trace; 3 the program exited 0 but no runloop events reached the trace (it did \
        not install the sink).

        Examples:
          rlctl record -- .build/release/runloop-demo 2
          rlctl record --output demo-trace --format markdown -- ./my-app --flag
        """
    )

    @Option(help: "Keep the LTTng trace in this new folder (default: a temporary folder, removed afterwards).")
    var output: String?

    @Option(help: "LTTng sub-buffer size per CPU or per user, e.g. 1M (lttng enable-channel --subbuf-size); raise it when events are lost.")
    var subbufSize: String?

    @Option(help: "LTTng sub-buffer count (lttng enable-channel --num-subbuf).")
    var numSubbuf: Int?

    @Option(help: "Output format: text, json or markdown.")
    var format: SummaryFormat = .text

    @OptionGroup var analysis: AnalysisOptions

    @Argument(parsing: .captureForPassthrough, help: "-- then the program and its arguments.")
    var command: [String] = []

    mutating func validate() throws {
        // Before `--` these are rlctl's own flags (every command answers them with its manual); after it, they
        // are the program's.
        if let first = command.first, first == "--help" || first == "-h" { throw CleanExit.helpRequest(Self.self) }
        if command.first == "--" { command.removeFirst() }
        guard !command.isEmpty else { throw ValidationError("give the program to record after --, e.g. rlctl record -- ./my-app") }
        if let numSubbuf, numSubbuf < 2 { throw ValidationError("--num-subbuf must be at least 2 (got \(numSubbuf))") }
    }

    func run() throws {
        Interruptions.shared.prepare("the program")
        try LTTngRecording.requireUsable("rlctl record")
        let destination = try TraceDestination(requested: output, label: "record")
        defer { destination.removeUnlessKept() }
        try LTTngRecording.ensureSessionDaemon()

        let child = try GatedChild(command)
        let session: LTTngSession
        do {
            session = try LTTngSession.create(name: LTTngSession.uniqueName("record"), output: destination.path,
                                              trackedProcess: child.pid,
                                              channelOptions: LTTngRecording.channelOptions(subbufferSize: subbufSize, subbufferCount: numSubbuf))
            try session.start()
        } catch {
            child.abandon()
            throw Failure.input("cannot set up the LTTng session: \(error)")
        }

        // A signal during the set-up: the program, still held at its gate, never runs.
        guard Interruptions.shared.startForwarding(to: child.pid) else {
            child.abandon()
            session.destroy()
            let signo = Interruptions.shared.interruption ?? SIGINT
            throw Failure(message: "\(signalName(signo)) before \(child.command) started: it did not run", status: .violation)
        }
        let ending: GatedChild.Ending
        do {
            try child.release()
            ending = child.waitForExit()
        } catch {
            Interruptions.shared.startSummarizing()
            session.destroy()
            throw error
        }
        Interruptions.shared.startSummarizing()
        Interruptions.shared.onSecondSignal {
            try? session.stop()
            return destination.completedNote()
        }
        do { try session.stop() } catch { throw Failure.input("cannot stop the LTTng session: \(error)") }

        // LTTng writes no trace at all for a program that never registered a runloop tracepoint.
        let summary = TraceReaders.containsTrace(at: destination.path)
            ? try summarizeTrace(at: destination.path, options: analysis.summarizerOptions) : nil
        guard let summary, summary.health.eventsRead > 0 else {
            // A program that failed before its loops ran (bad arguments, say) is a failed program first.
            guard ending.succeeded else {
                throw Failure(message: "\(child.command) \(ending), and no runloop events were recorded (nothing to summarize)",
                              status: .violation)
            }
            throw Failure(message: "no runloop events reached the trace from \(child.command), which \(ending): the program must call LoopEventSink.install(LTTngSink()) (module Tracing) before its loops run",
                          status: .incomplete)
        }
        let title = "\(command.joined(separator: " ")) — LTTng" + (destination.keep ? ", trace \(destination.path)" : "")
        let report = try format.render(summary, title: format == .json ? nil : title)
        Interruptions.shared.output { print(report) }
        guard ending.succeeded else { throw Failure(message: "\(child.command) \(ending)", status: .violation) }
    }
}

import Analysis
import ArgumentParser
import Foundation
import Tracing
import Workloads

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a workload on RunLoopCore, trace it, and print what its loop did.",
        discussion: """
        Traces with the embedded recorder by default (no tracer needed). --tracer lttng traces through a real \
        LTTng session instead (runloop:* for this process; rlctl starts the session daemon if none runs; see \
        rlctl doctor). --tracer none runs untraced, to measure tracing's own overhead.

        Ctrl-C, SIGTERM or SIGHUP (a closed terminal; ignored under nohup) at any moment: the run ends early (with --repeat, later repetitions do not start), the \
        trace is completed and the summary of what ran is printed, exit status as usual (0). A signal before the \
        workload started means it does not start: the trace and the summary are empty and rlctl says so. A second \
        Ctrl-C (more than 0.3 s after the first) completes the trace, says the summary was skipped and ends rlctl \
        at once (status 130, 143 for SIGTERM, 129 for SIGHUP). However rlctl ends, the LTTng session, the session \
        daemon it had to start (unless another program's session is in it) and its temporary trace folder go with \
        it; sessions that a rlctl killed by SIGKILL left are removed by the next LTTng-using rlctl (rlctl record).

        Examples:
          rlctl run timers --count 50 --interval 1ms --duration 5s
          rlctl run jank --every 5 --cost 30ms --trace jank.rltrace
          rlctl run timers --tracer lttng --trace timers-lttng
          rlctl run mixed --repeat 5 --output baseline.json
          rlctl run --file workload.yaml
          rlctl run jank --snapshot-on-stall 20ms --trace jank-stalls

        --snapshot-on-stall 20ms records the newest events only, in memory, and each stall the workload's loop \
        reports at that threshold writes a snapshot of them (see rlctl record --help): the embedded recorder as a \
        flight recorder (the default), or an LTTng session in snapshot mode with --tracer lttng. The snapshots are \
        listed and explained at the end, in --trace (default: a new folder rlctl-snapshots-PID in the current \
        folder); --buffer-kib sets how far back they reach.

        --summary FILE writes what would be printed (the summary in --format; with --repeat, every repetition's, \
        as text or markdown) to FILE instead, once the run ends. --output, --report and --summary are checked \
        before the run begins (their folder must exist and be writable; otherwise exit status 2 and nothing \
        runs), and each is written beside its path and renamed over it once whole.
        """
    )

    @Argument(help: "A built-in workload (rlctl list describes them); omit with --file.")
    var workload: BuiltInWorkload?

    @Option(help: "A workload file (JSON or YAML) instead of a built-in workload.")
    var file: String?

    // Optional so that an explicit --duration can override a workload file's own duration (3s otherwise).
    @Option(help: "How long each repetition runs, e.g. 3s (default 3s; with --file, overrides the file's duration).",
            transform: durationArgument)
    var duration: DurationValue?

    @Option(help: "timers: how many timers.") var count: Int?
    @Option(help: "timers, jank, modes: the interval, e.g. 1ms.", transform: durationArgument) var interval: DurationValue?
    @Option(help: "timers: the tolerance, e.g. 200us.", transform: durationArgument) var tolerance: DurationValue?
    @Option(help: "CPU time each handler burns, e.g. 50us.", transform: durationArgument) var handlerCost: DurationValue?
    @Option(help: "sources, ports, io, blocks: producer threads.") var threads: Int?
    @Option(help: "sources, ports, io, blocks: events per second per thread, 0.001 to 10000000 (0 = as fast as possible).") var rate: Double?
    @Option(help: "ports, io: bytes per message.") var bytes: Int?
    @Option(help: "jank: every how many frames a callout burns CPU.") var every: Int?
    @Option(help: "jank: how much CPU that callout burns, e.g. 25ms.", transform: durationArgument) var cost: DurationValue?

    @Option(help: "embedded (default), lttng or none.")
    var tracer: TracerChoice = .embedded

    @Option(help: "Keep the trace in this new (or empty) folder (with --repeat, one subfolder per repetition).")
    var trace: String?

    @Option(help: "How many times to run; every repetition is kept for rlctl compare.")
    var `repeat`: Int = 1

    @Option(help: "Write every repetition's summary (a run report, JSON) to this file.")
    var output: String?

    @Option(help: "Also draw the run as an HTML page (rlctl report) in this file.")
    var report: String?

    @Option(help: "Write the summary (in --format) to this file instead of stdout.")
    var summary: String?

    @Flag(help: "Keep only the newest events (flight recorder; LTTng: an overwrite channel) instead of dropping new ones.")
    var flightRecorder = false

    @Option(help: "Trace buffer in KiB: per thread (embedded), per CPU (lttng, rounded up to 4 power-of-two sub-buffers).")
    var bufferKib = 4096

    @Option(help: "Output format: text, json or markdown.")
    var format: SummaryFormat = .text

    @OptionGroup var briefOption: BriefOption

    @OptionGroup var snapshots: SnapshotOnStallOptions

    @OptionGroup var analysis: AnalysisOptions
    @OptionGroup var quietOption: QuietOption

    @OptionGroup var kernelView: KernelViewOptions

    func validate() throws {
        try snapshots.check()
        if kernelView.kernel == .on {
            if tracer == .none { throw ValidationError("--kernel on goes into a trace: not with --tracer none") }
            if snapshots.snapshotOnStall != nil { throw ValidationError("--kernel on goes with a whole recording: not with --snapshot-on-stall") }
        }
        if snapshots.snapshotOnStall != nil {
            if tracer == .none { throw ValidationError("--snapshot-on-stall needs a tracer to take snapshots: not with --tracer none") }
            if `repeat` != 1 || output != nil || report != nil || flightRecorder {
                throw ValidationError("--snapshot-on-stall writes snapshots, not a whole recording: not with --repeat, --output, --report or --flight-recorder")
            }
        }
        if workload == nil && file == nil { throw ValidationError("name a workload (rlctl list) or give --file") }
        if workload != nil && file != nil { throw ValidationError("give a workload or --file, not both") }
        if let duration, duration.nanoseconds <= 0 { throw ValidationError("--duration must be greater than zero") }
        if let rate, !WorkloadSpec.Producers.isPossibleRate(rate) {
            throw ValidationError("--rate must be \(WorkloadSpec.Producers.possibleRates) (got \(rate))")
        }
        if file != nil {
            // A workload file describes its elements itself: a flag for a built-in workload's element would be
            // silently ignored, so it is refused.
            let elementFlags: [(String, Bool)] = [
                ("--count", count != nil), ("--interval", interval != nil), ("--tolerance", tolerance != nil),
                ("--handler-cost", handlerCost != nil), ("--threads", threads != nil), ("--rate", rate != nil),
                ("--bytes", bytes != nil), ("--every", every != nil), ("--cost", cost != nil),
            ]
            let given = elementFlags.filter(\.1).map(\.0)
            if !given.isEmpty {
                throw ValidationError("\(given.joined(separator: ", ")) \(given.count == 1 ? "sets" : "set") a built-in workload's element; with --file, write it in the file")
            }
        }
        guard (1...1000).contains(`repeat`) else { throw ValidationError("--repeat must be 1 to 1000 (got \(`repeat`))") }
        guard (64...1_048_576).contains(bufferKib) else { throw ValidationError("--buffer-kib must be 64 to 1048576 (got \(bufferKib))") }
        if tracer == .none && trace != nil { throw ValidationError("--trace needs a tracer (not --tracer none)") }
        if tracer == .none && report != nil { throw ValidationError("--report needs a tracer (not --tracer none)") }
        if tracer == .none && summary != nil { throw ValidationError("--summary needs a tracer (not --tracer none): an untraced run has no summary") }
        if summary != nil && `repeat` > 1 && format == .json {
            throw ValidationError("--summary with --repeat takes --format text or markdown; every repetition's JSON is the run report of --output")
        }
    }

    func run() throws {
        quietOption.apply()
        try requireWritableOutputs(output, report, summary)
        let spec = try workloadSpec()
        // Before the first repetition: a trace written into another folder's files would mix with them (LTTng) or
        // leave a folder that is neither trace; with --repeat, the repetitions' subfolders are then new too.
        if let trace { try TraceDestination.requireNewFolder(trace) }
        if let threshold = snapshots.snapshotOnStall { return try runWithSnapshots(spec, threshold: threshold) }
        let kernelUnavailable = tracer == .none ? nil : try kernelView.requireAvailable()
        if tracer == .lttng {
            try LTTngRecording.requireUsable("--tracer lttng")
            try LTTngRecording.ensureSessionDaemon()
        }
        let name = workload?.rawValue ?? file!
        var summaries: [TraceSummary] = []
        // With --summary, every repetition's text goes in the file at the end; on stdout, each as it ends.
        var summaryTexts: [String] = []
        for repetition in 1...`repeat` {
            // A signal between two repetitions (or during a summary) ends the series: the next one does not start.
            if repetition > 1, let signo = Interruptions.shared.interruption {
                note("\(signalName(signo)): " + (repetition == `repeat` ? "repetition \(repetition) did not run" : "repetitions \(repetition) to \(`repeat`) did not run"))
                break
            }
            let title = "\(name) — \(describe(spec))" + (`repeat` > 1 ? " — repetition \(repetition)/\(`repeat`)" : "")
            guard let summary = try runOnce(spec, repetition: repetition, kernelUnavailable: kernelUnavailable) else { continue }
            summaries.append(summary)
            if `repeat` == 1 || format == .text {
                let report = try format.render(summary, title: format == .json ? nil : title, brief: briefOption.brief)
                if self.summary == nil { try SummaryDestination(path: nil).deliver(report) } else { summaryTexts.append(report) }
            }
        }
        if !summaryTexts.isEmpty { try SummaryDestination(path: self.summary).deliver(summaryTexts.joined(separator: "\n")) }
        if let output {
            try write(try RunReport(workload: name, tracer: tracer.rawValue, repetitions: summaries).json(), to: output)
            wrote("the run report \(output) (\(summaries.count) repetition\(summaries.count == 1 ? "" : "s"))")
        }
        if let report, !summaries.isEmpty {
            try HTMLReportOptions.write(RunReport(workload: name, tracer: tracer.rawValue, repetitions: summaries), title: "rlctl report: run \(name)",
                                        about: ["workload: \(name) — \(describe(spec))", "\(summaries.count) repetition(s)"
                                                    + (summaries.count < `repeat` ? " of \(`repeat`)" : "")]
                                            // The page must not pass a run cut short for the whole one asked for.
                                            + (Interruptions.shared.interruption.map {
                                                ["\(signalName($0)) ended the run early: the page covers the part that ran, not all of \(spec.duration)"]
                                            } ?? []),
                                        to: report)
        }
    }

    private func workloadSpec() throws -> WorkloadSpec {
        var spec: WorkloadSpec
        if let file {
            spec = try WorkloadFile.load(file, duration: duration)
        } else {
            var o = BuiltInWorkload.Overrides()
            o.count = count; o.interval = interval; o.tolerance = tolerance; o.handlerCost = handlerCost
            o.threads = threads; o.rate = rate; o.bytes = bytes; o.every = every; o.cost = cost
            spec = workload!.spec(duration: duration ?? .seconds(3), o)
        }
        do { try spec.validate() } catch { throw Failure.input(error.description) }
        return spec
    }

    private func describe(_ spec: WorkloadSpec) -> String {
        "\(spec.elements.count) element\(spec.elements.count == 1 ? "" : "s") for \(spec.duration), tracer \(tracer.rawValue)"
    }

    /// One repetition, traced with the chosen tracer and summarized; nil with --tracer none (the workload's own
    /// counts are printed instead).
    private func runOnce(_ spec: WorkloadSpec, repetition: Int, kernelUnavailable: String?) throws -> TraceSummary? {
        // `--trace` (a subfolder per repetition with --repeat) is kept; otherwise a temporary folder.
        let destination = try TraceDestination(requested: trace.map { `repeat` > 1 ? "\($0)/rep-\(repetition)" : $0 },
                                               label: "run")
        defer { destination.removeUnlessKept() }
        // The workload's loops run in this process: the kernel view follows its threads (its own consumer thread
        // left out) from before the workload starts until after it ended.
        let kernel = tracer == .none ? nil : try KernelViewRecording.start(kernelView, unavailable: kernelUnavailable, traceFolder: destination.path,
                                                                          following: getpid(), followChildren: false)
        let outcome: WorkloadRunner.Outcome?
        do {
            outcome = try InterruptibleRun(runner: WorkloadRunner(spec: spec), tracer: recordingTracer).run(into: destination).workload
        } catch {
            _ = kernel?.stop()
            throw error
        }
        let kernelOutcome = kernel?.stop()
        guard tracer != .none else {
            if let outcome { Interruptions.shared.output { print(outcome.untracedDescription(of: spec)) } }
            return nil
        }
        var summary = try summarizeTrace(at: destination.path, options: analysis.summarizerOptions(drawing: report != nil))
        summary.blockBacklog = outcome?.summarizedBlockBacklog
        kernelView.describe(in: &summary, unavailable: kernelUnavailable, outcome: kernelOutcome)
        return summary
    }

    /// --snapshot-on-stall: the workload under the embedded flight recorder or an LTTng snapshot session, then the
    /// snapshots explained.
    private func runWithSnapshots(_ spec: WorkloadSpec, threshold: DurationValue) throws {
        let destination = try StallSnapshots.destination(trace)
        let recordingTracer: Recording.Tracer
        let tracerName: String, tracedBy: String
        if tracer == .lttng {
            try LTTngRecording.requireUsable("rlctl run --snapshot-on-stall --tracer lttng")
            try LTTngRecording.ensureSessionDaemon()
            recordingTracer = .lttngSnapshots(.init(threshold: threshold.duration, maxSnapshots: snapshots.maximum,
                                                    minimumGap: snapshots.gap, channelOptions: lttngChannel))
            (tracerName, tracedBy) = ("LTTng", "LTTng snapshots on stalls")
        } else {
            recordingTracer = .embeddedSnapshots(.init(thresholdNanoseconds: UInt64(threshold.nanoseconds), maxSnapshots: snapshots.maximum,
                                                       minimumGap: snapshots.gap), embeddedOptions)
            (tracerName, tracedBy) = ("embedded flight recorder", "embedded snapshots on stalls")
        }
        let (workload, recorded) = try InterruptibleRun(runner: WorkloadRunner(spec: spec), tracer: recordingTracer).run(into: destination)
        if let problem = recorded.snapshotProblem { note("no snapshot after the last one listed: \(problem)") }
        guard let workload else { return }
        let name = self.workload?.rawValue ?? file!
        // What the workload managed meanwhile (its throughput), as --tracer none prints it.
        let ran = workload.untracedDescription(of: spec, tracedBy: tracedBy)
        let listing = try StallSnapshots.listing(recorded.snapshots ?? [], thresholdNanoseconds: UInt64(threshold.nanoseconds),
                                                 maxSnapshots: snapshots.maximum, folder: destination.path,
                                                 program: "rlctl run \(name) (\(spec.duration))", tracer: tracerName)
        try SummaryDestination(path: summary).deliver(format == .json ? listing.json() : ran + "\n" + listing.text())
    }

    /// LTTng's channel for --buffer-kib: per CPU, 4 sub-buffers of a power-of-two size that hold it together.
    private var lttngChannel: [String] {
        let subbuffer = max(4, (bufferKib + 3) / 4)
        return LTTngRecording.channelOptions(subbufferSize: "\(1 << (Int.bitWidth - (subbuffer - 1).leadingZeroBitCount))K",
                                             subbufferCount: 4)
    }

    /// The embedded recorder's buffer for --buffer-kib: per thread, packets of 256 KiB.
    private var embeddedOptions: EmbeddedRecorder.Options {
        var options = EmbeddedRecorder.Options()
        options.packetSize = 256 * 1024
        options.packetsPerThread = max(2, bufferKib / 256)
        return options
    }

    /// The tracer with this run's buffer and flight-recorder options.
    private var recordingTracer: Recording.Tracer {
        switch tracer {
        case .none: return .none
        case .embedded:
            var options = embeddedOptions
            options.mode = flightRecorder ? .overwrite : .discard
            return .embedded(options)
        case .lttng:
            var channel = lttngChannel
            if flightRecorder { channel.append("--overwrite") }
            return .lttng(.init(channelOptions: channel))
        }
    }
}

/// The tracer a run uses.
enum TracerChoice: String, ExpressibleByArgument, CaseIterable {
    case embedded, lttng, none
}

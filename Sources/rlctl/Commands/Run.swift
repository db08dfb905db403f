import Analysis
import ArgumentParser
import Foundation
import RunLoopCore
import Tracing
import Workloads

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a workload on RunLoopCore, trace it, and print what its loop did.",
        discussion: """
        Traces with the embedded recorder by default (no tracer needed). --tracer lttng traces through a real \
        LTTng session instead (runloop:* for this process; rlctl starts the session daemon if none runs; see \
        rlctl doctor). --tracer none runs untraced, to measure tracing's own overhead. Ctrl-C ends the run early \
        and still summarizes a complete trace.

        Examples:
          rlctl run timers --count 50 --interval 1ms --duration 5s
          rlctl run jank --every 5 --cost 30ms --trace jank.rltrace
          rlctl run timers --tracer lttng --trace timers-lttng
          rlctl run mixed --repeat 5 --output baseline.json
          rlctl run --file workload.yaml
        """
    )

    @Argument(help: "A built-in workload (rlctl list describes them); omit with --file.")
    var workload: BuiltInWorkload?

    @Option(help: "A workload file (JSON or YAML) instead of a built-in workload.")
    var file: String?

    @Option(help: "How long each repetition runs, e.g. 3s.")
    var duration: DurationValue = .seconds(3)

    @Option(help: "timers: how many timers.") var count: Int?
    @Option(help: "timers, jank, modes: the interval, e.g. 1ms.") var interval: DurationValue?
    @Option(help: "timers: the tolerance, e.g. 200us.") var tolerance: DurationValue?
    @Option(help: "CPU time each handler burns, e.g. 50us.") var handlerCost: DurationValue?
    @Option(help: "sources, ports, io, blocks: producer threads.") var threads: Int?
    @Option(help: "sources, ports, io, blocks: events per second per thread (0 = as fast as possible).") var rate: Double?
    @Option(help: "ports, io: bytes per message.") var bytes: Int?
    @Option(help: "jank: every how many frames a callout burns CPU.") var every: Int?
    @Option(help: "jank: how much CPU that callout burns, e.g. 25ms.") var cost: DurationValue?

    @Option(help: "embedded (default), lttng or none.")
    var tracer: TracerChoice = .embedded

    @Option(help: "Keep the trace in this new folder (with --repeat, one subfolder per repetition).")
    var trace: String?

    @Option(help: "How many times to run; every repetition is kept for rlctl compare.")
    var `repeat`: Int = 1

    @Option(help: "Write every repetition's summary (a run report, JSON) to this file.")
    var output: String?

    @Flag(help: "Keep only the newest events (flight recorder; LTTng: an overwrite channel) instead of dropping new ones.")
    var flightRecorder = false

    @Option(help: "Trace buffer in KiB: per thread (embedded), per CPU (lttng, rounded up to 4 power-of-two sub-buffers).")
    var bufferKib = 4096

    @Option(help: "Output format: text, json or markdown.")
    var format: SummaryFormat = .text

    @OptionGroup var analysis: AnalysisOptions

    func validate() throws {
        if workload == nil && file == nil { throw ValidationError("name a workload (rlctl list) or give --file") }
        if workload != nil && file != nil { throw ValidationError("give a workload or --file, not both") }
        guard duration.nanoseconds > 0 else { throw ValidationError("--duration must be greater than zero") }
        guard (1...1000).contains(`repeat`) else { throw ValidationError("--repeat must be 1 to 1000 (got \(`repeat`))") }
        guard (64...1_048_576).contains(bufferKib) else { throw ValidationError("--buffer-kib must be 64 to 1048576 (got \(bufferKib))") }
        if tracer == .none && trace != nil { throw ValidationError("--trace needs a tracer (not --tracer none)") }
    }

    func run() throws {
        let spec = try workloadSpec()
        if tracer == .lttng {
            try LTTngRecording.requireUsable("--tracer lttng")
            try LTTngRecording.ensureSessionDaemon()
        }
        let name = workload?.rawValue ?? file!
        var summaries: [TraceSummary] = []
        for repetition in 1...`repeat` {
            let title = "\(name) — \(describe(spec))" + (`repeat` > 1 ? " — repetition \(repetition)/\(`repeat`)" : "")
            let result = try runOnce(spec, repetition: repetition)
            if let summaryResult = result {
                summaries.append(summaryResult)
                if `repeat` == 1 || format == .text {
                    print(format.render(summaryResult, title: format == .json ? nil : title))
                }
            }
        }
        if let output {
            let report = RunReport(workload: name, tracer: tracer.rawValue, repetitions: summaries)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try write(String(decoding: try encoder.encode(report), as: UTF8.self), to: output)
        }
    }

    private func workloadSpec() throws -> WorkloadSpec {
        let spec: WorkloadSpec
        if let file {
            spec = try WorkloadFile.load(file)
        } else {
            var o = BuiltInWorkload.Overrides()
            o.count = count; o.interval = interval; o.tolerance = tolerance; o.handlerCost = handlerCost
            o.threads = threads; o.rate = rate; o.bytes = bytes; o.every = every; o.cost = cost
            spec = workload!.spec(duration: duration, o)
        }
        do { try spec.validate() } catch { throw Failure.input(error.description) }
        return spec
    }

    private func describe(_ spec: WorkloadSpec) -> String {
        "\(spec.elements.count) element\(spec.elements.count == 1 ? "" : "s") for \(spec.duration), tracer \(tracer.rawValue)"
    }

    /// One repetition: trace it with the chosen tracer and summarize; nil with --tracer none.
    private func runOnce(_ spec: WorkloadSpec, repetition: Int) throws -> TraceSummary? {
        let runner = WorkloadRunner(spec: spec)
        let interrupted = InterruptFlag()
        try? TerminationSignals.watch { signo in
            if interrupted.set() { runner.cancel() } else { TerminationSignals.exit(reraising: signo) }
        }
        switch tracer {
        case .none:
            let progress = ProgressLine(total: spec.duration.duration, enabled: true) { "running untraced…" }
            let outcome = runner.run()
            progress.finish()
            print("untraced: \(outcome.loopStatistics.iterations) iterations, \(outcome.loopStatistics.sleeps) sleeps, \(outcome.loopStatistics.timersFired) timer callouts, \(outcome.loopStatistics.sourcesHandled) sources, \(outcome.loopStatistics.blocksRun) blocks, \(outcome.produced) produced in \(outcome.elapsed)")
            return nil
        case .embedded:
            // The recorder itself refuses a folder that already holds a trace.
            let destination = try traceDestination(repetition: repetition, mustBeNew: false)
            defer { destination.removeUnlessKept() }
            let folder = destination.path
            var options = EmbeddedRecorder.Options()
            options.packetSize = 256 * 1024
            options.packetsPerThread = max(2, bufferKib / 256)
            options.mode = flightRecorder ? .overwrite : .discard
            let recorder: EmbeddedRecorder
            do {
                recorder = try EmbeddedRecorder(directory: folder, options: options)
                try recorder.start()
            } catch let error as RecorderError {
                throw Failure.input(error.description)
            }
            LoopEventSink.install(recorder)
            let clock = RunClock(total: spec.duration)
            let progress = ProgressLine(total: spec.duration.duration, enabled: true) {
                let p = recorder.progress
                return "running… \(clock.elapsedOfTotal), \(p.recorded) events written, \(p.lost) lost"
            }
            _ = runner.run()
            progress.finish()
            LoopEventSink.install(nil)
            do { try recorder.stop() } catch let error as RecorderError { throw Failure.input(error.description) }
            return try summarizeTrace(at: folder, options: analysis.summarizerOptions)
        case .lttng:
            let destination = try traceDestination(repetition: repetition, mustBeNew: true)
            defer { destination.removeUnlessKept() }
            try traceWithLTTng(into: destination.path) {
                let clock = RunClock(total: spec.duration)
                let progress = ProgressLine(total: spec.duration.duration, enabled: true) {
                    "running… \(clock.elapsedOfTotal), traced by LTTng"
                }
                _ = runner.run()
                progress.finish()
            }
            return try summarizeTrace(at: destination.path, options: analysis.summarizerOptions)
        }
    }

    /// Runs `body` with `LTTngSink` installed, inside an LTTng session that records this process into `folder`.
    private func traceWithLTTng(into folder: String, _ body: () -> Void) throws {
        let subbuffer = max(4, (bufferKib + 3) / 4)
        var channel = LTTngRecording.channelOptions(subbufferSize: "\(1 << (Int.bitWidth - (subbuffer - 1).leadingZeroBitCount))K",
                                                   subbufferCount: 4)
        if flightRecorder { channel.append("--overwrite") }
        let session: LTTngSession
        do {
            session = try LTTngSession.recordThisProcess(name: LTTngSession.uniqueName("run"), output: folder, channelOptions: channel)
        } catch {
            throw Failure.input("cannot set up the LTTng session: \(error)")
        }
        LoopEventSink.install(LTTngSink())
        body()
        LoopEventSink.install(nil)
        do { try session.stop() } catch { throw Failure.input("cannot stop the LTTng session: \(error)") }
    }

    /// `--trace` (a subfolder per repetition with --repeat), kept; otherwise a temporary folder.
    private func traceDestination(repetition: Int, mustBeNew: Bool) throws -> TraceDestination {
        try TraceDestination(requested: trace.map { `repeat` > 1 ? "\($0)/rep-\(repetition)" : $0 }, label: "run",
                             mustBeNew: mustBeNew)
    }
}

/// "1.26s of 1.50s" for the progress line.
struct RunClock {
    let start = Loop.Instant.now
    let total: DurationValue

    var elapsedOfTotal: String {
        "\(formatNanoseconds(Loop.Instant.now.nanoseconds &- start.nanoseconds)) of \(formatNanoseconds(UInt64(total.nanoseconds)))"
    }
}

/// The tracer a run uses.
enum TracerChoice: String, ExpressibleByArgument, CaseIterable {
    case embedded, lttng, none
}

/// Set once by the first SIGINT/SIGTERM; a second one ends the process at once.
final class InterruptFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var isSet = false
    /// Returns true the first time.
    func set() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if isSet { return false }
        isSet = true
        return true
    }
}

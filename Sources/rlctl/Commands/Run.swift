import ArgumentParser
import RunLoopCore
import Tracing

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a built-in workload on RunLoopCore and print what its loop did.",
        discussion: "Timer lateness is the actual callout time minus the scheduled fire date, on CLOCK_MONOTONIC."
    )

    @Argument(help: "The workload to run (see `rlctl list`).")
    var workload: WorkloadKind

    @Option(help: "How long to run, e.g. 2s or 500ms.")
    var duration = DurationArgument(argument: "2s")!

    @Option(help: "How many repeating timers (timers workload).")
    var timers = 10

    @Option(help: "The timers' interval, e.g. 1ms.")
    var interval = DurationArgument(argument: "1ms")!

    @Option(help: "The timers' tolerance, e.g. 0ms or 200us.")
    var tolerance = DurationArgument(argument: "0ms")!

    @Option(help: "CPU time each callout burns, e.g. 50us (to see drift).")
    var handlerCost = DurationArgument(argument: "0us")!

    @Option(help: "Producer threads (blocks workload).")
    var threads = 2

    func validate() throws {
        guard duration.duration > .zero else { throw ValidationError("--duration must be greater than zero (got \(duration))") }
        guard interval.duration > .zero else { throw ValidationError("--interval must be greater than zero (got \(interval))") }
        guard (1...100_000).contains(timers) else { throw ValidationError("--timers must be between 1 and 100000 (got \(timers))") }
        guard (1...64).contains(threads) else { throw ValidationError("--threads must be between 1 and 64 (got \(threads))") }
    }

    func run() throws {
        let recorder = CalloutLatencyRecorder()
        LoopEventSink.install(recorder)
        defer { LoopEventSink.install(nil) }
        let report: String
        switch workload {
        case .timers:
            report = TimersWorkload(timers: timers, interval: interval.duration, tolerance: tolerance.duration,
                                    handlerCost: handlerCost.duration, duration: duration.duration)
                .run(recorder: recorder)
        case .blocks:
            report = BlocksWorkload(threads: threads, duration: duration.duration, handlerCost: handlerCost.duration)
                .run(recorder: recorder)
        }
        print(report)
    }
}

import Analysis
import Glibc
import Tracing
import Workloads

/// A workload run under a recording, with what SIGINT and SIGTERM mean to `rlctl run`: a signal before the
/// workload starts keeps it from starting, one while it runs cancels it (the trace and summary cover what ran),
/// and a second one completes the trace, says the summary was skipped and ends rlctl.
struct InterruptibleRun {
    let runner: WorkloadRunner
    let tracer: Recording.Tracer

    private var traced: Bool {
        if case .none = tracer { return false }
        return true
    }

    /// Runs the workload and stops the recording; the workload's outcome is nil when a signal came first and it
    /// did not start.
    func run(into destination: TraceDestination) throws -> (workload: WorkloadRunner.Outcome?, recording: Recording.Outcome) {
        let recording: Recording
        do { recording = try Recording.start(tracer, into: destination.path) } catch {
            throw Failure.input(error.description)
        }
        if traced {
            Interruptions.shared.onSecondSignal {
                _ = try? recording.stop()
                return destination.completedNote()
            }
        } else {
            Interruptions.shared.onSecondSignal(nil)
        }
        let outcome = runUnlessInterrupted { elapsedOfTotal in
            switch tracer {
            case .embedded:
                let progress = recording.progress
                return "running… \(elapsedOfTotal), \(progress?.recorded ?? 0) events written, \(progress?.lost ?? 0) lost"
            case .lttng: return "running… \(elapsedOfTotal), traced by LTTng"
            case .lttngSnapshots: return "running… \(elapsedOfTotal), LTTng snapshots on stalls"
            case .embeddedSnapshots:
                return "running… \(elapsedOfTotal), snapshots on stalls (embedded flight recorder): \(recording.embeddedRecorder?.snapshotsWritten ?? 0) written"
            case .none: return "running untraced…"
            }
        }
        // Also when the workload did not start: from here a signal is about completing the trace and the summary.
        Interruptions.shared.startSummarizing()
        do { return (outcome, try recording.stop()) } catch { throw Failure.input(error.description) }
    }

    /// Runs the workload unless a signal came first, with the progress line; says on stderr when a signal ended
    /// it early.
    private func runUnlessInterrupted(progress: @escaping (_ elapsedOfTotal: String) -> String) -> WorkloadRunner.Outcome? {
        let runner = self.runner
        guard Interruptions.shared.startRunning(cancel: { runner.cancel() }) else {
            let signo = Interruptions.shared.interruption ?? SIGINT
            note("\(signalName(signo)) before the workload started: it did not run" + (traced ? ", so its trace and summary are empty" : ""))
            return nil
        }
        let line = ProgressLine(total: runner.spec.duration.duration, enabled: true, render: progress)
        let outcome = runner.run()
        // From here a signal no longer cancels anything: it is about the summary.
        Interruptions.shared.startSummarizing()
        line.finish()
        if let signo = Interruptions.shared.interruption {
            note("\(signalName(signo)) ended the run after \(formatNanoseconds(UInt64(outcome.elapsed.nanosecondsClamped))) of \(formatNanoseconds(UInt64(runner.spec.duration.nanoseconds)))" + (traced ? "; the summary covers that part" : ""))
        }
        return outcome
    }
}

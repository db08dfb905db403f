import Analysis
import Tracing
import Workloads

/// `rlctl run --tracer lttng`: the workload traced by a real LTTng session.
enum LTTngRun {
    static func run(runner: WorkloadRunner, spec: WorkloadSpec, folder: String, keep: Bool,
                    options: TraceSummarizer.Options) throws -> TraceSummary {
        throw Failure.input("--tracer lttng is not available in this build yet; use --tracer embedded")
    }
}

import Analysis
import Workloads

extension WorkloadRunner.Outcome {
    /// What a run did, in the workload's own counts, for runs with no trace to summarize: "untraced, ran 3.00s of
    /// 3.00s: …", or `tracedBy` in place of "untraced" (a run that wrote snapshots only).
    func untracedDescription(of spec: WorkloadSpec, tracedBy: String? = nil) -> String {
        let s = loopStatistics
        var parts = ["\(s.iterations) iterations", "\(s.sleeps) sleeps"]
        var hasTimers = false, hasSources = false, hasBlocks = false, hasProducers = false
        for element in spec.elements {
            switch element {
            case .timers, .jank, .modes: hasTimers = true
            case .sources, .ports, .io: hasSources = true; hasProducers = true
            case .blocks: hasBlocks = true; hasProducers = true
            }
        }
        if hasTimers { parts.append("\(s.timersFired) timer callouts") }
        if hasSources { parts.append("\(s.sourcesHandled) source callouts") }
        if hasBlocks { parts.append("\(s.blocksRun) blocks") }
        // What the producer threads managed to hand the loop (signals, messages, writes, blocks).
        if hasProducers { parts.append("\(produced) events sent by producer threads") }
        return "\(tracedBy ?? "untraced"), ran \(formatNanoseconds(UInt64(elapsed.nanosecondsClamped))) of \(formatNanoseconds(UInt64(spec.duration.nanoseconds))): " + parts.joined(separator: ", ")
            + (summarizedBlockBacklog.map { "\n" + $0.text } ?? "")
    }

    /// The block producers' backlog as a summary carries it.
    var summarizedBlockBacklog: TraceSummary.BlockBacklog? {
        blockBacklog.map {
            TraceSummary.BlockBacklog(limitPerProducer: $0.limitPerProducer, mostQueued: $0.mostQueued, heldBack: $0.heldBack,
                                      heldBackNanoseconds: $0.heldBackNanoseconds)
        }
    }
}

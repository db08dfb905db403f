import ArgumentParser

/// The built-in workloads.
enum WorkloadKind: String, CaseIterable, ExpressibleByArgument {
    case timers
    case blocks

    var summary: String {
        switch self {
        case .timers: return "many repeating timers on one loop (--timers, --interval, --tolerance, --handler-cost)"
        case .blocks: return "producer threads performing blocks on one loop (--threads, --handler-cost)"
        }
    }
}

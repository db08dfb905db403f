import Glibc
import Synchronization
import TraceModel

// The process-wide stall threshold: iterations busier than this are reported to the installed tracer as
// `loop_stall` events (StallWatch.swift). One word every loop reads once per iteration, and only while a tracer
// listens.

/// The threshold in ns; 0: stalls are not reported. Starts from RLCTL_STALL_THRESHOLD.
let processStallThreshold = Atomic<UInt64>(StallThresholdEnvironment.initialValue())

extension Loop {
    /// ``stallThreshold`` in nanoseconds, 0 for none: what adapters compare their own timestamps with.
    public static var stallThresholdNanoseconds: UInt64 { processStallThreshold.load(ordering: .relaxed) }

    /// Iterations whose busy time (their time minus their sleeps) passes this are reported to the installed tracer
    /// as `loop_stall` events, with the callout that ran longest in them; nil reports none.
    ///
    /// Starts from the environment variable `RLCTL_STALL_THRESHOLD` (a duration such as `50ms`), so a program can
    /// be given one with no code change. A change applies from each loop's next iteration. While no tracer is
    /// installed it costs nothing (the loop reads it only when a tracer listens); with one, the iteration's
    /// bounds come from the clock reads the loop makes anyway, and each callout's length from the tracer's own
    /// timestamps (the embedded recorder's) or, for a tracer that keeps them to itself (LTTng), two clock reads.
    ///
    /// - Precondition: a threshold longer than zero.
    public static var stallThreshold: Duration? {
        get {
            let nanoseconds = processStallThreshold.load(ordering: .relaxed)
            return nanoseconds == 0 ? nil : .nanoseconds(Int64(clamping: nanoseconds))
        }
        set {
            guard let newValue else {
                processStallThreshold.store(0, ordering: .relaxed)
                return
            }
            requireUsage(newValue > .zero, "Loop.stallThreshold must be longer than zero (got \(newValue)); set nil to report no stalls")
            processStallThreshold.store(UInt64(newValue.nanosecondsClamped), ordering: .relaxed)
        }
    }
}

enum StallThresholdEnvironment {
    static let variable = "RLCTL_STALL_THRESHOLD"

    /// The threshold RLCTL_STALL_THRESHOLD asks for, in ns (0 when unset). A value that is not a duration longer
    /// than zero is refused with one line on stderr, and no stall is reported: a library does not end the
    /// program it is in over an environment variable.
    static func initialValue() -> UInt64 {
        guard let raw = getenv(variable) else { return 0 }
        let text = String(cString: raw)
        return parse(text) { problem in
            let line = "RunLoopCore: \(variable)=\(text) is ignored: \(problem); stalls are not reported\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
        }
    }

    /// `text` as a threshold in ns, or 0 after telling `refuse` why not.
    static func parse(_ text: String, refuse: (String) -> Void) -> UInt64 {
        do {
            let nanoseconds = try DurationText.nanoseconds(text)
            guard nanoseconds > 0 else {
                refuse("a stall threshold must be longer than zero")
                return 0
            }
            return UInt64(nanoseconds)
        } catch {
            refuse(error.description)
            return 0
        }
    }
}

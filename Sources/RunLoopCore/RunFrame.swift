import DequeModule
import Synchronization

/// One active run: its mode, deadline, stop flag, and the scratch buffers its steps reuse so that an iteration
/// allocates nothing. Frames are pooled per loop; a nested run gets its own frame, so an outer pass's snapshot
/// is never overwritten by an inner one.
///
/// Every stored `var` is `@exclusivity(unchecked)`: a frame is touched by its loop's thread only (and under the
/// loop's lock where other threads read what it points to), so the runtime's dynamic exclusivity checks could
/// never fire, yet they cost about 27 checks (some 2,400 instructions under callgrind) on every wake-up. Races
/// stay ThreadSanitizer's to find.
final class RunFrame {
    @exclusivity(unchecked) var state: ModeState!
    @exclusivity(unchecked) var mode: Loop.Mode = .default
    /// Absolute monotonic deadline of the run.
    @exclusivity(unchecked) var deadline: UInt64 = 0
    @exclusivity(unchecked) var returnAfterSourceHandled = false
    /// A zero timeout: exactly one non-blocking iteration.
    @exclusivity(unchecked) var pollsOnly = false
    /// Set by `stop()` from any thread.
    let stopRequested = Atomic<Bool>(false)
    @exclusivity(unchecked) var sink: LoopEventSink?
    @exclusivity(unchecked) var depth: UInt32 = 0
    /// Whether this run serves the main dispatch queue (rule 38), decided when it starts, as CF does.
    @exclusivity(unchecked) var servesMainQueue = false
    /// Step 7 found the main queue's descriptor ready (loop thread only).
    @exclusivity(unchecked) var mainQueueReady = false
    /// Step 7 found descriptors of the mode's sources ready, in `readyTokens` (loop thread only). A flag in this
    /// line rather than the array's count, which lives in the array's storage: one cold line less per wake-up.
    @exclusivity(unchecked) var descriptorsReady = false

    // Scratch, loop thread only.
    @exclusivity(unchecked) var observers: [LoopObserver] = []
    @exclusivity(unchecked) var sources: [(source: LoopSource, signaledAt: UInt64)] = []
    @exclusivity(unchecked) var timers: [LoopTimer] = []
    @exclusivity(unchecked) var blocks = Deque<PendingBlock>()
    @exclusivity(unchecked) var leftoverBlocks: [PendingBlock] = []
    @exclusivity(unchecked) var readyTokens: [(token: UInt64, readiness: Readiness)] = []
    @exclusivity(unchecked) var readySources: [ReadySource] = []
    /// The loop's wait count after this run's last wait: another value at step 9 means a nested run waited
    /// since, so the wait's descriptor report may be stale.
    @exclusivity(unchecked) var waitNumber: UInt64 = 0
    /// The current iteration, while the run watches for stalls (Stalls/StallWatch.swift).
    @exclusivity(unchecked) var stall = StallWatch()
    /// The clock as step 10 last read it (0 before the run's first step 10): where the next iteration begins.
    @exclusivity(unchecked) var lastClockRead: UInt64 = 0
    /// The loop's ``Loop/ignoresOwnWakeUps`` and ``Loop/blockQueuedOnLoopThread`` when this run began, given back
    /// to the run it is nested in when it ends.
    @exclusivity(unchecked) var outerIgnoresOwnWakeUps = true
    @exclusivity(unchecked) var outerBlockQueuedOnLoopThread = false
    /// Counters gathered outside the lock and published before the next sleep, after a poll, or at the run's end.
    @exclusivity(unchecked) var unpublished = CalloutCounts()

    /// Plain integers: publishing them copies no dictionary (unlike ``Loop/Statistics``).
    struct CalloutCounts {
        var timersFired: UInt64 = 0
        var sourcesHandled: UInt64 = 0
        var blocksRun: UInt64 = 0
        var jobsRun: UInt64 = 0
        var observerCallouts: UInt64 = 0
        var mainQueueServicings: UInt64 = 0
    }

    /// What step 9 found ready: a descriptor with its readiness, or a port with queued messages.
    enum ReadySource {
        case descriptor(DescriptorSource, DescriptorSource.Events)
        case port(LoopPort)

        var order: Int {
            switch self {
            case .descriptor(let source, _): return source.order
            case .port(let port): return port.order
            }
        }

        var id: UInt64 {
            switch self {
            case .descriptor(let source, _): return source.id
            case .port(let port): return port.id
            }
        }
    }

    func begin(state: ModeState, deadline: UInt64, pollsOnly: Bool, returnAfterSourceHandled: Bool, depth: UInt32) {
        self.state = state
        self.mode = state.mode
        self.deadline = deadline
        self.pollsOnly = pollsOnly
        self.returnAfterSourceHandled = returnAfterSourceHandled
        self.depth = depth
        self.sink = LoopEventSink.current
        self.stall = StallWatch()
        self.lastClockRead = 0
        stopRequested.store(false, ordering: .relaxed)
    }

    /// Drops references to user objects so a pooled frame keeps nothing alive.
    func end() {
        state = nil
        sink = nil
        stall.culpritLabel = nil
        observers.removeAll(keepingCapacity: true)
        sources.removeAll(keepingCapacity: true)
        timers.removeAll(keepingCapacity: true)
        readySources.removeAll(keepingCapacity: true)
    }

    func context(loop: Loop) -> LoopEventSink.Context {
        LoopEventSink.Context(loopID: loop.id, modeCString: state.cName, depth: depth, iteration: loop.iteration)
    }
}

import DequeModule
import Synchronization

/// One active run: its mode, deadline, stop flag, and the scratch buffers its steps reuse so that an iteration
/// allocates nothing. Frames are pooled per loop; a nested run gets its own frame, so an outer pass's snapshot
/// is never overwritten by an inner one.
final class RunFrame {
    var state: ModeState!
    var mode: Loop.Mode = .default
    /// Absolute monotonic deadline of the run.
    var deadline: UInt64 = 0
    var returnAfterSourceHandled = false
    /// A zero timeout: exactly one non-blocking iteration.
    var pollsOnly = false
    /// Set by `stop()` from any thread.
    let stopRequested = Atomic<Bool>(false)
    var sink: LoopEventSink?
    var depth: UInt32 = 0

    // Scratch, loop thread only.
    var observers: [LoopObserver] = []
    var sources: [(source: LoopSource, signaledAt: UInt64)] = []
    var timers: [LoopTimer] = []
    var blocks = Deque<PendingBlock>()
    var leftoverBlocks: [PendingBlock] = []
    var readyTokens: [(token: UInt64, readiness: Readiness)] = []
    var readySources: [ReadySource] = []
    var messages: [(message: LoopPort.Message, sentAt: UInt64)] = []
    /// Counters gathered outside the lock and published at the next wait or at the run's end.
    var unpublished = CalloutCounts()

    /// Plain integers: publishing them copies no dictionary (unlike ``Loop/Statistics``).
    struct CalloutCounts {
        var iterations: UInt64 = 0
        var timersFired: UInt64 = 0
        var sourcesHandled: UInt64 = 0
        var blocksRun: UInt64 = 0
        var jobsRun: UInt64 = 0
        var observerCallouts: UInt64 = 0
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
        stopRequested.store(false, ordering: .relaxed)
    }

    /// Drops references to user objects so a pooled frame keeps nothing alive.
    func end() {
        state = nil
        sink = nil
        observers.removeAll(keepingCapacity: true)
        sources.removeAll(keepingCapacity: true)
        timers.removeAll(keepingCapacity: true)
        readySources.removeAll(keepingCapacity: true)
        messages.removeAll(keepingCapacity: true)
    }

    func context(loop: Loop) -> LoopEventSink.Context {
        LoopEventSink.Context(loopID: loop.id, modeCString: state.cName, depth: depth, iteration: loop.iteration)
    }
}

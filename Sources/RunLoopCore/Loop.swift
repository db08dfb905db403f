import CRunLoopLinux
import DequeModule
import Glibc
import Synchronization

/// A run loop: the event loop of one thread, with the semantics of Apple's CFRunLoop.
///
/// Every thread has at most one loop, created the first time ``current`` is asked for. Items — custom sources
/// (``LoopSource``), descriptor sources (``DescriptorSource``), message ports (``LoopPort``), timers
/// (``LoopTimer``) and observers (``LoopObserver``) — belong to named modes; a run is in exactly one mode and
/// only that mode's items fire. Adding and removing items, signalling, waking, stopping and performing blocks
/// are safe from any thread; running is for the loop's own thread.
///
/// One run, as observers see it:
/// ```
/// run(mode, timeout, returnAfterSourceHandled):
///   mode empty or the common token    -> finished (no observers)
///   Entry; if stop already requested  -> stopped
///   loop:
///     1 BeforeTimers
///     2 BeforeSources
///     3 blocks for this mode (FIFO)
///     4 signalled custom sources, by (order, first-signal time); blocks again if any ran
///     5 poll = (a source ran) or timeout == 0 or a port of the mode holds a message
///     6 if !poll: BeforeWaiting (a mode that became empty returns finished here instead of sleeping)
///     7 wait: a descriptor or port is ready, a timer is due, main-queue work arrives (main loop, common
///       modes), the timeout passes, wakeUp()/stop()
///     8 if !poll: AfterWaiting
///     9 due timers in fire-date order, the main dispatch queue (main loop, common modes), ready descriptor
///       and port sources by order, then blocks
///    10 handledSource > timedOut > stopped > finished (mode empty), else go round again
///   Exit
/// ```
/// The loop sleeps in one `epoll_wait` per iteration; the next timer and the run timeout share one timerfd,
/// so there is no helper thread and an idle loop uses no CPU.
public final class Loop: @unchecked Sendable {
    /// A process-unique id, as trace events report it (`loop_id`).
    public let id: UInt64
    /// The kernel thread id of the loop's thread.
    public let threadID: Int32
    /// Whether this is the main thread's loop.
    public let isMain: Bool
    /// The name `loop_create` reports: "main", or the thread's name when the loop was made.
    public let name: String
    /// The sink last told this loop's name and thread (loop thread only). Installed sinks are never freed, so an
    /// identity is never reused by a later one.
    private var announcedTo: ObjectIdentifier?

    /// Guards everything marked "guarded by lock" below, and the scheduling state of items bound to this loop.
    let lock = ConditionLock()
    /// The main dispatch queue this loop serves in its common modes: the main loop's (rule 38), else nil.
    let mainQueue: MainQueueLink?

    // Guarded by lock. `@exclusivity(unchecked)`: the lock orders every access, and the runtime's dynamic
    // checks cost more than the rest of a wake-up's bookkeeping (see RunFrame).
    @exclusivity(unchecked) var modes: [Mode: ModeState] = [:]
    @exclusivity(unchecked) var commonModeSet: Set<Mode> = [.default]
    @exclusivity(unchecked) var commonItems: [any ModeItem] = []
    @exclusivity(unchecked) var commonItemIDs: Set<ObjectIdentifier> = []
    @exclusivity(unchecked) var runStack: [RunFrame] = []
    @exclusivity(unchecked) var framePool: [RunFrame] = []
    /// The mode the loop sleeps in, while it sleeps (step 7), so other threads can re-arm its timer.
    /// Unowned: the loop's `modes` keeps every mode state until tear-down, which never happens during a sleep,
    /// and a strong reference cost a retain and a release of the state per sleep.
    @exclusivity(unchecked) unowned(unsafe) var sleepingIn: ModeState?
    /// The run deadline of the sleeping run, combined with timers when re-arming.
    @exclusivity(unchecked) var sleepingDeadline: UInt64 = 0
    @exclusivity(unchecked) var isTornDown = false
    @exclusivity(unchecked) var counters = Statistics()

    // Written by the loop's thread only; atomics (relaxed: a plain load or store) so that a watchdog can read
    // them from its thread (Stalls/LoopWatchdog.swift) at no cost to the loop.
    private let iterationCounter = Atomic<UInt64>(0)
    private let waitCounter = Atomic<UInt64>(0)
    /// Runs in progress (nested ones count), set under the lock as runs begin and end.
    let activeRuns = Atomic<Int>(0)
    /// The current iteration's number, counted across all runs of the loop.
    var iteration: UInt64 { iterationCounter.load(ordering: .relaxed) }
    /// Kernel waits so far, nested runs' included (see ``RunFrame/waitNumber``).
    var waitCount: UInt64 { waitCounter.load(ordering: .relaxed) }

    /// Loop thread only: one writer, so a load and a store, not a read-modify-write.
    @inline(__always)
    func countIteration() { iterationCounter.store(iteration &+ 1, ordering: .relaxed) }
    @inline(__always)
    func countWait() { waitCounter.store(waitCount &+ 1, ordering: .relaxed) }

    // Loop thread only.
    /// Time slept in the waits timed for a tracer or for measurements (all runs, nested ones included): what a
    /// stall watch subtracts.
    @exclusivity(unchecked) var sleptWhileTimed: UInt64 = 0
    /// The measurements this loop feeds (Measurements/), taken at the start of an iteration.
    @exclusivity(unchecked) var measurements: LoopMeasurements?
    /// Measurements given by ``measure(into:)`` (guarded by `lock`), adopted at the next iteration when
    /// `measurementsChanged` says so.
    @exclusivity(unchecked) var pendingMeasurements: LoopMeasurements?
    let measurementsChanged = Atomic<Bool>(false)
    /// While an actor job runs: runs nested in it run no other job (Concurrency/Loop+Executor.swift).
    @exclusivity(unchecked) var isRunningJob = false
    /// A wait returned for the wake-up descriptor, which is read after step 9 (``drainWakeUpAfterTheWait()``).
    @exclusivity(unchecked) var wakeUpLeftByTheWait = false
    /// A block was queued from the loop's own thread since the last block step took the queue (rule 31): it
    /// writes no wake-up, so step 7 polls instead of sleeping while such a block may still be waiting.
    @exclusivity(unchecked) var blockQueuedOnLoopThread = false
    /// Rule 33, as CF's per-run `ignoreWakeUps`: a ``wakeUp()`` from the loop's own thread is ignored while no
    /// run is active and from just after a run's wait until its next iteration starts (steps 8 to 10, Exit).
    @exclusivity(unchecked) var ignoresOwnWakeUps = true

    private let waiting = Atomic<Bool>(false)

    // What a perform from another thread reads, on cache lines of their own: the padding on both sides keeps the
    // fields the loop's thread writes on every iteration (the counters above, `waiting`) off these lines, wherever
    // the allocator puts the object, so a producer's read does not miss because the loop wrote a neighbour
    // (one producer: 16.1 against 15.4 M blocks/s, medians of 9 alternating runs, issue 30).
    private let padBeforeProducerFields = CacheLinePad()
    /// The kernel (epoll, or a test's virtual one) and the clock timers and run timeouts are scheduled on.
    let kernel: Kernel
    let blocks = BlockQueue()
    /// Set by the one thread whose wake-up writes the eventfd; cleared by the loop when it drains it, so
    /// concurrent wake-ups cost one write per sleep.
    let wakePending = Atomic<Bool>(false)
    /// Whether the loop is given measurements: a block queued meanwhile is stamped, for its wake-up delay.
    let isMeasured = Atomic<Bool>(false)
    /// Keeps the eventfd open while a wake-up writes it (the loop's thread may be exiting): the wake-ups writing
    /// it now, plus ``descriptorsClosedBit`` once the loop's thread has closed it. A writer that finds the bit set
    /// writes nothing; the close waits for the writers in flight. An atomic beside `wakePending` rather than a
    /// lock: a wake-up from another thread then touches one line of the loop instead of a lock's as well.
    private let eventfdWriters = Atomic<Int>(0)
    private let padAfterProducerFields = CacheLinePad()
    private static let descriptorsClosedBit = 1 << 62

    init(isMain: Bool, kernel: Kernel = .epoll(EpollKernel())) {
        self.id = Sequence.next()
        self.isMain = isMain
        self.threadID = isMain ? getpid() : crl_gettid()
        self.kernel = kernel
        self.mainQueue = MainQueueLink(isMain: isMain, kernel: kernel)
        self.name = isMain ? "main" : currentThreadName()
        LoopRegistry.shared.register(self)
        announceToCurrentSink()
    }

    /// Tells the installed sink this loop's name and thread once: at creation, and again at the next run when a
    /// sink was installed since (a second recording, `rlctl run --repeat`), before any of the run's events.
    func announceToCurrentSink() {
        guard let sink = LoopEventSink.current, announcedTo != ObjectIdentifier(sink) else { return }
        announcedTo = ObjectIdentifier(sink)
        sink.loopCreated(loopID: id, threadID: threadID, name: name)
    }

    deinit {
        closeDescriptors()
    }

    // ===== loops and threads =====

    /// The calling thread's loop, created on first use.
    public static var current: Loop { currentThreadLoop() }

    /// The main thread's loop. It exists as soon as any loop does.
    public static var main: Loop { mainLoop }

    /// True when called on the loop's own thread.
    public var isOwnedByCurrentThread: Bool {
        // The thread's own slot, not a pthread_t comparison: pthread ids are reused after a thread exits, and a
        // torn-down loop must belong to no thread.
        isMain ? currentThreadIsMain() : isCurrentThreadLoop(self)
    }

    // ===== state =====

    /// The mode of the innermost running run; nil when the loop is not running.
    public var currentMode: Mode? {
        lock.withLock { runStack.last?.mode }
    }

    /// How many runs are active (nested runs count each).
    public var runDepth: Int {
        lock.withLock { runStack.count }
    }

    /// True only while the loop is blocked waiting for something to happen (observers see false).
    public var isWaiting: Bool { waiting.load(ordering: .acquiring) }

    /// The modes that the common token stands for; starts as `[.default]`.
    public var commonModes: Set<Mode> {
        lock.withLock { commonModeSet }
    }

    /// Makes `mode` common: every item added with ``Mode/common`` is added to it, now and later.
    /// A mode cannot be made un-common.
    public func addCommonMode(_ mode: Mode) {
        requireUsage(mode != .common, "Loop.addCommonMode: .common is the token for the common modes, not a mode")
        var scheduled: [(LoopSource, Mode)] = []
        var refused: [DescriptorSource] = []
        lock.withLock {
            guard !isTornDown, commonModeSet.insert(mode).inserted else { return }
            let state = modeState(mode)
            state.isCommon = true
            for item in commonItems {
                if item.insert(into: state, loop: self) {
                    if let source = item as? LoopSource { scheduled.append((source, mode)) }
                } else if let source = item as? DescriptorSource, !source.modes.contains(mode) {
                    refused.append(source)
                }
            }
            timersDidChange()
        }
        for (source, mode) in scheduled { source.schedule?(self, mode) }
        // As in add(_:forMode:): a descriptor the kernel refused (closed meanwhile) invalidates its source.
        for source in refused { source.invalidate() }
    }

    /// Counters since the loop was created.
    public var statistics: Statistics {
        lock.withLock { counters }
    }

    /// The earliest date a timer of `mode` is due to fire, or nil when the mode has no valid timer.
    public func nextTimerFireDate(forMode mode: Mode) -> Instant? {
        lock.withLock {
            guard mode != .common, let first = modes[mode]?.timers.first else { return nil }
            return Instant(nanoseconds: first.fireDateNanoseconds)
        }
    }

    // ===== waking and stopping =====

    /// Makes a sleeping loop go round once. Many wake-ups before the loop wakes collapse into one, and one while
    /// the loop is not running is not carried into its next run.
    ///
    /// From the loop's own thread, as CFRunLoopWakeUp: a wake-up before the wait of the current iteration (an
    /// Entry, BeforeTimers, BeforeSources or BeforeWaiting observer, a block, a custom source) makes that wait
    /// return at once; one after it (an AfterWaiting observer, a timer, a port or descriptor handler, a block
    /// of step 9, an Exit observer) or while no run is active is ignored: the loop is awake and checks
    /// everything a wake-up can announce before it sleeps again.
    public func wakeUp() {
        // One load first: under contention most callers see the flag set and skip the read-modify-write. A
        // pending wake-up is also enough for the loop's own thread: the next wait returns for it, or a step that
        // checks all it can announce comes first.
        guard !wakePending.load(ordering: .relaxed) else { return }
        // In this order: the flag is the loop thread's own.
        if isOwnedByCurrentThread && ignoresOwnWakeUps { return }
        writeWakeUp()
    }

    /// Writes the wake-up descriptor unless a wake-up is pending already.
    private func writeWakeUp() {
        guard wakePending.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        let writers = eventfdWriters.wrappingAdd(1, ordering: .acquiring).newValue
        if writers & Loop.descriptorsClosedBit == 0 { kernel.wakeUp() }
        eventfdWriters.wrappingSubtract(1, ordering: .releasing)
    }

    /// Ends the innermost running run (it returns `Loop.RunResult.stopped`). Safe from any thread.
    /// A stop while the loop is not running is ignored.
    public func stop() {
        let stopped: Bool = lock.withLock {
            guard let frame = runStack.last else { return false }
            frame.stopRequested.store(true, ordering: .releasing)
            return true
        }
        if stopped { wakeUp() }
    }

    // ===== blocks =====

    /// Queues a block to run on the loop's thread in the given modes (the common token allowed, resolved when it
    /// runs). Blocks run in FIFO order; a pending block keeps its mode alive. A block never waits for an
    /// unrelated event: from another thread this wakes the loop; from the loop's own thread it writes no wake-up
    /// (as CFRunLoopPerformBlock) and costs no extra iteration: the block runs at the next step that runs blocks,
    /// and when the loop would sleep before that step (a block performed by a block, or by a BeforeWaiting
    /// observer), the sleep is a poll instead (docs/semantics.md, rule 31).
    public func perform(inModes modes: [Mode], _ block: @escaping @Sendable () -> Void) {
        requireUsage(!modes.isEmpty, "Loop.perform(inModes:): name at least one mode (or .common)")
        enqueue(BlockModes(modes), block)
    }

    /// Queues a block for the common modes; see ``perform(inModes:_:)``.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        // Its own entry point so the commonest call builds no array (one allocation per block less).
        enqueue(.common, block)
    }

    /// Queues a block for one mode (or the common token); see ``perform(inModes:_:)``.
    public func perform(inMode mode: Mode, _ block: @escaping @Sendable () -> Void) {
        enqueue(mode == .common ? .common : .one(mode), block)
    }

    /// Runs `block` after `delay` in the given modes, on top of a one-shot timer.
    /// - Returns: the timer; invalidate it to cancel the perform.
    @discardableResult
    public func perform(after delay: Duration, inModes modes: [Mode] = [.default], label: String? = nil,
                        _ block: @escaping @Sendable () -> Void) -> LoopTimer {
        requireUsage(delay >= .zero, "Loop.perform(after:): the delay must not be negative (got \(delay))")
        // On the loop's clock, which is not CLOCK_MONOTONIC on a virtual kernel.
        let timer = LoopTimer(fireAt: Instant(nanoseconds: now()).advanced(by: delay), label: label) { _ in block() }
        for mode in modes { add(timer, forMode: mode) }
        return timer
    }

    func enqueue(_ modes: BlockModes, _ body: @escaping @Sendable () -> Void) {
        enqueue(modes, .block(body))
    }

    /// Queues a block or an actor's job (Concurrency/Loop+Executor.swift) and wakes the loop.
    func enqueue(_ modes: BlockModes, _ work: PendingBlock.Work) {
        // Ids and enqueue times cost a clock read, so only when a tracer is listening (ids and times) or the loop is
        // measured (times).
        let traced = LoopEventSink.current != nil
        let block = traced || isMeasured.load(ordering: .relaxed)
            ? PendingBlock(modes: modes, work: work, id: traced ? Sequence.next() : 0, enqueuedAt: monotonicNanoseconds())
            : PendingBlock(modes: modes, work: work)
        // wakeUp() is coalesced, so a burst of performs costs one eventfd write; a pending wake-up costs one load.
        if blocks.append(block), !wakePending.load(ordering: .relaxed) { wakeUpForBlock() }
    }

    /// The wake-up for a queued block, when none is pending: from another thread, the eventfd; from the loop's
    /// own thread, a flag step 7 reads (no system call, and no extra iteration for a block that runs before the
    /// wait anyway). Not inlined: the cross-thread path writes the eventfd next, the own-thread check is noise.
    @inline(never)
    private func wakeUpForBlock() {
        if isOwnedByCurrentThread {
            blockQueuedOnLoopThread = true
        } else {
            writeWakeUp()
        }
    }

    /// Called by a port scheduled here when a message arrives: wakes the loop only if it sleeps in a mode that
    /// holds the port (rule 21a). A run about to sleep checks the ports under the same lock, so it cannot miss it.
    func portDidReceive(_ port: LoopPort) {
        let wake = lock.withLock { sleepingIn?.ports.contains { $0 === port } ?? false }
        if wake { wakeUp() }
    }

    // ===== thread exit =====

    /// Tears the loop down on its exiting thread: cancels scheduled sources, drops pending blocks, detaches
    /// timers and every other item, and closes the kernel descriptors.
    func threadDidExit() {
        var cancels: [(LoopSource, Mode)] = []
        var dropped = blocks.close(handingJobsTo: makeOrphanedJobs())
        // Everything the tables held is released after the lock is dropped: the last reference to an item (or
        // to what its handlers capture) may go with them, and a deinit may use this loop (rule 37).
        var released: [any ModeItem] = []
        var releasedModes: [Mode: ModeState] = [:]
        lock.withLock {
            isTornDown = true
            for state in modes.values {
                for source in state.sources { cancels.append((source, state.mode)) }
                released.append(contentsOf: state.allItems)
            }
            released.append(contentsOf: commonItems)
            for item in released { item.removeFromAllModes(loop: self) }
            commonItems.removeAll()
            commonItemIDs.removeAll()
            for state in modes.values { kernel.backend.close(state.waitSet) }
            swap(&releasedModes, &modes)
            framePool.removeAll()
        }
        closeDescriptors()
        for (source, mode) in cancels { source.cancel?(self, mode) }
        cancels.removeAll()
        released.removeAll()
        releasedModes.removeAll()
        // Blocks are released here, on the loop's thread, after the lock is dropped (their captures may run deinit code).
        dropped.removeAll()
    }

    private func closeDescriptors() {
        let before = eventfdWriters.bitwiseOr(Loop.descriptorsClosedBit, ordering: .acquiringAndReleasing).oldValue
        if before & Loop.descriptorsClosedBit == 0 {
            // A write in flight takes microseconds.
            while eventfdWriters.load(ordering: .acquiring) != Loop.descriptorsClosedBit { sched_yield() }
            kernel.backend.close()
        }
        if !modes.isEmpty {
            for state in modes.values { kernel.backend.close(state.waitSet) }
            modes.removeAll()
        }
    }

    /// The loop's clock: CLOCK_MONOTONIC, or a virtual kernel's.
    @inline(__always)
    func now() -> UInt64 {
        kernel.now()
    }

    func setWaiting(_ value: Bool) {
        waiting.store(value, ordering: .releasing)
    }
}

extension Loop {
    /// Counters kept by the loop since it was created.
    public struct Statistics: Sendable, Equatable {
        /// Runs that got past the empty-mode check (each had Entry and Exit).
        public var runs: UInt64 = 0
        /// Iterations of all runs.
        public var iterations: UInt64 = 0
        /// Times the loop blocked waiting.
        public var sleeps: UInt64 = 0
        /// Wake-ups from a sleep, by what ended it.
        public var wakeUps: [WakeReason: UInt64] {
            var byReason: [WakeReason: UInt64] = [:]
            for reason in WakeReason.allCases where wakeUpCounts[Int(reason.rawValue)] != 0 {
                byReason[reason] = wakeUpCounts[Int(reason.rawValue)]
            }
            return byReason
        }
        /// Indexed by the reason's raw value: counting a wake-up hashes nothing (it happens on every one).
        var wakeUpCounts = WakeUpCounts()
        /// Timer callouts.
        public var timersFired: UInt64 = 0
        /// Custom source performs, descriptor callouts and port messages handled.
        public var sourcesHandled: UInt64 = 0
        /// Blocks run.
        public var blocksRun: UInt64 = 0
        /// Actor jobs run (the loop as an executor).
        public var jobsRun: UInt64 = 0
        /// Observer callouts.
        public var observerCallouts: UInt64 = 0
        /// Servicings of the main dispatch queue (main loop only; each runs every block queued before it).
        public var mainQueueServicings: UInt64 = 0

        /// Wake-ups counted for one reason.
        public func wakeUps(_ reason: WakeReason) -> UInt64 { wakeUpCounts[Int(reason.rawValue)] }

        /// Counts one wake-up for `reason`.
        mutating func countWakeUp(_ reason: WakeReason) { wakeUpCounts[Int(reason.rawValue)] += 1 }
    }

    /// One counter per wake reason, stored inline: counting a wake-up touches no array storage (every wake-up
    /// counts one, and a separate allocation there is a cache miss right after the sleep).
    struct WakeUpCounts: Sendable, Equatable {
        private var counts = InlineArray<8, UInt64>(repeating: 0)

        init() {
            assert(WakeReason.allCases.count <= counts.count, "WakeUpCounts: one counter per wake reason")
        }

        subscript(index: Int) -> UInt64 {
            get { counts[index] }
            set { counts[index] = newValue }
        }

        static func == (lhs: WakeUpCounts, rhs: WakeUpCounts) -> Bool {
            (0..<lhs.counts.count).allSatisfy { lhs.counts[$0] == rhs.counts[$0] }
        }
    }
}

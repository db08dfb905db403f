import Glibc
import Synchronization

/// One mode's items in one loop. Guarded by the loop's lock, except where marked.
///
/// The stored `var`s are `@exclusivity(unchecked)`, like RunFrame's: the loop's lock already orders every
/// access, and the runtime's checks were a large share of a wake-up's instructions.
final class ModeState {
    let mode: Loop.Mode
    /// The name as a C string for tracers; lives as long as the mode.
    let cName: UnsafeMutablePointer<CChar>
    /// Whether the mode is one of the loop's common modes (a mode never stops being common). Kept here so that
    /// the steps that ask on every iteration read a flag instead of hashing the mode's name.
    @exclusivity(unchecked) var isCommon = false
    /// Custom sources in the order they were added (performs are ordered at collection time).
    @exclusivity(unchecked) var sources: [LoopSource] = []
    /// Descriptor sources by their epoll token (their id).
    @exclusivity(unchecked) var descriptors: [UInt64: DescriptorSource] = [:]
    /// Which source's registration a descriptor number is in this mode's wait set: a source whose descriptor
    /// was closed, its number reused by another source, must not unwatch that one (rule 20a).
    @exclusivity(unchecked) var watchers: [Int32: UInt64] = [:]
    /// Ports in the order they were added.
    @exclusivity(unchecked) var ports: [LoopPort] = [] {
        didSet { setSummary(ports.isEmpty ? 0 : ModeState.portsBit, in: ModeState.portsBit) }
    }
    /// Timers sorted by (fire date, sequence): the next to fire first.
    @exclusivity(unchecked) var timers: [LoopTimer] = [] {
        didSet { setSummary(timers.isEmpty ? 0 : ModeState.timersBit, in: ModeState.timersBit) }
    }
    /// Observers sorted by (order, sequence).
    @exclusivity(unchecked) var observers: [LoopObserver] = []
    /// What the steps ask of the mode on every iteration without taking the lock, in one word: the union of the
    /// observers' activities, and whether the mode holds timers and ports. An activity nobody watches costs one
    /// load, and so do the timers and ports of a loop woken for a block: after a sleep every cache line is
    /// cold, and separate flags (or the lock and the arrays) were each a miss in the wake-up's latency.
    /// Written under the loop's lock, read without it.
    private let summary = Atomic<UInt>(0)
    private static let timersBit: UInt = 1 << 62
    private static let portsBit: UInt = 1 << 63
    private static let activityBits = ~(timersBit | portsBit)

    /// Whether an observer of the mode watches `activity`; without the lock.
    func isObserved(_ activity: Loop.Activity) -> Bool {
        summary.load(ordering: .acquiring) & activity.rawValue & ModeState.activityBits != 0
    }

    /// Whether the mode holds a timer; without the lock.
    var holdsTimers: Bool { summary.load(ordering: .acquiring) & ModeState.timersBit != 0 }

    /// Whether the mode holds a port; without the lock.
    var holdsPorts: Bool { summary.load(ordering: .acquiring) & ModeState.portsBit != 0 }
    /// This mode's epoll set; created with the mode.
    let waitSet: WaitSet

    init(mode: Loop.Mode, waitSet: WaitSet) {
        self.mode = mode
        self.waitSet = waitSet
        self.cName = strdup(mode.name)!
    }

    deinit {
        free(cName)
    }

    /// Holds no source, port or timer (blocks are checked by the loop; observers do not count).
    var hasNoItems: Bool {
        sources.isEmpty && descriptors.isEmpty && ports.isEmpty && timers.isEmpty
    }

    // ===== timers, kept sorted =====

    /// Where a timer with this key sits (or would sit) in `timers`.
    func timerIndex(fireDate: UInt64, sequence: UInt64) -> Int {
        var low = 0
        var high = timers.count
        while low < high {
            let mid = (low + high) / 2
            let t = timers[mid]
            if t.fireDateNanoseconds < fireDate || (t.fireDateNanoseconds == fireDate && t.sequence < sequence) {
                low = mid + 1
            } else {
                high = mid
            }
        }
        return low
    }

    func insertTimer(_ timer: LoopTimer) {
        timers.insert(timer, at: timerIndex(fireDate: timer.fireDateNanoseconds, sequence: timer.sequence))
    }

    /// Removes a timer; its key must be the one it was inserted with.
    func removeTimer(_ timer: LoopTimer) {
        let index = timerIndex(fireDate: timer.fireDateNanoseconds, sequence: timer.sequence)
        precondition(index < timers.count && timers[index] === timer,
                     "BUG IN RunLoopCore (please report): timer \(timer.id) not at its sorted place in mode \(mode)")
        timers.remove(at: index)
    }

    // ===== observers, kept sorted =====

    func insertObserver(_ observer: LoopObserver) {
        var index = observers.count
        while index > 0 {
            let previous = observers[index - 1]
            if previous.order < observer.order || (previous.order == observer.order && previous.sequence < observer.sequence) { break }
            index -= 1
        }
        observers.insert(observer, at: index)
        setSummary(summary.load(ordering: .relaxed) | observer.activities.rawValue, in: ModeState.activityBits)
    }

    func removeObserver(_ observer: LoopObserver) {
        observers.removeAll { $0 === observer }
        setSummary(observers.reduce(0) { $0 | $1.activities.rawValue }, in: ModeState.activityBits)
    }

    /// Replaces the summary's bits under `mask` with those of `bits` (lock held).
    private func setSummary(_ bits: UInt, in mask: UInt) {
        let word = summary.load(ordering: .relaxed)
        summary.store((word & ~mask) | (bits & mask), ordering: .releasing)
    }
}

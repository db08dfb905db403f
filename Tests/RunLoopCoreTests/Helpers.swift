import Foundation
import Glibc
import Synchronization
@_spi(VirtualTime) import RunLoopCore
import Testing
// Every file of these tests uses the shared helpers (threads, locked values).
@_exported import TestSupport

/// A thread-safe event log that tests compare against exact traces like "Entry BT BS BW AW T1 Exit".
final class TraceLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [String] = []

    func append(_ entry: String) {
        lock.lock()
        entries.append(entry)
        lock.unlock()
    }

    var events: [String] {
        lock.lock()
        defer { lock.unlock() }
        return entries
    }

    var text: String { events.joined(separator: " ") }

    func clear() {
        lock.lock()
        entries.removeAll()
        lock.unlock()
    }
}

extension Loop.Activity {
    /// The short names the rulebook's traces use.
    var short: String {
        switch self {
        case .entry: return "Entry"
        case .beforeTimers: return "BT"
        case .beforeSources: return "BS"
        case .beforeWaiting: return "BW"
        case .afterWaiting: return "AW"
        case .exit: return "Exit"
        default: return "?"
        }
    }
}

/// An observer that logs every activity with its short name.
func traceObserver(_ log: TraceLog, order: Int = 0) -> LoopObserver {
    LoopObserver(activities: .all, order: order) { _, activity in log.append(activity.short) }
}

/// Runs `body` on a new thread whose loop is on a new virtual kernel, and returns its result once the thread
/// has exited. With `autoAdvance` a run never really sleeps: the clock jumps to the loop's next deadline.
func onVirtualLoop<T>(autoAdvance: Bool = true, _ body: @escaping @Sendable (VirtualKernel, Loop) -> T) -> T {
    onThread {
        let kernel = VirtualKernel(autoAdvance: autoAdvance)
        return body(kernel, Loop.makeCurrent(on: kernel))
    }
}

extension VirtualKernel {
    /// The virtual time elapsed since `start`.
    func elapsed(since start: Loop.Instant) -> Duration {
        start.duration(to: now)
    }

    /// The sleeps since `start`, each as (from, until) offsets from `start`.
    func sleepOffsets(since start: Loop.Instant) -> [ClosedRange<Duration>] {
        sleeps.filter { $0.from >= start }.map { start.duration(to: $0.from)...start.duration(to: $0.until) }
    }
}

/// A loop running on its own thread until `stop()`, for cross-thread tests; on a virtual kernel when one is
/// given. It runs `modes` in turn, each for at most `turn`.
final class BackgroundLoop: @unchecked Sendable {
    private let ready = DispatchSemaphore(value: 0)
    private let finished = Shared(false)
    private let exited = Shared(false)
    private let loopBox = Shared<Loop?>(nil)
    private var thread: JoinableThread!
    /// Keeps the default mode alive while the loop idles.
    let keepAlive = LoopSource {}

    init(kernel: VirtualKernel? = nil, modes: [Loop.Mode] = [.default], turn: Duration = .seconds(5),
         setup: @escaping @Sendable (Loop) -> Void = { _ in }) {
        thread = JoinableThread { [loopBox, ready, finished, exited, keepAlive] in
            let loop = kernel.map { Loop.makeCurrent(on: $0) } ?? Loop.current
            loop.add(keepAlive, forMode: .default)
            setup(loop)
            loopBox.value = loop
            ready.signal()
            while !finished.value {
                for mode in modes { loop.run(mode: mode, timeout: turn) }
            }
            exited.value = true
        }
        thread.start()
        ready.wait()
    }

    var loop: Loop { loopBox.value! }

    /// Stops the loop and joins its thread.
    func stop() {
        finished.value = true
        // A stop that lands between two runs ends neither (it ends the current run only), and on a virtual clock
        // nothing else ends the next one: repeat until the thread has left its loop.
        eventually(timeout: .seconds(60)) {
            loop.stop()
            loop.wakeUp()
            return exited.value
        }
        thread.join()
    }
}

/// Milliseconds between two loop instants.
func milliseconds(_ from: Loop.Instant, _ to: Loop.Instant) -> Double {
    Double(Int64(bitPattern: to.nanoseconds &- from.nanoseconds)) / 1e6
}

/// The number of open descriptors of this process.
/// The process's open eventfd, timerfd and epoll descriptors (what a loop opens), by kind. Other descriptors
/// are left out: the test runtime's own threads open and close files meanwhile, and counting those made a
/// leak check fail now and then on a loaded machine.
func openLoopDescriptors() -> [String: Int] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    var counts: [String: Int] = [:]
    for name in names {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
              ["anon_inode:[eventfd]", "anon_inode:[timerfd]", "anon_inode:[eventpoll]"].contains(target) else { continue }
        counts[target, default: 0] += 1
    }
    return counts
}

/// An atomic integer that can live in arrays and be captured by closures.
final class AtomicCounter: Sendable {
    private let storage: Atomic<Int>
    init(_ value: Int = 0) { storage = Atomic(value) }
    func add(_ delta: Int = 1) { storage.add(delta, ordering: .relaxed) }
    func exchange(_ value: Int) -> Int { storage.exchange(value, ordering: .relaxed) }
    func store(_ value: Int) { storage.store(value, ordering: .relaxed) }
    var value: Int { storage.load(ordering: .relaxed) }
}

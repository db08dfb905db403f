import Foundation
import Glibc
import TraceModel

/// The kernel view's part of `rlctl top`: whether it is on, and if not, why (said once, on the status line and in
/// the JSON document, not on every row).
public enum LiveKernelStatus: Sendable, Equatable {
    case on
    case notAvailable(String)
}

/// `rlctl top`'s run-queue and throttled columns: the loops of `loops` (this machine's), with each loop thread's
/// time runnable but not running over the interval, from the kernel recorder's `kernel_off_cpu` events fed to
/// `consume`. Whoever recorded the loops (embedded recorder, LTTng), the kernel recorder follows their processes
/// itself: `follow` is asked for every process a row shows, once.
///
/// The kernel recorder hands its events out a few ms late (it polls its ring buffer, and holds records to order
/// them), so an interval's kernel figures cover the interval moved back by ``lag``: a wait that ended just before
/// the interval did is then counted in it, not lost at the next interval's start.
public final class LiveKernelColumn: LiveView, @unchecked Sendable {
    /// Longer than the kernel recorder's poll interval and reorder window together (10 ms + 2 ms) with room for a
    /// consumer thread kept off the CPU on a loaded machine.
    public static let lag: UInt64 = 60_000_000

    private let loops: any LiveView
    private let follow: @Sendable (Int32) -> Bool
    /// Why the columns are empty (nil: they are on).
    private let notAvailable: String?
    private let lock = NSLock()
    /// Times runnable (`woken` to `back`), per thread, not yet wholly counted in an interval.
    private var waits: [Int32: [RunnableStretch]] = [:]
    private var lostRecords: UInt64 = 0
    /// When each process began to be followed (CLOCK_MONOTONIC); a process `follow` refused is left out.
    private var followedSince: [Int32: UInt64] = [:]
    private var refused: Set<Int32> = []
    private var windowStart: UInt64

    struct RunnableStretch {
        var from: UInt64
        var to: UInt64
        /// Of `from` to `to`, the time the thread's cgroup was out of CPU quota.
        var throttled: UInt64
    }

    public init(loops: any LiveView, follow: @escaping @Sendable (Int32) -> Bool) {
        self.loops = loops
        self.follow = follow
        notAvailable = nil
        windowStart = Self.monotonicNow() &- Self.lag
    }

    /// The columns without a kernel view (not asked for, not available here, or loops of other machines): every
    /// interval says `reason` once.
    public init(loops: any LiveView, notAvailable reason: String) {
        self.loops = loops
        follow = { _ in false }
        notAvailable = reason
        windowStart = 0
    }

    /// The kernel recorder's events (any thread): keeps the times runnable and the losses, and hands them to the
    /// loops for their late-time causes (complete up to ``lag`` ago).
    public func consume(_ events: [TraceEvent]) {
        loops.consumeKernel(events, completeThrough: Self.monotonicNow() &- Self.lag)
        lock.lock()
        defer { lock.unlock() }
        for event in events {
            switch event.payload {
            case .kernelOffCPU(let off) where off.back > off.woken:
                waits[off.threadID, default: []].append(RunnableStretch(from: off.woken, to: off.back, throttled: off.throttled))
            case .kernelLost(let records, _):
                lostRecords = lostRecords.addingReportingOverflow(records).overflow ? .max : lostRecords + records
            default:
                break
            }
        }
    }

    public func refresh() { loops.refresh() }
    public func waitUntilAttached(timeout: Duration) { loops.waitUntilAttached(timeout: timeout) }
    public func stop() { loops.stop() }

    public func takeInterval() -> LiveInterval {
        if notAvailable == nil {
            // The kernel's side is complete up to `lag` ago even when no record came: the loops' events held for
            // it go on to their totals.
            loops.consumeKernel([], completeThrough: Self.monotonicNow() &- Self.lag)
        }
        var interval = loops.takeInterval()
        if let notAvailable {
            interval.kernel = .notAvailable(notAvailable)
            return interval
        }
        let end = Self.monotonicNow() &- Self.lag
        let (start, figures, lost, since) = lock.withLock { () -> (UInt64, [Int32: (runnable: UInt64, throttled: UInt64)], UInt64, [Int32: UInt64]) in
            let start = windowStart
            windowStart = end
            let lost = lostRecords
            lostRecords = 0
            var figures: [Int32: (runnable: UInt64, throttled: UInt64)] = [:]
            for (thread, stretches) in waits {
                var runnable: UInt64 = 0, throttled: UInt64 = 0
                var later: [RunnableStretch] = []
                for stretch in stretches {
                    let from = max(stretch.from, start), to = min(stretch.to, end)
                    if to > from {
                        let part = to - from
                        runnable += part
                        // The throttled share of the part in the window, as of the whole wait (where in the wait the
                        // quota ran out is not recorded).
                        throttled += UInt64(Double(stretch.throttled) * Double(part) / Double(stretch.to - stretch.from))
                    }
                    if stretch.to > end { later.append(RunnableStretch(from: max(stretch.from, end), to: stretch.to, throttled: stretch.throttled)) }
                }
                figures[thread] = (runnable, min(throttled, runnable))
                waits[thread] = later.isEmpty ? nil : later
            }
            return (start, figures, lost, followedSince)
        }
        for index in interval.rows.indices {
            let row = interval.rows[index]
            // A process followed during the window is measured over the part of it followed.
            guard row.processID != 0, let followed = since[row.processID], followed < end else { continue }
            let from = max(start, followed)
            guard end > from else { continue }
            let length = Double(end - from)
            let figure = figures[row.threadID] ?? (0, 0)
            interval.rows[index].runQueueShare = min(1, Double(figure.runnable) / length)
            interval.rows[index].throttledShare = min(1, Double(figure.throttled) / length)
            interval.rows[index].runQueueNanoseconds = figure.runnable
            interval.rows[index].throttledNanoseconds = figure.throttled
            interval.rows[index].kernelLostRecords = lost
        }
        interval.kernel = .on
        interval.kernelLostRecords = lost
        followNew(interval.rows.map(\.processID))
        return interval
    }

    /// Follows the processes not followed yet (a process that ended meanwhile is not asked again).
    private func followNew(_ processes: [Int32]) {
        let new = lock.withLock { Set(processes).filter { $0 != 0 && followedSince[$0] == nil && !refused.contains($0) } }
        for process in new.sorted() {
            let followed = follow(process)
            let now = Self.monotonicNow()
            lock.withLock {
                if followed { followedSince[process] = now } else { refused.insert(process) }
            }
            // The loops of a process followed from now on have the kernel's side in their totals (the recorder's
            // records of it come after this moment).
            if followed {
                loops.consumeKernel([TraceEvent(timestamp: now, threadID: 0, processID: process, payload: .kernelBegin(pid: process, command: ""))],
                                    completeThrough: now &- Self.lag)
            }
        }
    }

    static func monotonicNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

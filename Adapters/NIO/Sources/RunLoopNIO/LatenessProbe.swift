import NIOCore
import NIOPosix
import RunLoopCore

extension NIOLoopTracing {
    /// Starts the lateness probe on every loop of `group`: a task scheduled every `interval`, whose lateness
    /// (how long after its due time it started) says how long work waits for the loop, as Node's event-loop-delay
    /// monitor does. Off unless started. It wakes each loop itself, every `interval` even when the loop would
    /// sleep: its own cost is in its events (`probe_fire`'s cost), and summaries label them as the probe's.
    /// Without a sink installed it keeps its schedule and emits nothing.
    public static func startLatenessProbe(on group: any EventLoopGroup, every interval: TimeAmount) -> LatenessProbe {
        _ = tracerFromEnvironment
        precondition(interval.nanoseconds > 0, "the lateness probe's interval must be positive, not \(interval)")
        let probes = group.makeIterator().map { LoopProbe(loop: $0, interval: interval) }
        for probe in probes {
            probe.loop.execute { probe.scheduleNext(after: NIODeadline.now()) }
        }
        return LatenessProbe(probes: probes)
    }

    /// A running lateness probe; ``stop()`` ends it.
    public final class LatenessProbe: Sendable {
        fileprivate let probes: [LoopProbe]

        fileprivate init(probes: [LoopProbe]) {
            self.probes = probes
        }

        /// Cancels the probe's pending tasks on every loop, and returns once none runs any more. Not on an event
        /// loop of the group (it waits for them); loops already shut down are skipped.
        public func stop() {
            for probe in probes {
                try? probe.loop.submit { probe.cancel() }.wait()
            }
        }
    }
}

/// One loop's probe. Its state is touched only on its loop's thread.
final class LoopProbe: NIOScheduledCallbackHandler, @unchecked Sendable {
    let loop: any EventLoop
    private let interval: TimeAmount
    private var pending: NIOScheduledCallback?
    /// When the pending task is due.
    private var due = NIODeadline.distantPast
    private var stopped = false

    init(loop: any EventLoop, interval: TimeAmount) {
        self.loop = loop
        self.interval = interval
    }

    func scheduleNext(after due: NIODeadline) {
        guard !stopped else { return }
        var next = due + interval
        let now = NIODeadline.now()
        // A block longer than the interval skips the due times it covered (one late firing reports it, not a burst).
        if next < now { next = now + interval }
        self.due = next
        pending = try? loop.scheduleCallback(at: next, handler: self)
    }

    func handleScheduledCallback(eventLoop: some EventLoop) {
        let start = monotonicNanoseconds()
        let due = self.due
        scheduleNext(after: due)
        let end = monotonicNanoseconds()
        guard let sink = LoopEventSink.current else { return }
        let loopID = LoopAnnouncement.loopID(for: sink)
        let scheduled = due.uptimeNanoseconds
        sink.probeFire(loopID: loopID, scheduled: scheduled, lateness: start > scheduled ? start - scheduled : 0, cost: end - start)
    }

    func cancel() {
        stopped = true
        pending?.cancel()
        pending = nil
    }
}

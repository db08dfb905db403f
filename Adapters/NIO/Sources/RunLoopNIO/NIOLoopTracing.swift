import CoreMetrics
import CRunLoopNIO
import NIOCore
import NIOPosix
import RunLoopCore
import RunLoopMetrics
import Tracing

/// Traces SwiftNIO event loops through RunLoopCore's event seam (``LoopEventSink``): whichever tracer the program
/// installed (the embedded recorder or LTTng) records their ticks, and `rlctl summarize` reads them like its own
/// loops.
///
/// The one line to add: make the group with ``makeEventLoopGroup(numberOfThreads:)`` instead of
/// `MultiThreadedEventLoopGroup(numberOfThreads:)`. Add ``ChannelHandler`` first in a pipeline to see how long
/// each read and other I/O event takes; start ``startLatenessProbe(on:every:)`` to measure how late scheduled
/// work runs.
///
/// Outside `rlctl record` (no sink installed when ``makeEventLoopGroup(numberOfThreads:)`` runs) the adapter steps
/// aside: the group has no metrics delegate (NIO then reads no clock for tick info) and each ``ChannelHandler`` on
/// its loops removes itself from its pipeline, so a program that is not being recorded runs as if the line were
/// not there. A program that installs a sink itself does so before making the group.
public enum NIOLoopTracing {
    /// A `MultiThreadedEventLoopGroup` whose loops are traced by a new ``MetricsDelegate``; a plain one when no
    /// sink is installed (after ``LoopEventSink/installFromEnvironment()``, which this calls).
    public static func makeEventLoopGroup(numberOfThreads: Int) -> MultiThreadedEventLoopGroup {
        _ = tracerFromEnvironment
        guard LoopEventSink.current != nil else {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: numberOfThreads)
            for loop in group.makeIterator() {
                try? loop.submit { rlnio_current_thread_state()!.pointee.untraced = 1 }.wait()
            }
            return group
        }
        let delegate = MetricsDelegate()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: numberOfThreads, metricsDelegate: delegate)
        delegate.adopt(group)
        return group
    }

    /// A `MultiThreadedEventLoopGroup` whose loops export their metrics through swift-metrics into `factory`
    /// (RunLoopMetrics: `runloop.iterations`, `runloop.time`, `runloop.utilization`, `runloop.wakeup.delay` from
    /// ``startLatenessProbe(on:every:)``, `runloop.stalls` past `Loop.stallThreshold`; docs/metrics.md), and are
    /// traced as well when `rlctl record` records the program. The one line a NIO server adds for event-loop
    /// metrics: `let (group, metrics) = NIOLoopTracing.makeEventLoopGroup(numberOfThreads: 4, metrics:
    /// MetricsSystem.factory)`; `metrics.detach()` after the group's shutdown ends its series.
    public static func makeEventLoopGroup(numberOfThreads: Int, metrics factory: any MetricsFactory)
        -> (group: MultiThreadedEventLoopGroup, metrics: LoopMetricsHandle) {
        _ = tracerFromEnvironment
        let delegate = MetricsDelegate()
        // Before the group exists, so that its loops' first ticks already reach the metrics.
        let metrics = LoopMetrics.attach(adaptedGroup: delegate.groupID, factory: factory)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: numberOfThreads, metricsDelegate: delegate)
        delegate.adopt(group)
        return (group, metrics)
    }

    /// Reports every tick of the event loops of one group (``makeEventLoopGroup(numberOfThreads:)`` makes one;
    /// pass your own to `MultiThreadedEventLoopGroup(numberOfThreads:metricsDelegate:)`, then call ``adopt(_:)``).
    ///
    /// NIO's tick info covers the tick's task phase only: the I/O handled before a tick (channel reads) is inside
    /// its `sleepTime`. ``ChannelHandler`` measures that I/O; without it a summary cannot tell I/O from sleep.
    public final class MetricsDelegate: NIOEventLoopMetricsDelegate, Sendable {
        /// This group's id in traces (`loop_adapted`'s group_id).
        public let groupID: UInt64

        public init() {
            _ = NIOLoopTracing.tracerFromEnvironment
            groupID = LoopEventSink.makeID()
        }

        /// Tells each loop of `group` which group it belongs to, before the group serves anything, so that a
        /// channel event that comes before a loop's first tick announces the loop with its group. Without it such
        /// a loop is announced with group 0 first and again with its group at its first tick. It waits for each
        /// loop: call it from outside the group's loops.
        public func adopt(_ group: MultiThreadedEventLoopGroup) {
            let groupID = groupID
            for loop in group.makeIterator() {
                try? loop.submit { LoopAnnouncement.noteGroup(groupID, sink: LoopEventSink.current) }.wait()
            }
        }

        public func processedTick(info: NIOEventLoopTickInfo) {
            guard let sink = LoopEventSink.current else { return }
            LoopAnnouncement.noteGroup(groupID, sink: sink)
            let loopID = LoopAnnouncement.loopID(for: sink)
            let start = info.startTime.uptimeNanoseconds, end = info.endTime.uptimeNanoseconds
            sink.nioTick(loopID: loopID, start: start, end: end,
                         sleep: UInt64(max(0, info.sleepTime.nanoseconds)), tasks: UInt64(max(0, info.numberOfTasks)))
            LoopAnnouncement.tickReported(loopID: loopID, start: start, end: end, sink: sink)
        }
    }
}

extension NIOLoopTracing {
    /// Installs the tracer `rlctl record` chose (`LoopEventSink.installFromEnvironment()`), once per process: each
    /// entry point of the adapter reaches it first, so adding the adapter is all a program does to be recorded.
    static let tracerFromEnvironment: LoopEventSink.EnvironmentTracer = LoopEventSink.installFromEnvironment()
}

import CFoundationRunLoop
import Foundation
import Glibc
import RunLoopCore
import TraceModel
import Tracing

/// Traces a Foundation `RunLoop` (CFRunLoop on Linux) through the same seam as RunLoopCore's loops.
///
/// ```swift
/// let tracing = try FoundationLoopTracing.attach(to: .main)
/// RunLoop.main.run()
/// ```
///
/// The call also runs `LoopEventSink/installFromEnvironment()` (module Tracing), so that under `rlctl record`
/// the process records with the tracer rlctl chose; outside rlctl it installs nothing.
///
/// One CFRunLoop observer, for all six activities, is added in `kCFRunLoopCommonModes` and in every mode the loop
/// has when it is attached; while a sink is installed, the modes created since are added each time a traced run
/// is about to sleep (`beforeWaiting`: the re-scan, CFRunLoopCopyAllModes, costs about 0.4 µs, which an
/// iteration about to block does not feel; at every entry it added about 10% to a polling iteration). Each
/// activity goes to `LoopEventSink/current`; with no sink installed an activity costs the observer callout and
/// a few integer updates, nothing else.
///
/// What a Foundation loop's trace holds, and what it cannot: CF tells observers only its six activities, so an
/// adapted loop emits `loop_create` and `loop_adapted` (adapter `foundation`) once per installed sink, then
/// `activity` events, and nothing else: no `run_begin`/`run_end`, no `wakeup` (why the loop woke), no callout
/// events (which timer or source ran, for how long). Iterations, busy and sleep times come from the activities;
/// callout-level figures are not available.
///
/// The events' fields follow RunLoopCore's conventions so that the summaries read both alike:
/// - `depth` counts the traced runs in progress on the loop: the entry of the outermost run is depth 1, a run
///   started inside one of its callouts depth 2, and its exit has the depth of its entry.
/// - `iteration` is a per-loop counter incremented just before each `beforeTimers` (the first iteration is 1);
///   `entry` and `exit` carry the count so far, as RunLoopCore's do.
/// - `mode` is the CF mode's name (`kCFRunLoopDefaultMode` for `RunLoop.Mode.default`).
///
/// Limits: a run in a mode the observer is not in is invisible, its entry and exit alike (so the depths of the
/// runs seen stay paired). That is a mode created after the last scan and run before the loop next sleeps in an
/// observed mode, typically a private mode created inside a callout and run at once, or any new mode of a loop
/// that never sleeps: call ``Attachment/observeNewModes()`` after creating it to see its first run. A loop
/// attached while it runs is seen from its next activity on; the runs already in progress count from depth 1
/// without an `entry`.
public enum FoundationLoopTracing {
    /// Why ``attach(to:name:)`` refused.
    public enum AttachError: Error, CustomStringConvertible, Equatable {
        /// The run loop is neither the calling thread's (`RunLoop.current`) nor `RunLoop.main`: Foundation on
        /// Linux gives no way to reach another thread's CFRunLoop from outside.
        case notCurrentOrMain
        /// An attachment traces this loop already (until its ``Attachment/detach()``): a second observer would
        /// announce the loop twice under two ids and double every event.
        case alreadyAttached
        /// More loops are attached at once than the adapter keeps track of (64).
        case tooManyLoops

        public var description: String {
            switch self {
            case .notCurrentOrMain:
                "FoundationLoopTracing.attach: the run loop must be RunLoop.current (attach on the loop's own thread) or RunLoop.main"
            case .alreadyAttached:
                "FoundationLoopTracing.attach: this run loop is traced already; keep the first attachment (or detach it first)"
            case .tooManyLoops:
                "FoundationLoopTracing.attach: 64 run loops are traced already; detach one first"
            }
        }
    }

    /// Starts tracing `runLoop` until ``Attachment/detach()``.
    ///
    /// - Parameters:
    ///   - runLoop: `RunLoop.current` (attached from the loop's own thread) or `RunLoop.main` (from any thread).
    ///   - name: the loop's name in traces; by default "RunLoop.main" for the main loop (RunLoopCore's `Loop.main`,
    ///     on the same thread, is "main"), otherwise the thread's name.
    /// - Throws: ``AttachError/notCurrentOrMain`` for any other run loop.
    public static func attach(to runLoop: RunLoop = .current, name: String? = nil) throws(AttachError) -> Attachment {
        // The tracer `rlctl record` chose, so that adding the adapter stays one line (idempotent; nothing outside
        // rlctl).
        LoopEventSink.installFromEnvironment()
        return try attach(to: runLoop, name: name, sinks: .installed)
    }

    /// `attach(to:name:)` with the sink taken from `sinks`: the tests give each attachment its own, so that
    /// another suite installing a process-wide sink cannot steal their events.
    static func attach(to runLoop: RunLoop, name: String?, sinks: SinkSource) throws(AttachError) -> Attachment {
        let isMain = runLoop === RunLoop.main
        guard isMain || runLoop === RunLoop.current else { throw .notCurrentOrMain }
        guard let loop = isMain ? rlcf_run_loop_get_main() : rlcf_run_loop_get_current() else {
            throw .notCurrentOrMain
        }
        switch rlcf_claim_loop(loop) {
        case RLCF_ALREADY_CLAIMED: throw .alreadyAttached
        case RLCF_CLAIMS_FULL: throw .tooManyLoops
        default: break
        }
        let onLoopThread = !isMain || Thread.isMainThread
        let observation = LoopObservation(
            loop: loop,
            name: name ?? (isMain ? "RunLoop.main" : currentThreadName()),
            threadID: isMain ? getpid() : rlcf_thread_id(),
            sinks: sinks
        )
        observation.start(announceNow: onLoopThread)
        return Attachment(observation)
    }

    /// One attached loop; ``detach()`` ends its tracing. Dropping the attachment does not: the loop stays traced
    /// for the life of its thread, so `_ = try FoundationLoopTracing.attach(to: .main)` is enough.
    public final class Attachment: @unchecked Sendable {
        private let observation: LoopObservation

        init(_ observation: LoopObservation) { self.observation = observation }

        /// The loop's id in traces (from `LoopEventSink/makeID()`).
        public var loopID: UInt64 { observation.loopID }
        /// The loop's name in traces.
        public var name: String { observation.name }

        /// Adds the observer to the modes the loop has gained since the last scan. Call it on the loop's thread.
        public func observeNewModes() { observation.observeNewModes() }

        /// Stops tracing: the observer is invalidated and removed from every mode. From the loop's own thread no
        /// event follows; from another thread, an activity already being delivered may still arrive.
        public func detach() { observation.stop() }
    }
}

/// Where an attachment's events go.
enum SinkSource {
    /// `LoopEventSink/current`: what the process installed.
    case installed
    /// A sink of the caller's (nil: none).
    case provided(@Sendable () -> LoopEventSink?)
}

private func currentThreadName() -> String {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
        rlcf_thread_name(buffer.baseAddress!, buffer.count) ? String(cString: buffer.baseAddress!) : "thread-\(rlcf_thread_id())"
    }
}

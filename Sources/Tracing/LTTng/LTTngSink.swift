import CRunLoopTracepoints
import RunLoopCore

/// Forwards every loop event to the `runloop` LTTng-UST tracepoints (`runloop:entry`, `runloop:timer_fire_begin`, …).
///
/// Install it like any sink; events reach a trace only while an LTTng session enables them:
/// ```swift
/// LoopEventSink.install(LTTngSink())
/// // lttng create demo && lttng enable-event -u 'runloop:*' && lttng add-context -u -t vtid && lttng start
/// ```
/// While no session enables an event, each callback costs its dynamic call, two loads and a branch: the
/// tracepoint's `state` word is read inline (`rl_tp_enabled`), and only an enabled event calls into C, where
/// `lttng_ust_tracepoint_enabled()` / `lttng_ust_do_tracepoint()` record it. Mode names go to LTTng as the loop's
/// own C string (`LoopEventSink.ContextmodeCString`), with no conversion per event.
///
/// In a build without LTTng-UST (see `docs/lttng.md`) the sink still works and records nothing;
/// ``isCompiledIn`` tells which build this is.
public final class LTTngSink: LoopEventSink, @unchecked Sendable {
    /// Loads the `runloop` provider library (and with it liblttng-ust) now, before any loop reports to the sink;
    /// when it cannot be loaded, says why once on stderr (``providerLoadError``) and records nothing.
    public override init() {
        _ = rl_trace_load_for_sink()
        super.init()
    }

    /// Whether the `runloop` tracepoint provider is available to this process: liblttng-ust-dev was found at build
    /// time, `RLCTL_DISABLE_LTTNG` was not set, and its library (librunloop-lttng-provider.so) loads — asking loads
    /// it. When false, the sink records nothing (see ``isProviderBuilt`` and ``providerLoadError``).
    public static var isCompiledIn: Bool { rl_trace_compiled_in() != 0 }

    /// Whether this build made the provider library (LTTng-UST found at build time); loads nothing.
    public static var isProviderBuilt: Bool { rl_trace_provider_built() != 0 }

    /// Why the provider library could not be loaded (the paths tried and what to do), or nil.
    public static var providerLoadError: String? { rl_trace_load_error().map { String(cString: $0) } }

    /// The file the provider library was loaded from, or nil when it is not loaded.
    public static var providerPath: String? { rl_trace_provider_path().map { String(cString: $0) } }

    /// How many `runloop` events an LTTng session enables in this process right now (0 without a session, or
    /// when not compiled in). LTTng enables events asynchronously after `lttng enable-event`/`lttng start`.
    public static var enabledEventCount: Int { Int(rl_trace_enabled_count()) }

    /// How many tracepoints the `runloop` provider declares (runloop_provider.h).
    public static var providerEventCount: Int { Int(RL_EVENT_COUNT.rawValue) }

    /// Whether an LTTng session records `runloop` events in this process right now.
    public static var isRecording: Bool { enabledEventCount > 0 }

    /// Whether a session records this activity's event right now.
    public static func isEnabled(_ activity: Loop.Activity) -> Bool {
        rl_tp_activity_enabled(UInt64(activity.rawValue)) != 0
    }

    // ===== events =====

    public override func loopCreated(loopID: UInt64, threadID: Int32, name: String) {
        guard rl_tp_enabled(RL_EVENT_loop_create) != 0 else { return }
        name.withCString { rl_trace_loop_create(loopID, threadID, $0) }
    }

    public override func itemLabeled(id: UInt64, kind: ItemKind, label: String) {
        guard rl_tp_enabled(RL_EVENT_item_label) != 0 else { return }
        label.withCString { rl_trace_item_label(id, kind.rawValue, $0) }
    }

    public override func activity(_ activity: Loop.Activity, _ context: Context) {
        guard rl_tp_activity_enabled(UInt64(activity.rawValue)) != 0 else { return }
        rl_trace_activity(UInt64(activity.rawValue), context.loopID, context.modeCString, context.iteration, context.depth)
    }

    public override func runBegin(_ context: Context, timeoutNanoseconds: UInt64, returnAfterSourceHandled: Bool) {
        guard rl_tp_enabled(RL_EVENT_run_begin) != 0 else { return }
        rl_trace_run_begin(context.loopID, context.modeCString, timeoutNanoseconds, returnAfterSourceHandled ? 1 : 0)
    }

    public override func runEnd(_ context: Context, result: Loop.RunResult) {
        guard rl_tp_enabled(RL_EVENT_run_end) != 0 else { return }
        rl_trace_run_end(context.loopID, context.modeCString, UInt8(truncatingIfNeeded: result.traceValue))
    }

    public override func timerFireBegin(_ context: Context, timerID: UInt64, scheduled: UInt64, tolerance: UInt64,
                                        interval: UInt64, missed: UInt64) {
        guard rl_tp_enabled(RL_EVENT_timer_fire_begin) != 0 else { return }
        rl_trace_timer_fire_begin(context.loopID, timerID, scheduled, tolerance, interval, missed)
    }

    public override func timerFireEnd(_ context: Context, timerID: UInt64) {
        guard rl_tp_enabled(RL_EVENT_timer_fire_end) != 0 else { return }
        rl_trace_timer_fire_end(context.loopID, timerID)
    }

    /// On the signalling thread; LTTng stamps the event itself, so `time` is not recorded twice.
    public override func sourceSignaled(sourceID: UInt64, at time: UInt64) {
        guard rl_tp_enabled(RL_EVENT_source_signal) != 0 else { return }
        rl_trace_source_signal(sourceID)
    }

    public override func sourcePerformBegin(_ context: Context, sourceID: UInt64, kind: SourceKind, order: Int,
                                            signaled: UInt64) {
        guard rl_tp_enabled(RL_EVENT_source_perform_begin) != 0 else { return }
        rl_trace_source_perform_begin(context.loopID, sourceID, kind.rawValue, Int64(order), signaled)
    }

    public override func sourcePerformEnd(_ context: Context, sourceID: UInt64) {
        guard rl_tp_enabled(RL_EVENT_source_perform_end) != 0 else { return }
        rl_trace_source_perform_end(context.loopID, sourceID)
    }

    public override func blockBegin(_ context: Context, blockID: UInt64, enqueued: UInt64) {
        guard rl_tp_enabled(RL_EVENT_block_begin) != 0 else { return }
        rl_trace_block_begin(context.loopID, blockID, enqueued)
    }

    public override func blockEnd(_ context: Context, blockID: UInt64) {
        guard rl_tp_enabled(RL_EVENT_block_end) != 0 else { return }
        rl_trace_block_end(context.loopID, blockID)
    }

    public override func observerBegin(_ context: Context, observerID: UInt64, activity: Loop.Activity) {
        guard rl_tp_enabled(RL_EVENT_observer_begin) != 0 else { return }
        rl_trace_observer_begin(context.loopID, observerID, UInt8(truncatingIfNeeded: activity.rawValue))
    }

    public override func observerEnd(_ context: Context, observerID: UInt64) {
        guard rl_tp_enabled(RL_EVENT_observer_end) != 0 else { return }
        rl_trace_observer_end(context.loopID, observerID)
    }

    public override func wakeUp(_ context: Context, reason: Loop.WakeReason, slept: UInt64) {
        guard rl_tp_enabled(RL_EVENT_wakeup) != 0 else { return }
        rl_trace_wakeup(context.loopID, reason.rawValue, slept)
    }

    public override func mainQueueBegin(_ context: Context) {
        guard rl_tp_enabled(RL_EVENT_main_queue_begin) != 0 else { return }
        rl_trace_main_queue_begin(context.loopID)
    }

    public override func mainQueueEnd(_ context: Context) {
        guard rl_tp_enabled(RL_EVENT_main_queue_end) != 0 else { return }
        rl_trace_main_queue_end(context.loopID)
    }

    public override func jobBegin(_ context: Context, jobID: UInt64, enqueued: UInt64, priority: UInt8) {
        guard rl_tp_enabled(RL_EVENT_job_begin) != 0 else { return }
        rl_trace_job_begin(context.loopID, jobID, enqueued, priority)
    }

    public override func jobEnd(_ context: Context, jobID: UInt64) {
        guard rl_tp_enabled(RL_EVENT_job_end) != 0 else { return }
        rl_trace_job_end(context.loopID, jobID)
    }

    public override func loopAdapted(loopID: UInt64, adapter: Adapter, groupID: UInt64) {
        guard rl_tp_enabled(RL_EVENT_loop_adapted) != 0 else { return }
        rl_trace_loop_adapted(loopID, adapter.rawValue, groupID)
    }

    public override func nioTick(loopID: UInt64, start: UInt64, end: UInt64, sleep: UInt64, tasks: UInt64) {
        guard rl_tp_enabled(RL_EVENT_nio_tick) != 0 else { return }
        rl_trace_nio_tick(loopID, start, end, sleep, tasks)
    }

    public override func nioIO(loopID: UInt64, channelID: UInt64, event: NIOEvent, start: UInt64, end: UInt64) {
        guard rl_tp_enabled(RL_EVENT_nio_io) != 0 else { return }
        rl_trace_nio_io(loopID, channelID, event.rawValue, start, end)
    }

    public override func probeFire(loopID: UInt64, scheduled: UInt64, lateness: UInt64, cost: UInt64) {
        guard rl_tp_enabled(RL_EVENT_probe_fire) != 0 else { return }
        rl_trace_probe_fire(loopID, scheduled, lateness, cost)
    }

    public override func loopStall(_ context: Context, start: UInt64, busy: UInt64, threshold: UInt64, culprit: Culprit) {
        guard rl_tp_enabled(RL_EVENT_loop_stall) != 0 else { return }
        culprit.label.withCString {
            rl_trace_loop_stall(context.loopID, context.modeCString, context.iteration, start, busy, threshold,
                                culprit.kind.rawValue, culprit.id, culprit.duration, $0)
        }
    }

    public override func loopHang(loopID: UInt64, iteration: UInt64, busy: UInt64, threshold: UInt64) {
        guard rl_tp_enabled(RL_EVENT_loop_hang) != 0 else { return }
        rl_trace_loop_hang(loopID, iteration, busy, threshold)
    }
}

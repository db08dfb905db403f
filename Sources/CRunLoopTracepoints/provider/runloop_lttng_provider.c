// librunloop-lttng-provider.so: the `runloop` LTTng-UST provider as a shared object of its own (lttng-ust(3),
// "Dynamically loading the tracepoint provider"). It is the only rlctl code linked with liblttng-ust, so only a
// process that dlopens it — one that installs LTTngSink — loads liblttng-ust and its listener threads.
//
// Not a SwiftPM source file (Package.swift excludes provider/ from CRunLoopTracepoints): the
// LTTngProviderBuilder plugin compiles it with -shared, links liblttng-ust, and ships the result as a resource
// next to every binary that links Tracing. Its one exported symbol, rl_lttng_provider_v1, returns the table
// of rl_provider_abi.h; CRunLoopTracepoints calls the events through it.
#include "rl_provider_abi.h"

// The probes and the tracepoint call sites both live here, so this object is a self-contained provider: the
// call sites are bound to the probes by liblttng-ust when the object loads, and the binary that dlopens it
// needs neither TRACEPOINT_DEFINE nor liblttng-ust-tracepoint.
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "runloop_provider.h"

// Everything but the entry point is hidden: nothing else of this object is an interface.
#define RL_HIDDEN __attribute__((visibility("hidden")))

// The enabled check, then the probe call: lttng-ust(3) on lttng_ust_tracepoint_enabled() and
// lttng_ust_do_tracepoint(). Callers have already seen the state word set, but it may have been cleared since;
// do_tracepoint would then find no probe and record nothing, the check just skips the argument set-up.
#define RL_EMIT(name, ...)                                                  \
    do {                                                                    \
        if (lttng_ust_tracepoint_enabled(runloop, name))                    \
            lttng_ust_do_tracepoint(runloop, name, __VA_ARGS__);            \
    } while (0)

RL_HIDDEN void rlp_activity(uint64_t activity, uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    switch (activity) {
    case 1: RL_EMIT(entry, loop_id, mode, iteration, depth); break;
    case 2: RL_EMIT(before_timers, loop_id, mode, iteration, depth); break;
    case 4: RL_EMIT(before_sources, loop_id, mode, iteration, depth); break;
    case 32: RL_EMIT(before_waiting, loop_id, mode, iteration, depth); break;
    case 64: RL_EMIT(after_waiting, loop_id, mode, iteration, depth); break;
    case 128: RL_EMIT(exit, loop_id, mode, iteration, depth); break;
    default: break;
    }
}
RL_HIDDEN void rlp_run_begin(uint64_t loop_id, const char *mode, uint64_t timeout_ns, uint8_t return_after_source_handled) {
    RL_EMIT(run_begin, loop_id, mode, timeout_ns, return_after_source_handled);
}
RL_HIDDEN void rlp_run_end(uint64_t loop_id, const char *mode, uint8_t result) {
    RL_EMIT(run_end, loop_id, mode, result);
}
RL_HIDDEN void rlp_timer_fire_begin(uint64_t loop_id, uint64_t timer_id, uint64_t scheduled_ns, uint64_t tolerance_ns,
                                    uint64_t interval_ns, uint64_t missed) {
    RL_EMIT(timer_fire_begin, loop_id, timer_id, scheduled_ns, tolerance_ns, interval_ns, missed);
}
RL_HIDDEN void rlp_timer_fire_end(uint64_t loop_id, uint64_t timer_id) {
    RL_EMIT(timer_fire_end, loop_id, timer_id);
}
RL_HIDDEN void rlp_source_signal(uint64_t source_id) {
    RL_EMIT(source_signal, source_id);
}
RL_HIDDEN void rlp_source_perform_begin(uint64_t loop_id, uint64_t source_id, uint8_t kind, int64_t order,
                                        uint64_t signaled_ns) {
    RL_EMIT(source_perform_begin, loop_id, source_id, kind, order, signaled_ns);
}
RL_HIDDEN void rlp_source_perform_end(uint64_t loop_id, uint64_t source_id) {
    RL_EMIT(source_perform_end, loop_id, source_id);
}
RL_HIDDEN void rlp_block_begin(uint64_t loop_id, uint64_t block_id, uint64_t enqueued_ns) {
    RL_EMIT(block_begin, loop_id, block_id, enqueued_ns);
}
RL_HIDDEN void rlp_block_end(uint64_t loop_id, uint64_t block_id) {
    RL_EMIT(block_end, loop_id, block_id);
}
RL_HIDDEN void rlp_observer_begin(uint64_t loop_id, uint64_t observer_id, uint8_t activity) {
    RL_EMIT(observer_begin, loop_id, observer_id, activity);
}
RL_HIDDEN void rlp_observer_end(uint64_t loop_id, uint64_t observer_id) {
    RL_EMIT(observer_end, loop_id, observer_id);
}
RL_HIDDEN void rlp_wakeup(uint64_t loop_id, uint8_t reason, uint64_t slept_ns) {
    RL_EMIT(wakeup, loop_id, reason, slept_ns);
}
RL_HIDDEN void rlp_loop_create(uint64_t loop_id, int32_t tid, const char *name) {
    RL_EMIT(loop_create, loop_id, tid, name);
}
RL_HIDDEN void rlp_item_label(uint64_t item_id, uint8_t kind, const char *label) {
    RL_EMIT(item_label, item_id, kind, label);
}

#define RL_STATE(name) &lttng_ust_tracepoint_runloop___##name.state

static const rl_provider rl_table = {
    .abi = RL_PROVIDER_ABI,
    .size = sizeof(rl_provider),
    .state = {
        [RL_TP_ENTRY] = RL_STATE(entry),
        [RL_TP_BEFORE_TIMERS] = RL_STATE(before_timers),
        [RL_TP_BEFORE_SOURCES] = RL_STATE(before_sources),
        [RL_TP_BEFORE_WAITING] = RL_STATE(before_waiting),
        [RL_TP_AFTER_WAITING] = RL_STATE(after_waiting),
        [RL_TP_EXIT] = RL_STATE(exit),
        [RL_TP_RUN_BEGIN] = RL_STATE(run_begin),
        [RL_TP_RUN_END] = RL_STATE(run_end),
        [RL_TP_TIMER_FIRE_BEGIN] = RL_STATE(timer_fire_begin),
        [RL_TP_TIMER_FIRE_END] = RL_STATE(timer_fire_end),
        [RL_TP_SOURCE_SIGNAL] = RL_STATE(source_signal),
        [RL_TP_SOURCE_PERFORM_BEGIN] = RL_STATE(source_perform_begin),
        [RL_TP_SOURCE_PERFORM_END] = RL_STATE(source_perform_end),
        [RL_TP_BLOCK_BEGIN] = RL_STATE(block_begin),
        [RL_TP_BLOCK_END] = RL_STATE(block_end),
        [RL_TP_OBSERVER_BEGIN] = RL_STATE(observer_begin),
        [RL_TP_OBSERVER_END] = RL_STATE(observer_end),
        [RL_TP_WAKEUP] = RL_STATE(wakeup),
        [RL_TP_LOOP_CREATE] = RL_STATE(loop_create),
        [RL_TP_ITEM_LABEL] = RL_STATE(item_label),
    },
    .activity = rlp_activity,
    .run_begin = rlp_run_begin,
    .run_end = rlp_run_end,
    .timer_fire_begin = rlp_timer_fire_begin,
    .timer_fire_end = rlp_timer_fire_end,
    .source_signal = rlp_source_signal,
    .source_perform_begin = rlp_source_perform_begin,
    .source_perform_end = rlp_source_perform_end,
    .block_begin = rlp_block_begin,
    .block_end = rlp_block_end,
    .observer_begin = rlp_observer_begin,
    .observer_end = rlp_observer_end,
    .wakeup = rlp_wakeup,
    .loop_create = rlp_loop_create,
    .item_label = rlp_item_label,
};

__attribute__((visibility("default"))) const rl_provider *rl_lttng_provider_v1(void) { return &rl_table; }

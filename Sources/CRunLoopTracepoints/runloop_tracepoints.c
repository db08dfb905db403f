// The `runloop` tracepoint provider, linked into the binary (see docs/lttng.md for why not a dlopen'ed .so),
// and the rl_trace_* functions Swift calls. Built with LTTng only when Package.swift found liblttng-ust-dev
// and RLCTL_DISABLE_LTTNG is not set: it then passes -DRLCTL_HAVE_LTTNG and links liblttng-ust.
#include "rl_tracepoints.h"

#ifdef RLCTL_HAVE_LTTNG

// This one file both creates the probes and defines the tracepoints (lttng-ust(3), "Statically linking the
// tracepoint provider").
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "runloop_provider.h"

#define RL_STATE(name) &lttng_ust_tracepoint_runloop___##name.state

const int *const rl_tp_state[RL_TP_COUNT] = {
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
};

static const int rl_tp_never = 0;

const int *const rl_tp_activity_state[9] = {
    RL_STATE(entry), RL_STATE(before_timers), RL_STATE(before_sources), &rl_tp_never, &rl_tp_never,
    RL_STATE(before_waiting), RL_STATE(after_waiting), RL_STATE(exit), &rl_tp_never,
};

int rl_trace_compiled_in(void) { return 1; }

// The enabled check, then the probe call: lttng-ust(3) on lttng_ust_tracepoint_enabled() and
// lttng_ust_do_tracepoint(). do_tracepoint finds no probe (and records nothing) if the event was disabled
// between the two.
#define RL_EMIT(name, ...)                                                  \
    do {                                                                    \
        if (lttng_ust_tracepoint_enabled(runloop, name))                    \
            lttng_ust_do_tracepoint(runloop, name, __VA_ARGS__);            \
    } while (0)

#else /* !RLCTL_HAVE_LTTNG */

static const int rl_tp_never = 0;
const int *const rl_tp_state[RL_TP_COUNT] = { [0 ... RL_TP_COUNT - 1] = &rl_tp_never };
const int *const rl_tp_activity_state[9] = { [0 ... 8] = &rl_tp_never };

int rl_trace_compiled_in(void) { return 0; }

#define RL_EMIT(name, ...) do { } while (0)

#endif /* RLCTL_HAVE_LTTNG */

int rl_trace_enabled_count(void) {
    int count = 0;
    for (uint32_t id = 0; id < RL_TP_COUNT; id++) count += rl_tp_enabled((rl_tp_id)id) != 0;
    return count;
}

// Unused parameters are fine in the no-LTTng build: every function is then empty.
#pragma clang diagnostic ignored "-Wunused-parameter"

void rl_trace_entry(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_EMIT(entry, loop_id, mode, iteration, depth);
}
void rl_trace_before_timers(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_EMIT(before_timers, loop_id, mode, iteration, depth);
}
void rl_trace_before_sources(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_EMIT(before_sources, loop_id, mode, iteration, depth);
}
void rl_trace_before_waiting(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_EMIT(before_waiting, loop_id, mode, iteration, depth);
}
void rl_trace_after_waiting(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_EMIT(after_waiting, loop_id, mode, iteration, depth);
}
void rl_trace_exit(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_EMIT(exit, loop_id, mode, iteration, depth);
}

void rl_trace_activity(uint64_t activity, uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    switch (activity) {
    case 1: rl_trace_entry(loop_id, mode, iteration, depth); break;
    case 2: rl_trace_before_timers(loop_id, mode, iteration, depth); break;
    case 4: rl_trace_before_sources(loop_id, mode, iteration, depth); break;
    case 32: rl_trace_before_waiting(loop_id, mode, iteration, depth); break;
    case 64: rl_trace_after_waiting(loop_id, mode, iteration, depth); break;
    case 128: rl_trace_exit(loop_id, mode, iteration, depth); break;
    default: break;
    }
}

void rl_trace_run_begin(uint64_t loop_id, const char *mode, uint64_t timeout_ns, uint8_t return_after_source_handled) {
    RL_EMIT(run_begin, loop_id, mode, timeout_ns, return_after_source_handled);
}
void rl_trace_run_end(uint64_t loop_id, const char *mode, uint8_t result) {
    RL_EMIT(run_end, loop_id, mode, result);
}

void rl_trace_timer_fire_begin(uint64_t loop_id, uint64_t timer_id, uint64_t scheduled_ns, uint64_t tolerance_ns,
                               uint64_t interval_ns, uint64_t missed) {
    RL_EMIT(timer_fire_begin, loop_id, timer_id, scheduled_ns, tolerance_ns, interval_ns, missed);
}
void rl_trace_timer_fire_end(uint64_t loop_id, uint64_t timer_id) {
    RL_EMIT(timer_fire_end, loop_id, timer_id);
}

void rl_trace_source_signal(uint64_t source_id) {
    RL_EMIT(source_signal, source_id);
}
void rl_trace_source_perform_begin(uint64_t loop_id, uint64_t source_id, uint8_t kind, int64_t order,
                                   uint64_t signaled_ns) {
    RL_EMIT(source_perform_begin, loop_id, source_id, kind, order, signaled_ns);
}
void rl_trace_source_perform_end(uint64_t loop_id, uint64_t source_id) {
    RL_EMIT(source_perform_end, loop_id, source_id);
}

void rl_trace_block_begin(uint64_t loop_id, uint64_t block_id, uint64_t enqueued_ns) {
    RL_EMIT(block_begin, loop_id, block_id, enqueued_ns);
}
void rl_trace_block_end(uint64_t loop_id, uint64_t block_id) {
    RL_EMIT(block_end, loop_id, block_id);
}

void rl_trace_observer_begin(uint64_t loop_id, uint64_t observer_id, uint8_t activity) {
    RL_EMIT(observer_begin, loop_id, observer_id, activity);
}
void rl_trace_observer_end(uint64_t loop_id, uint64_t observer_id) {
    RL_EMIT(observer_end, loop_id, observer_id);
}

void rl_trace_wakeup(uint64_t loop_id, uint8_t reason, uint64_t slept_ns) {
    RL_EMIT(wakeup, loop_id, reason, slept_ns);
}

void rl_trace_loop_create(uint64_t loop_id, int32_t tid, const char *name) {
    RL_EMIT(loop_create, loop_id, tid, name);
}
void rl_trace_item_label(uint64_t item_id, uint8_t kind, const char *label) {
    RL_EMIT(item_label, item_id, kind, label);
}

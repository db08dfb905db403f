/*
 * The Swift-facing API of the `runloop` LTTng-UST provider (include/runloop_provider.h).
 *
 * Swift never expands LTTng macros: it calls these plain C functions. The provider itself is a shared object,
 * librunloop-lttng-provider.so, that this code dlopens the first time it is needed (docs/lttng.md, "Loading
 * the provider"): a binary that links Tracing but never uses LTTngSink never loads liblttng-ust.
 *
 * For the cheapest possible disabled path, Swift tests rl_tp_enabled(RL_TP_<EVENT>) first: a static inline
 * function that reads the tracepoint's `state` word (the word lttng_ust_tracepoint_enabled() reads) through a
 * pointer table, so a disabled event costs two loads and a branch, no call. Until the provider is loaded every
 * pointer points to a word that reads as enabled, so the first event of each kind calls its rl_trace_*()
 * function, which loads the provider and repoints the table (to the provider's state words, or to a zero word
 * when it cannot be loaded); after that the check is exactly the provider's own.
 *
 * This header is the same whether or not the package was built with LTTng (the define that selects the
 * implementation is only passed to the C file, never to Swift's importer): without LTTng every state
 * pointer points to a zero word, the functions do nothing, and rl_trace_compiled_in() returns 0.
 */
#ifndef RL_TRACEPOINTS_H
#define RL_TRACEPOINTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One value per tracepoint of the provider, indexing rl_tp_state.
typedef enum rl_tp_id : uint32_t {
    RL_TP_ENTRY = 0,
    RL_TP_BEFORE_TIMERS,
    RL_TP_BEFORE_SOURCES,
    RL_TP_BEFORE_WAITING,
    RL_TP_AFTER_WAITING,
    RL_TP_EXIT,
    RL_TP_RUN_BEGIN,
    RL_TP_RUN_END,
    RL_TP_TIMER_FIRE_BEGIN,
    RL_TP_TIMER_FIRE_END,
    RL_TP_SOURCE_SIGNAL,
    RL_TP_SOURCE_PERFORM_BEGIN,
    RL_TP_SOURCE_PERFORM_END,
    RL_TP_BLOCK_BEGIN,
    RL_TP_BLOCK_END,
    RL_TP_OBSERVER_BEGIN,
    RL_TP_OBSERVER_END,
    RL_TP_WAKEUP,
    RL_TP_LOOP_CREATE,
    RL_TP_ITEM_LABEL,
    RL_TP_COUNT
} rl_tp_id;

/// For each tracepoint, the address of its `state` word: non-zero while an LTTng session enables it (and,
/// before the provider is loaded, a word that reads 1). Written only by the loader, once.
extern const int *rl_tp_state[RL_TP_COUNT];

/// Whether a session currently enables the tracepoint (a racy hint, like lttng_ust_tracepoint_enabled()).
/// The loads are atomic because the loader repoints the table and liblttng-ust's threads write the state words
/// while loops read them; on x86-64 and arm64 both are plain loads, as a volatile read was.
static inline __attribute__((always_inline)) int rl_tp_enabled(rl_tp_id id) {
    return __atomic_load_n(__atomic_load_n(&rl_tp_state[id], __ATOMIC_ACQUIRE), __ATOMIC_RELAXED);
}

/// The `state` words of the six activity tracepoints, indexed by the bit number of the CF activity value
/// (entry 1 -> 0, before_timers 2 -> 1, before_sources 4 -> 2, before_waiting 32 -> 5, after_waiting 64 -> 6,
/// exit 128 -> 7); the other slots point to a zero word.
extern const int *rl_tp_activity_state[9];

/// Whether a session enables the event of this activity (a CF activity bit: 1, 2, 4, 32, 64 or 128).
static inline __attribute__((always_inline)) int rl_tp_activity_enabled(uint64_t activity) {
    unsigned bit = (unsigned)__builtin_ctzll(activity | 0x100);   /* 8 for 0 and for values above 128 */
    return __atomic_load_n(__atomic_load_n(&rl_tp_activity_state[bit > 8 ? 8 : bit], __ATOMIC_ACQUIRE),
                           __ATOMIC_RELAXED);
}

/// 1 when the package was built with LTTng-UST (so the provider library was built too), 0 otherwise. Loads
/// nothing: it tells "built without LTTng" from "built with it, but the provider library does not load".
int rl_trace_provider_built(void);

/// Loads the provider (librunloop-lttng-provider.so, and with it liblttng-ust) if it is not loaded yet:
/// 0 when it is loaded, -1 when it cannot be (rl_trace_load_error() says why; the events then record nothing).
/// Only the first call tries; later calls return the same answer. Where it looks: the path in
/// RLCTL_LTTNG_PROVIDER if set (and nowhere else), else librunloop-lttng-provider.so in the running
/// executable's folder, else in a `*_CRunLoopTracepoints.resources` folder there (where SwiftPM puts it).
/// Always -1 in a build without LTTng.
int rl_trace_load(void);

/// rl_trace_load() for an LTTngSink (its creation, or its first event of a kind): the same, and when the provider
/// cannot be loaded it also says so once on stderr, since nothing else would (the program asked for LTTng tracing
/// and would otherwise get an empty trace without a word). Silent in a build without LTTng.
int rl_trace_load_for_sink(void);

/// Why rl_trace_load() failed (a sentence naming the paths tried and what to do), or NULL when it did not
/// fail or was not called yet.
const char *rl_trace_load_error(void);

/// The file the provider was loaded from, or NULL when it is not loaded.
const char *rl_trace_provider_path(void);

/// 1 when the provider is available to this process: the package was built with LTTng-UST and the provider
/// library loads (this loads it: rl_trace_load()). 0 otherwise, and then the rl_trace_* functions do nothing.
int rl_trace_compiled_in(void);

/// The number of tracepoints a session enables right now (loads the provider first; 0 when it cannot be).
int rl_trace_enabled_count(void);

/* The six activities (`runloop:entry` … `runloop:exit`). */
void rl_trace_entry(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth);
void rl_trace_before_timers(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth);
void rl_trace_before_sources(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth);
void rl_trace_before_waiting(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth);
void rl_trace_after_waiting(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth);
void rl_trace_exit(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth);
/// The activity event for a CF activity bit (1, 2, 4, 32, 64, 128); other values record nothing.
void rl_trace_activity(uint64_t activity, uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth);

void rl_trace_run_begin(uint64_t loop_id, const char *mode, uint64_t timeout_ns, uint8_t return_after_source_handled);
/// result: Loop.RunResult's trace value (finished 1, stopped 2, timed_out 3, handled_source 4).
void rl_trace_run_end(uint64_t loop_id, const char *mode, uint8_t result);

void rl_trace_timer_fire_begin(uint64_t loop_id, uint64_t timer_id, uint64_t scheduled_ns, uint64_t tolerance_ns,
                               uint64_t interval_ns, uint64_t missed);
void rl_trace_timer_fire_end(uint64_t loop_id, uint64_t timer_id);

void rl_trace_source_signal(uint64_t source_id);
/// kind: custom 0, descriptor 1, port 2.
void rl_trace_source_perform_begin(uint64_t loop_id, uint64_t source_id, uint8_t kind, int64_t order,
                                   uint64_t signaled_ns);
void rl_trace_source_perform_end(uint64_t loop_id, uint64_t source_id);

void rl_trace_block_begin(uint64_t loop_id, uint64_t block_id, uint64_t enqueued_ns);
void rl_trace_block_end(uint64_t loop_id, uint64_t block_id);

/// activity: the CF activity bit (1, 2, 4, 32, 64, 128).
void rl_trace_observer_begin(uint64_t loop_id, uint64_t observer_id, uint8_t activity);
void rl_trace_observer_end(uint64_t loop_id, uint64_t observer_id);

/// reason: timer 0, source 1, descriptor 2, port 3, manual 4, timeout 5, stop 6.
void rl_trace_wakeup(uint64_t loop_id, uint8_t reason, uint64_t slept_ns);

void rl_trace_loop_create(uint64_t loop_id, int32_t tid, const char *name);
/// kind: timer 0, source 1, descriptor 2, port 3, observer 4.
void rl_trace_item_label(uint64_t item_id, uint8_t kind, const char *label);

#ifdef __cplusplus
}
#endif

#endif /* RL_TRACEPOINTS_H */

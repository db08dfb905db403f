/*
 * The Swift-facing API of the `runloop` LTTng-UST provider (include/runloop_provider.h).
 *
 * Swift never expands LTTng macros: it calls these plain C functions. The provider itself is a shared object,
 * librunloop-lttng-provider.so, that this code dlopens the first time it is needed (docs/lttng.md, "Loading
 * the provider"): a binary that links Tracing but never uses LTTngSink never loads liblttng-ust.
 *
 * For the cheapest possible disabled path, Swift tests rl_tp_enabled(RL_EVENT_<event>) first: a static inline
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

#include "rl_schema.h"

#ifdef __cplusplus
extern "C" {
#endif

/// One value per tracepoint of the provider, indexing rl_tp_state: the schema's event ids (RL_EVENT_entry …,
/// runloop_events.def), RL_EVENT_COUNT of them.
typedef rl_event_id rl_tp_id;

/// For each tracepoint, the address of its `state` word: non-zero while an LTTng session enables it (and,
/// before the provider is loaded, a word that reads 1). Written only by the loader, once.
extern const int *rl_tp_state[RL_EVENT_COUNT];

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

/* One function per event of runloop_events.def, its parameters the event's fields in order: rl_trace_<event>().
 * Enumeration fields take their u8 value (TraceValues.swift). */
#define RL_FIELD RL_FIELD_TUPLE
#define RL_ENUM_FIELD RL_ENUM_FIELD_TUPLE
#define RL_ARRAY_FIELD RL_ARRAY_FIELD_TUPLE
#define RL_EVENT(id, name, fields) void rl_trace_##name(RL_PARAMS(fields));
#define RL_EVENT_IN_CLASS(id, name, class, fields) void rl_trace_##name(RL_PARAMS(fields));
#include "runloop_events.def"

/// The activity event for a CF activity bit (1, 2, 4, 32, 64, 128); other values record nothing.
void rl_trace_activity(uint64_t activity, uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth);

#ifdef __cplusplus
}
#endif

#endif /* RL_TRACEPOINTS_H */

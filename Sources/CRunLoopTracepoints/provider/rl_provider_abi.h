/*
 * The interface between the two halves of the `runloop` tracepoints (docs/lttng.md, "Loading the provider"):
 *
 *  - librunloop-lttng-provider.so (provider/runloop_lttng_provider.c): the LTTng-UST probes and tracepoints,
 *    linked with liblttng-ust, built by the LTTngProviderBuilder plugin and dlopen'ed at run time only;
 *  - CRunLoopTracepoints (runloop_tracepoints.c), linked into every binary that uses Tracing, which links
 *    no LTTng library and reaches the provider through the table below once it has loaded it.
 *
 * The provider exports one symbol, RL_PROVIDER_SYMBOL, returning this table. Both halves are built from the
 * same checkout, but a provider found through RLCTL_LTTNG_PROVIDER may come from another one: `abi` and
 * `size` let the loader refuse a table it does not know instead of calling through a wrong layout.
 */
#ifndef RL_PROVIDER_ABI_H
#define RL_PROVIDER_ABI_H

#include <stdint.h>

#include "../include/rl_tracepoints.h"

/* Bump whenever the table below or any event's parameters change. */
#define RL_PROVIDER_ABI 1
#define RL_PROVIDER_SYMBOL "rl_lttng_provider_v1"
#define RL_PROVIDER_FILE "librunloop-lttng-provider.so"

typedef struct rl_provider {
    uint32_t abi;   /* RL_PROVIDER_ABI */
    uint32_t size;  /* sizeof(rl_provider) */
    /* Each tracepoint's `state` word, indexed by rl_tp_id: non-zero while a session enables it. */
    const int *state[RL_TP_COUNT];

    /* activity: a CF activity bit (1, 2, 4, 32, 64, 128); other values record nothing. */
    void (*activity)(uint64_t activity, uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth);
    void (*run_begin)(uint64_t loop_id, const char *mode, uint64_t timeout_ns, uint8_t return_after_source_handled);
    void (*run_end)(uint64_t loop_id, const char *mode, uint8_t result);
    void (*timer_fire_begin)(uint64_t loop_id, uint64_t timer_id, uint64_t scheduled_ns, uint64_t tolerance_ns,
                             uint64_t interval_ns, uint64_t missed);
    void (*timer_fire_end)(uint64_t loop_id, uint64_t timer_id);
    void (*source_signal)(uint64_t source_id);
    void (*source_perform_begin)(uint64_t loop_id, uint64_t source_id, uint8_t kind, int64_t order,
                                 uint64_t signaled_ns);
    void (*source_perform_end)(uint64_t loop_id, uint64_t source_id);
    void (*block_begin)(uint64_t loop_id, uint64_t block_id, uint64_t enqueued_ns);
    void (*block_end)(uint64_t loop_id, uint64_t block_id);
    void (*observer_begin)(uint64_t loop_id, uint64_t observer_id, uint8_t activity);
    void (*observer_end)(uint64_t loop_id, uint64_t observer_id);
    void (*wakeup)(uint64_t loop_id, uint8_t reason, uint64_t slept_ns);
    void (*loop_create)(uint64_t loop_id, int32_t tid, const char *name);
    void (*item_label)(uint64_t item_id, uint8_t kind, const char *label);
} rl_provider;

typedef const rl_provider *(*rl_provider_entry)(void);

#endif /* RL_PROVIDER_ABI_H */

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

/* Bump whenever the table below or any event's parameters change (2: one function per event, generated from
 * runloop_events.def, the activities included; 3: main_queue_begin and main_queue_end, the wake reason
 * main_queue, job_begin and job_end; 4: the adapters' loop_adapted, nio_tick, nio_io and probe_fire, the item kind
 * channel; 5: wait_begin, wait_end and wait_thread of the wait interposer; 6: loop_stall, loop_hang and the callout kind; 7: wait_batch, the
 * first event with arrays; 8: the kernel view's kernel_begin, kernel_task, kernel_timer, kernel_run_queue,
 * kernel_off_cpu and kernel_lost). */
#define RL_PROVIDER_ABI 8
#define RL_PROVIDER_SYMBOL "rl_lttng_provider_v1"
#define RL_PROVIDER_FILE "librunloop-lttng-provider.so"

typedef struct rl_provider {
    uint32_t abi;   /* RL_PROVIDER_ABI */
    uint32_t size;  /* sizeof(rl_provider) */
    /* Each tracepoint's `state` word, indexed by rl_tp_id: non-zero while a session enables it. */
    const int *state[RL_EVENT_COUNT];
    /* Each event's function, named after it, its parameters the event's fields. */
#define RL_FIELD RL_FIELD_TUPLE
#define RL_ENUM_FIELD RL_ENUM_FIELD_TUPLE
#define RL_ARRAY_FIELD RL_ARRAY_FIELD_TUPLE
#define RL_EVENT(id, name, fields) void (*name)(RL_PARAMS(fields));
#define RL_EVENT_IN_CLASS(id, name, class, fields) void (*name)(RL_PARAMS(fields));
#include "runloop_events.def"
} rl_provider;

typedef const rl_provider *(*rl_provider_entry)(void);

#endif /* RL_PROVIDER_ABI_H */

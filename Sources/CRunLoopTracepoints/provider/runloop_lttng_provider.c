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

// One function per event: the enabled check, then the probe call with the event's fields.
#define RL_EMIT_ARGS(name, ...) RL_EMIT(name, __VA_ARGS__)
#define X(name, params, args) RL_HIDDEN void rlp_##name params { RL_EMIT_ARGS(name, RL_UNPARENTHESIZE args); }
#define RL_UNPARENTHESIZE(...) __VA_ARGS__
#include "runloop_events_as_calls.def"
#undef X

#define RL_STATE(name) &lttng_ust_tracepoint_runloop___##name.state

static const rl_provider rl_table = {
    .abi = RL_PROVIDER_ABI,
    .size = sizeof(rl_provider),
    .state = {
#define RL_EVENT(id, name, fields) [RL_EVENT_##name] = RL_STATE(name),
#define RL_EVENT_IN_CLASS(id, name, class, fields) [RL_EVENT_##name] = RL_STATE(name),
#include "runloop_events.def"
    },
#define X(name, params, args) .name = rlp_##name,
#include "runloop_events_as_calls.def"
#undef X
};

__attribute__((visibility("default"))) const rl_provider *rl_lttng_provider_v1(void) { return &rl_table; }

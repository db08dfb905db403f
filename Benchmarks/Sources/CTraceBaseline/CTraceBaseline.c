#include "CTraceBaseline.h"

#ifdef RLCTL_HAVE_LTTNG

// A C application instrumented the way lttng-ust(3) documents for a provider in a shared object ("Dynamically
// loading the tracepoint provider"): this file defines the tracepoint call sites (LTTNG_UST_TRACEPOINT_DEFINE)
// and, with LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE, links no LTTng library — its constructor dlopens
// liblttng-ust-tracepoint.so.1 to register them. The probes are those of the main package's
// librunloop-lttng-provider.so, which LTTngSink loads before tracebench measures anything (lttngPeers() asks
// LTTngSink.isCompiledIn first); liblttng-ust then binds these call sites to the same probes, so a session that
// enables runloop:before_timers records both paths into the same buffers. The call sites' state words are this
// file's own: the check below is a direct load, as in any application with its call sites built in.
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE
#include "runloop_provider.h"

int tbc_compiled_in(void) { return 1; }

void tbc_before_timers_loop(uint64_t loop_id, const char *mode, uint64_t first, uint64_t count) {
    for (uint64_t i = first; i < first + count; i++) {
        lttng_ust_tracepoint(runloop, before_timers, loop_id, mode, i, 1);
        // Without this the compiler may read the tracepoint's state word once and drop the whole disabled
        // loop; in a real program other work between two events forces the reload, so the barrier only keeps
        // the baseline honest (it emits no instruction).
        __asm__ volatile("" ::: "memory");
    }
}

#else

int tbc_compiled_in(void) { return 0; }

void tbc_before_timers_loop(uint64_t loop_id, const char *mode, uint64_t first, uint64_t count) {
    (void)loop_id;
    (void)mode;
    (void)first;
    (void)count;
}

#endif

#include "CTraceBaseline.h"

#ifdef RLCTL_HAVE_LTTNG

// Declares the provider's tracepoints without defining them: the probes and the tracepoint structures are
// those of the main package's CRunLoopTracepoints (linked in through the Tracing product), so the process has
// one `runloop` provider, and both paths enable, record and count the very same events.
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

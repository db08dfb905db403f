// The C baseline of tracebench: the `runloop` provider's tracepoints called straight from C, as an
// application instrumented with lttng_ust_tracepoint() would call them (its own call sites, the provider's
// probes in the dlopen'ed librunloop-lttng-provider.so), in the same binary and the same build as the Swift path
// (LTTngSink) it is compared with.
#ifndef CTRACEBASELINE_H
#define CTRACEBASELINE_H

#include <stdint.h>

/// 1 when this target was built against the provider (LTTng-UST found, RLCTL_DISABLE_LTTNG unset), else 0.
int tbc_compiled_in(void);

/// Emits `count` `runloop:before_timers` events with `loop_id`, `mode`, iterations first…first+count-1 and
/// depth 1: the fields LTTngSink.activity(.beforeTimers, context) records. Does nothing when not compiled in.
void tbc_before_timers_loop(uint64_t loop_id, const char *mode, uint64_t first, uint64_t count);

#endif

/*
 * The `runloop` LTTng-UST tracepoint provider: the one declaration of every event RunLoopCore emits.
 *
 * Event names, field names, field types and enumeration values are a public contract: the CTF reader
 * (Sources/Tracing/Readers/CTFTraceReader.swift), the embedded recorder's CTF metadata and every analysis
 * rely on them. Enumeration values are those of Sources/Tracing/Model/SchemaValues.swift.
 *
 * Included by provider/runloop_lttng_provider.c (the probes and tracepoints of librunloop-lttng-provider.so)
 * and by C code that calls the tracepoints itself (tracebench's baseline). Swift never sees it:
 * include/module.modulemap exports rl_tracepoints.h alone.
 */

#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER runloop

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "runloop_provider.h"

#if !defined(RUNLOOP_PROVIDER_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RUNLOOP_PROVIDER_H

#include <lttng/tracepoint.h>
#include <stdint.h>

/* ===== enumerations (values: SchemaValues.swift) ===== */

/* Loop.Activity: CFRunLoop's activity bits. */
LTTNG_UST_TRACEPOINT_ENUM(runloop, activity,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("entry", 1)
        lttng_ust_field_enum_value("before_timers", 2)
        lttng_ust_field_enum_value("before_sources", 4)
        lttng_ust_field_enum_value("before_waiting", 32)
        lttng_ust_field_enum_value("after_waiting", 64)
        lttng_ust_field_enum_value("exit", 128)
    )
)

/* Loop.RunResult: CFRunLoop's kCFRunLoopRun* values. */
LTTNG_UST_TRACEPOINT_ENUM(runloop, run_result,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("finished", 1)
        lttng_ust_field_enum_value("stopped", 2)
        lttng_ust_field_enum_value("timed_out", 3)
        lttng_ust_field_enum_value("handled_source", 4)
    )
)

/* Loop.WakeReason. */
LTTNG_UST_TRACEPOINT_ENUM(runloop, wake_reason,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("timer", 0)
        lttng_ust_field_enum_value("source", 1)
        lttng_ust_field_enum_value("descriptor", 2)
        lttng_ust_field_enum_value("port", 3)
        lttng_ust_field_enum_value("manual", 4)
        lttng_ust_field_enum_value("timeout", 5)
        lttng_ust_field_enum_value("stop", 6)
    )
)

/* LoopEventSink.SourceKind. */
LTTNG_UST_TRACEPOINT_ENUM(runloop, source_kind,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("custom", 0)
        lttng_ust_field_enum_value("descriptor", 1)
        lttng_ust_field_enum_value("port", 2)
    )
)

/* LoopEventSink.ItemKind. */
LTTNG_UST_TRACEPOINT_ENUM(runloop, item_kind,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("timer", 0)
        lttng_ust_field_enum_value("source", 1)
        lttng_ust_field_enum_value("descriptor", 2)
        lttng_ust_field_enum_value("port", 3)
        lttng_ust_field_enum_value("observer", 4)
    )
)

/* ===== the six activities: one class, six instances ===== */

LTTNG_UST_TRACEPOINT_EVENT_CLASS(runloop, activity_class,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, const char *, mode, uint64_t, iteration, uint32_t, depth),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_string(mode, mode)
        lttng_ust_field_integer(uint64_t, iteration, iteration)
        lttng_ust_field_integer(uint32_t, depth, depth)
    )
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, activity_class, runloop, entry,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, const char *, mode, uint64_t, iteration, uint32_t, depth)
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, activity_class, runloop, before_timers,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, const char *, mode, uint64_t, iteration, uint32_t, depth)
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, activity_class, runloop, before_sources,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, const char *, mode, uint64_t, iteration, uint32_t, depth)
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, activity_class, runloop, before_waiting,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, const char *, mode, uint64_t, iteration, uint32_t, depth)
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, activity_class, runloop, after_waiting,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, const char *, mode, uint64_t, iteration, uint32_t, depth)
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, activity_class, runloop, exit,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, const char *, mode, uint64_t, iteration, uint32_t, depth)
)

/* ===== runs ===== */

LTTNG_UST_TRACEPOINT_EVENT(runloop, run_begin,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, const char *, mode, uint64_t, timeout_ns,
                      uint8_t, return_after_source_handled),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_string(mode, mode)
        lttng_ust_field_integer(uint64_t, timeout_ns, timeout_ns)
        lttng_ust_field_integer(uint8_t, return_after_source_handled, return_after_source_handled)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(runloop, run_end,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, const char *, mode, uint8_t, result),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_string(mode, mode)
        lttng_ust_field_enum(runloop, run_result, uint8_t, result, result)
    )
)

/* ===== timers ===== */

LTTNG_UST_TRACEPOINT_EVENT(runloop, timer_fire_begin,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, timer_id, uint64_t, scheduled_ns, uint64_t, tolerance_ns,
                      uint64_t, interval_ns, uint64_t, missed),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, timer_id, timer_id)
        lttng_ust_field_integer(uint64_t, scheduled_ns, scheduled_ns)
        lttng_ust_field_integer(uint64_t, tolerance_ns, tolerance_ns)
        lttng_ust_field_integer(uint64_t, interval_ns, interval_ns)
        lttng_ust_field_integer(uint64_t, missed, missed)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(runloop, timer_fire_end,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, timer_id),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, timer_id, timer_id)
    )
)

/* ===== sources ===== */

/* Emitted on the signalling thread, not the loop's. */
LTTNG_UST_TRACEPOINT_EVENT(runloop, source_signal,
    LTTNG_UST_TP_ARGS(uint64_t, source_id),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, source_id, source_id)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(runloop, source_perform_begin,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, source_id, uint8_t, kind, int64_t, order,
                      uint64_t, signaled_ns),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, source_id, source_id)
        lttng_ust_field_enum(runloop, source_kind, uint8_t, kind, kind)
        lttng_ust_field_integer(int64_t, order, order)
        lttng_ust_field_integer(uint64_t, signaled_ns, signaled_ns)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(runloop, source_perform_end,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, source_id),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, source_id, source_id)
    )
)

/* ===== blocks ===== */

LTTNG_UST_TRACEPOINT_EVENT(runloop, block_begin,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, block_id, uint64_t, enqueued_ns),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, block_id, block_id)
        lttng_ust_field_integer(uint64_t, enqueued_ns, enqueued_ns)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(runloop, block_end,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, block_id),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, block_id, block_id)
    )
)

/* ===== observers ===== */

LTTNG_UST_TRACEPOINT_EVENT(runloop, observer_begin,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, observer_id, uint8_t, activity),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, observer_id, observer_id)
        lttng_ust_field_enum(runloop, activity, uint8_t, activity, activity)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(runloop, observer_end,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, observer_id),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, observer_id, observer_id)
    )
)

/* ===== sleeping ===== */

LTTNG_UST_TRACEPOINT_EVENT(runloop, wakeup,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint8_t, reason, uint64_t, slept_ns),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_enum(runloop, wake_reason, uint8_t, reason, reason)
        lttng_ust_field_integer(uint64_t, slept_ns, slept_ns)
    )
)

/* ===== naming ===== */

LTTNG_UST_TRACEPOINT_EVENT(runloop, loop_create,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, int32_t, tid, const char *, name),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(int32_t, tid, tid)
        lttng_ust_field_string(name, name)
    )
)

LTTNG_UST_TRACEPOINT_EVENT(runloop, item_label,
    LTTNG_UST_TP_ARGS(uint64_t, item_id, uint8_t, kind, const char *, label),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_enum(runloop, item_kind, uint8_t, kind, kind)
        lttng_ust_field_string(label, label)
    )
)

#endif /* RUNLOOP_PROVIDER_H */

#include <lttng/tracepoint-event.h>

/*
 * The `runloop` LTTng-UST tracepoint provider: every event and enumeration of the trace schema,
 * Sources/CTraceSchema/include/runloop_events.def, expanded into LTTNG_UST_TRACEPOINT_ENUM,
 * LTTNG_UST_TRACEPOINT_EVENT_CLASS/INSTANCE and LTTNG_UST_TRACEPOINT_EVENT declarations. Nothing about an event
 * is written here: names, fields, types and enumeration values come from the .def, so the LTTng traces, the
 * embedded recorder's CTF metadata and the readers agree by construction.
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

#include "rl_schema.h"

/* lttng-ust reads this header once per pass, each time with its own meaning of the lttng_ust_field_* macros:
 * the .def is expanded anew in every pass. */

/* `, ctype, name, ctype, name…` for LTTNG_UST_TP_ARGS. */
#undef RL_LTTNG_ARGS
#define RL_LTTNG_ARGS(fields) RL_DROP_FIRST(_ RL_LTTNG_ARGS_A fields (0))
#define RL_LTTNG_ARGS_A(more, ...) RL_CAT(RL_LTTNG_ARGS_A_, more)(__VA_ARGS__)
#define RL_LTTNG_ARGS_B(more, ...) RL_CAT(RL_LTTNG_ARGS_B_, more)(__VA_ARGS__)
#define RL_LTTNG_ARGS_A_0()
#define RL_LTTNG_ARGS_B_0()
#define RL_LTTNG_ARGS_A_1(type, name, enumeration) , RL_CTYPE_##type, name RL_LTTNG_ARGS_B
#define RL_LTTNG_ARGS_B_1(type, name, enumeration) , RL_CTYPE_##type, name RL_LTTNG_ARGS_A

/* The lttng_ust_field_* list for LTTNG_UST_TP_FIELDS. */
#define RL_LTTNG_FIELD_u8(name, enumeration) lttng_ust_field_integer(uint8_t, name, name)
#define RL_LTTNG_FIELD_u32(name, enumeration) lttng_ust_field_integer(uint32_t, name, name)
#define RL_LTTNG_FIELD_s32(name, enumeration) lttng_ust_field_integer(int32_t, name, name)
#define RL_LTTNG_FIELD_u64(name, enumeration) lttng_ust_field_integer(uint64_t, name, name)
#define RL_LTTNG_FIELD_s64(name, enumeration) lttng_ust_field_integer(int64_t, name, name)
#define RL_LTTNG_FIELD_string(name, enumeration) lttng_ust_field_string(name, name)
#define RL_LTTNG_FIELD_enum(name, enumeration) lttng_ust_field_enum(runloop, enumeration, uint8_t, name, name)
/* An array: a sequence whose length is the event's field named in the tuple's last slot. */
#define RL_LTTNG_FIELD_u8_array(name, length) lttng_ust_field_sequence(uint8_t, name, name, uint32_t, length)
#define RL_LTTNG_FIELD_u32_array(name, length) lttng_ust_field_sequence(uint32_t, name, name, uint32_t, length)
#define RL_LTTNG_FIELD_s32_array(name, length) lttng_ust_field_sequence(int32_t, name, name, uint32_t, length)
#define RL_LTTNG_FIELD_u64_array(name, length) lttng_ust_field_sequence(uint64_t, name, name, uint32_t, length)
#define RL_LTTNG_FIELD_s64_array(name, length) lttng_ust_field_sequence(int64_t, name, name, uint32_t, length)
#define RL_LTTNG_FIELDS(fields) RL_LTTNG_FIELDS_A fields (0)
#define RL_LTTNG_FIELDS_A(more, ...) RL_CAT(RL_LTTNG_FIELDS_A_, more)(__VA_ARGS__)
#define RL_LTTNG_FIELDS_B(more, ...) RL_CAT(RL_LTTNG_FIELDS_B_, more)(__VA_ARGS__)
#define RL_LTTNG_FIELDS_A_0()
#define RL_LTTNG_FIELDS_B_0()
#define RL_LTTNG_FIELDS_A_1(type, name, enumeration) RL_LTTNG_FIELD_##type(name, enumeration) RL_LTTNG_FIELDS_B
#define RL_LTTNG_FIELDS_B_1(type, name, enumeration) RL_LTTNG_FIELD_##type(name, enumeration) RL_LTTNG_FIELDS_A

#define RL_LABEL(label, value) lttng_ust_field_enum_value(#label, value)
#define RL_ENUM(name, labels) LTTNG_UST_TRACEPOINT_ENUM(runloop, name, LTTNG_UST_TP_ENUM_VALUES(labels))
#define RL_FIELD RL_FIELD_TUPLE
#define RL_ENUM_FIELD RL_ENUM_FIELD_TUPLE
#define RL_ARRAY_FIELD RL_ARRAY_FIELD_TUPLE
/* A class keeps its LTTng name, `<class>_class` (activity_class). */
#define RL_EVENT_CLASS(class, fields)                                                    \
    LTTNG_UST_TRACEPOINT_EVENT_CLASS(runloop, class##_class,                             \
        LTTNG_UST_TP_ARGS(RL_LTTNG_ARGS(fields)), LTTNG_UST_TP_FIELDS(RL_LTTNG_FIELDS(fields)))
#define RL_EVENT_IN_CLASS(id, name, class, fields)                                       \
    LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, class##_class, runloop, name,           \
        LTTNG_UST_TP_ARGS(RL_LTTNG_ARGS(fields)))
#define RL_EVENT(id, name, fields)                                                       \
    LTTNG_UST_TRACEPOINT_EVENT(runloop, name,                                            \
        LTTNG_UST_TP_ARGS(RL_LTTNG_ARGS(fields)), LTTNG_UST_TP_FIELDS(RL_LTTNG_FIELDS(fields)))
#include "runloop_events.def"

#endif /* RUNLOOP_PROVIDER_H */

#include <lttng/tracepoint-event.h>

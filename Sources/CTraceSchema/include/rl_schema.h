/*
 * The `runloop` trace schema as data: runloop_events.def expanded into constant tables (rl_schema.c), plus the
 * helper macros every C expansion of the .def shares (a field type's C type and size).
 *
 * Swift reads the table through the accessor functions (TraceSchema.events is built from them at run time);
 * C consumers include runloop_events.def themselves with their own macro meanings.
 */
#ifndef RL_SCHEMA_H
#define RL_SCHEMA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// How a field is encoded.
typedef enum rl_field_type : uint8_t {
    RL_TYPE_U8 = 0,
    RL_TYPE_U32 = 1,
    RL_TYPE_S32 = 2,
    RL_TYPE_U64 = 3,
    RL_TYPE_S64 = 4,
    /// NUL-terminated UTF-8.
    RL_TYPE_STRING = 5,
    /// A u8 holding a value of an enumeration (rl_schema_field.enumeration).
    RL_TYPE_ENUM_U8 = 6,
} rl_field_type;

typedef struct rl_schema_label {
    const char *label;
    int64_t value;
} rl_schema_label;

typedef struct rl_schema_enum {
    const char *name;
    const rl_schema_label *labels;
    uint32_t label_count;
} rl_schema_enum;

typedef struct rl_schema_field {
    const char *name;
    rl_field_type type;
    /// Index in rl_schema_enums for RL_TYPE_ENUM_U8, -1 otherwise.
    int32_t enumeration;
    /// For an RL_ARRAY_FIELD (a sequence of `type`): the name of the event's u32 field that counts its elements.
    /// NULL for a single value.
    const char *length;
} rl_schema_field;

typedef struct rl_schema_event {
    uint32_t id;
    const char *name;
    /// The event class it belongs to (LTTng: one class, several events), or NULL.
    const char *event_class;
    const rl_schema_field *fields;
    uint32_t field_count;
} rl_schema_event;

/// Every event, in id order (rl_schema_events[i].id == i).
extern const rl_schema_event rl_schema_events[];
extern const uint32_t rl_schema_event_count;
extern const rl_schema_enum rl_schema_enums[];
extern const uint32_t rl_schema_enum_count;

/// Swift's way in (it does not import arrays of unknown size).
const rl_schema_event *rl_schema_event_at(uint32_t index);
const rl_schema_enum *rl_schema_enum_at(uint32_t index);
/// The most fields any event has (RL_SCHEMA_MAX_FIELDS).
uint32_t rl_schema_max_fields(void);

/// Event ids as C constants (RL_EVENT_entry, RL_EVENT_run_begin, …), and their number.
typedef enum rl_event_id : uint32_t {
#define RL_EVENT(id, name, fields) RL_EVENT_##name = id,
#define RL_EVENT_IN_CLASS(id, name, class, fields) RL_EVENT_##name = id,
#include "runloop_events.def"
    RL_EVENT_COUNT
} rl_event_id;

// ===== helpers for expansions of runloop_events.def =====

/// A field type's C type (parameters of the encoders and tracepoints).
#define RL_CTYPE_u8 uint8_t
#define RL_CTYPE_u32 uint32_t
#define RL_CTYPE_s32 int32_t
#define RL_CTYPE_u64 uint64_t
#define RL_CTYPE_s64 int64_t
#define RL_CTYPE_string const char *
/// Enumerations are stored as u8.
#define RL_CTYPE_enum uint8_t
/// Arrays (RL_ARRAY_FIELD) are passed as a pointer to their first element.
#define RL_CTYPE_u8_array const uint8_t *
#define RL_CTYPE_u32_array const uint32_t *
#define RL_CTYPE_s32_array const int32_t *
#define RL_CTYPE_u64_array const uint64_t *
#define RL_CTYPE_s64_array const int64_t *

/// The table's type constant for a field type.
#define RL_TYPE_u8 RL_TYPE_U8
#define RL_TYPE_u32 RL_TYPE_U32
#define RL_TYPE_s32 RL_TYPE_S32
#define RL_TYPE_u64 RL_TYPE_U64
#define RL_TYPE_s64 RL_TYPE_S64
#define RL_TYPE_string RL_TYPE_STRING

/// Field lists expand to `, a, b, c`: this drops the leading comma (RL_DROP_FIRST(_ fields) gives `a, b, c`).
#define RL_DROP_FIRST(...) RL_DROP_FIRST_(__VA_ARGS__)
#define RL_DROP_FIRST_(first, ...) __VA_ARGS__
#define RL_CAT(a, b) RL_CAT_(a, b)
#define RL_CAT_(a, b) a##b

/// An expansion that needs an event's fields in several ways at once (a parameter list, a size, the stores)
/// defines RL_FIELD and RL_ENUM_FIELD as RL_FIELD_TUPLE and RL_ENUM_FIELD_TUPLE: the fields become a sequence
/// `(1, u64, loop_id, -)(1, enum, result, run_result)…`, walked once per use by an iterator:
///
///     #define X(fields) X_A fields (0)                          // (0) ends the walk
///     #define X_A(more, ...) RL_CAT(X_A_, more)(__VA_ARGS__)
///     #define X_B(more, ...) RL_CAT(X_B_, more)(__VA_ARGS__)
///     #define X_A_0()
///     #define X_B_0()
///     #define X_A_1(type, name, enumeration) <this field's text> X_B
///     #define X_B_1(type, name, enumeration) <this field's text> X_A
///
/// (each step leaves the other step's name for the next tuple to call: a macro cannot call itself).
#define RL_FIELD_TUPLE(name, type) (1, type, name, -)
#define RL_ENUM_FIELD_TUPLE(name, enumeration) (1, enum, name, enumeration)
/// An array's tuple: its type is `<element>_array`, and its last slot names its length field.
#define RL_ARRAY_FIELD_TUPLE(name, type, length) (1, type##_array, name, length)

/// `ctype name, ctype name, …` (function parameters).
#define RL_PARAMS(fields) RL_DROP_FIRST(_ RL_MORE_PARAMS(fields))
/// `, ctype name, ctype name` (parameters after a first one).
#define RL_MORE_PARAMS(fields) RL_PARAMS_A fields (0)
#define RL_PARAMS_A(more, ...) RL_CAT(RL_PARAMS_A_, more)(__VA_ARGS__)
#define RL_PARAMS_B(more, ...) RL_CAT(RL_PARAMS_B_, more)(__VA_ARGS__)
#define RL_PARAMS_A_0()
#define RL_PARAMS_B_0()
#define RL_PARAMS_A_1(type, name, enumeration) , RL_CTYPE_##type name RL_PARAMS_B
#define RL_PARAMS_B_1(type, name, enumeration) , RL_CTYPE_##type name RL_PARAMS_A

/// `name, name, …` (call arguments).
#define RL_ARGS(fields) RL_DROP_FIRST(_ RL_MORE_ARGS(fields))
/// `, name, name` (arguments after a first one).
#define RL_MORE_ARGS(fields) RL_ARGS_A fields (0)
#define RL_ARGS_A(more, ...) RL_CAT(RL_ARGS_A_, more)(__VA_ARGS__)
#define RL_ARGS_B(more, ...) RL_CAT(RL_ARGS_B_, more)(__VA_ARGS__)
#define RL_ARGS_A_0()
#define RL_ARGS_B_0()
#define RL_ARGS_A_1(type, name, enumeration) , name RL_ARGS_B
#define RL_ARGS_B_1(type, name, enumeration) , name RL_ARGS_A

/// The most fields of any event, as a constant expression (the size of a union of one char per field of each
/// event), for arrays that hold one value per field.
union rl_schema_field_counts {
#define RL_FIELD(name, type) + 1
#define RL_ENUM_FIELD(name, enumeration) + 1
#define RL_ARRAY_FIELD(name, type, length) + 1
#define RL_EVENT(id, name, fields) char name[0 fields];
#define RL_EVENT_CLASS(class, fields) char class##_class[0 fields];
#include "runloop_events.def"
};
#define RL_SCHEMA_MAX_FIELDS (sizeof(union rl_schema_field_counts))

#ifdef __cplusplus
}
#endif

#endif /* RL_SCHEMA_H */

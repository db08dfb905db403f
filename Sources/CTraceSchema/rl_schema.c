// runloop_events.def expanded into the constant schema table (rl_schema.h).
#include "rl_schema.h"

#include <stddef.h>

// Each enumeration's index in rl_schema_enums, for fields that refer to it by name.
enum {
#define RL_ENUM(name, labels) RL_ENUM_INDEX_##name,
#include "runloop_events.def"
    RL_ENUM_TABLE_COUNT
};

// The labels of each enumeration.
#define RL_LABEL(label, value) { #label, value },
#define RL_ENUM(name, labels) static const rl_schema_label rl_labels_##name[] = { labels };
#include "runloop_events.def"

const rl_schema_enum rl_schema_enums[] = {
#define RL_ENUM(name, labels) \
    { #name, rl_labels_##name, (uint32_t)(sizeof rl_labels_##name / sizeof rl_labels_##name[0]) },
#include "runloop_events.def"
};
const uint32_t rl_schema_enum_count = RL_ENUM_TABLE_COUNT;

// The fields of each class and of each event that has its own.
#define RL_FIELD(name, type) { #name, RL_TYPE_##type, -1, NULL },
#define RL_ENUM_FIELD(name, enumeration) { #name, RL_TYPE_ENUM_U8, RL_ENUM_INDEX_##enumeration, NULL },
#define RL_ARRAY_FIELD(name, type, length) { #name, RL_TYPE_##type, -1, #length },
#define RL_EVENT_CLASS(class, fields) static const rl_schema_field rl_class_fields_##class[] = { fields };
#define RL_EVENT(id, name, fields) static const rl_schema_field rl_event_fields_##name[] = { fields };
#include "runloop_events.def"

#define RL_FIELD_COUNT(array) (uint32_t)(sizeof array / sizeof array[0])
const rl_schema_event rl_schema_events[] = {
#define RL_EVENT_IN_CLASS(id, name, class, fields) \
    { id, #name, #class, rl_class_fields_##class, RL_FIELD_COUNT(rl_class_fields_##class) },
#define RL_EVENT(id, name, fields) { id, #name, NULL, rl_event_fields_##name, RL_FIELD_COUNT(rl_event_fields_##name) },
#include "runloop_events.def"
};
const uint32_t rl_schema_event_count = RL_EVENT_COUNT;

// Ids run from 0 without gaps, in the order of the .def: the recorder indexes by id, readers look ids up.
enum {
#define RL_EVENT(id, name, fields) rl_position_##name,
#define RL_EVENT_IN_CLASS(id, name, class, fields) rl_position_##name,
#include "runloop_events.def"
};
#define RL_EVENT(id, name, fields) \
    _Static_assert(id == rl_position_##name, "runloop_events.def: event " #name "'s id is not its position");
#define RL_EVENT_IN_CLASS(id, name, class, fields) \
    _Static_assert(id == rl_position_##name, "runloop_events.def: event " #name "'s id is not its position");
#include "runloop_events.def"
_Static_assert(sizeof rl_schema_events / sizeof rl_schema_events[0] == RL_EVENT_COUNT, "one table row per event");

const rl_schema_event *rl_schema_event_at(uint32_t index) {
    return index < rl_schema_event_count ? &rl_schema_events[index] : NULL;
}

const rl_schema_enum *rl_schema_enum_at(uint32_t index) {
    return index < rl_schema_enum_count ? &rl_schema_enums[index] : NULL;
}

uint32_t rl_schema_max_fields(void) { return (uint32_t)RL_SCHEMA_MAX_FIELDS; }

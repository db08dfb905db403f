// The CTF reader's babeltrace2 graph: src.ctf.fs sources -> flt.utils.muxer -> this file's sink component,
// which flattens each message into an rl_ctf_record batch for Swift. Built against libbabeltrace2 only when
// Package.swift found libbabeltrace2-dev (it then passes -DRLCTL_HAVE_BABELTRACE2); a stub otherwise.
#define _GNU_SOURCE /* vasprintf */
#include "rl_ctf_reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rl_ctf_free_string(char *string) { free(string); }

#ifdef RLCTL_HAVE_BABELTRACE2

#include <babeltrace2/babeltrace.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

// libbabeltrace2 objects are not thread-safe (plain reference counts, a plugin registry without locks), and
// the component classes below are shared by every reader: every call into the library holds this lock.
static pthread_mutex_t rl_bt_lock = PTHREAD_MUTEX_INITIALIZER;
static const bt_plugin *rl_ctf_plugin;
static const bt_plugin *rl_utils_plugin;
static const bt_component_class_source *rl_fs_class;
static const bt_component_class_filter *rl_muxer_class;

int rl_ctf_available(void) { return 1; }

static char *rl_format(const char *format, ...) __attribute__((format(printf, 1, 2)));
static char *rl_format(const char *format, ...) {
    va_list args;
    va_start(args, format);
    char *text = NULL;
    if (vasprintf(&text, format, args) < 0) text = NULL;
    va_end(args);
    return text;
}

/// What to do with the events of one event class, worked out the first time one is seen.
typedef struct rl_class_info {
    const bt_event_class *key;
    /// The schema's event id, or -1 to skip (another provider's event, or one the schema does not have).
    int event;
    /// Member indexes in the payload structure, by the position of the field in the schema table.
    uint64_t field_index[RL_SCHEMA_MAX_FIELDS];
    /// Member index of `vtid`/`tid` in the event common context, and of `tid`/`vtid` in the packet context.
    int64_t context_tid;
    int64_t packet_tid;
    /// Member index of `vpid`/`pid` in the event common context (-1: none).
    int64_t context_pid;
    int has_clock;
    uint64_t frequency;
    /// Set when the class does not match the schema: reading one of its events is an error.
    char *problem;
} rl_class_info;

/// One babeltrace2 graph reading traces in this process (the reader's child process, or the fallback).
typedef struct rl_graph {
    bt_graph *graph;
    int finished;
    int failed;
    char *error;
    /// Set by the sink when a message cannot be flattened (the graph then fails with our own message).
    char *sink_error;

    rl_ctf_record *records;
    size_t record_count;
    size_t record_capacity;
    /// Text of this batch; records hold offsets into it until the batch is handed out.
    char *text;
    size_t text_length;
    size_t text_capacity;

    rl_class_info *classes;
    size_t class_count;
    size_t class_capacity;
    size_t last_class;

    /// The stream names already in this batch's text (LTTng writes one stream per CPU: as many as it takes, so
    /// no event carries its stream's path again).
    struct rl_batch_stream {
        const bt_stream *stream;
        uint64_t offset;
        uint64_t length;
    } *batch_streams;
    size_t batch_stream_count;
    size_t batch_stream_capacity;
} rl_graph;

// ===== small helpers =====

static int rl_reserve(void **buffer, size_t *capacity, size_t needed, size_t element) {
    if (needed <= *capacity) return 0;
    size_t grown = *capacity ? *capacity : 64;
    while (grown < needed) {
        if (grown > SIZE_MAX / 2 / element) return -1;
        grown *= 2;
    }
    void *moved = realloc(*buffer, grown * element);
    if (!moved) return -1;
    *buffer = moved;
    *capacity = grown;
    return 0;
}

static void rl_set_sink_error(rl_graph *reader, char *message) {
    if (reader->sink_error) {
        free(message);
        return;
    }
    reader->sink_error = message ? message : strdup("out of memory");
}

/// Appends `length` bytes of text to the batch; returns its offset, or -1 without memory.
static int64_t rl_append_text(rl_graph *reader, const char *text, size_t length) {
    if (rl_reserve((void **)&reader->text, &reader->text_capacity, reader->text_length + length + 1, 1) != 0)
        return -1;
    size_t offset = reader->text_length;
    memcpy(reader->text + offset, text, length);
    reader->text[offset + length] = 0;
    reader->text_length += length + 1;
    return (int64_t)offset;
}

static rl_ctf_record *rl_new_record(rl_graph *reader) {
    if (rl_reserve((void **)&reader->records, &reader->record_capacity, reader->record_count + 1,
                   sizeof(rl_ctf_record)) != 0)
        return NULL;
    rl_ctf_record *record = &reader->records[reader->record_count++];
    memset(record, 0, sizeof *record);
    return record;
}

static uint64_t rl_to_ns(uint64_t cycles, uint64_t frequency) {
    if (frequency == 1000000000ULL || frequency == 0) return cycles;
    unsigned __int128 scaled = (unsigned __int128)cycles * 1000000000ULL / frequency;
    return scaled > UINT64_MAX ? UINT64_MAX : (uint64_t)scaled;
}

static uint64_t rl_snapshot_ns(const bt_clock_snapshot *snapshot) {
    const bt_clock_class *clock = bt_clock_snapshot_borrow_clock_class_const(snapshot);
    return rl_to_ns(bt_clock_snapshot_get_value(snapshot), bt_clock_class_get_frequency(clock));
}

static int rl_is_integer_class(const bt_field_class *field_class) {
    bt_field_class_type type = bt_field_class_get_type(field_class);
    return bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_INTEGER) || type == BT_FIELD_CLASS_TYPE_BOOL;
}

/// Reads an integer, enumeration or boolean field as 64 bits (two's complement when signed).
static int rl_read_integer(const bt_field *field, uint64_t *value) {
    bt_field_class_type type = bt_field_get_class_type(field);
    if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
        *value = bt_field_integer_unsigned_get_value(field);
    } else if (bt_field_class_type_is(type, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
        *value = (uint64_t)bt_field_integer_signed_get_value(field);
    } else if (type == BT_FIELD_CLASS_TYPE_BOOL) {
        *value = bt_field_bool_get_value(field) ? 1 : 0;
    } else {
        return -1;
    }
    return 0;
}

/// What a schema field needs of a member's class.
enum { RL_WANT_STRING = 0, RL_WANT_INTEGER = 1, RL_WANT_ARRAY = 2 };

static int rl_is_integer_array_class(const bt_field_class *field_class) {
    return bt_field_class_type_is(bt_field_class_get_type(field_class), BT_FIELD_CLASS_TYPE_ARRAY) &&
           rl_is_integer_class(bt_field_class_array_borrow_element_field_class_const(field_class));
}

/// Appends an array of integers to the batch's text as 64-bit words, its length first (CTFTraceReader.swift
/// reads them back); returns its offset, or -1 on an error (set).
static int64_t rl_append_array(rl_graph *reader, const bt_field *array) {
    uint64_t length = bt_field_array_get_length(array);
    size_t bytes = (size_t)(length + 1) * sizeof(uint64_t);
    // Word-aligned in the text, so that the words are written (and read) whole.
    size_t padding = (8 - reader->text_length % 8) % 8;
    if (rl_reserve((void **)&reader->text, &reader->text_capacity, reader->text_length + padding + bytes + 1, 1) != 0)
        return -1;
    memset(reader->text + reader->text_length, 0, padding);
    size_t offset = reader->text_length + padding;
    memcpy(reader->text + offset, &length, sizeof length);
    for (uint64_t index = 0; index < length; index++) {
        uint64_t value;
        if (rl_read_integer(bt_field_array_borrow_element_field_by_index_const(array, index), &value) != 0) return -1;
        memcpy(reader->text + offset + (size_t)(index + 1) * sizeof value, &value, sizeof value);
    }
    reader->text[offset + bytes] = 0;
    reader->text_length = offset + bytes + 1;
    return (int64_t)offset;
}

/// The index of the member called `name` in a structure field class, or -1.
static int64_t rl_member_index(const bt_field_class *structure, const char *name, int want) {
    if (!structure || bt_field_class_get_type(structure) != BT_FIELD_CLASS_TYPE_STRUCTURE) return -1;
    uint64_t count = bt_field_class_structure_get_member_count(structure);
    for (uint64_t index = 0; index < count; index++) {
        const bt_field_class_structure_member *member =
            bt_field_class_structure_borrow_member_by_index_const(structure, index);
        const char *member_name = bt_field_class_structure_member_get_name(member);
        if (!member_name || strcmp(member_name, name) != 0) continue;
        const bt_field_class *member_class = bt_field_class_structure_member_borrow_field_class_const(member);
        if (want == RL_WANT_INTEGER && !rl_is_integer_class(member_class)) return -1;
        if (want == RL_WANT_ARRAY && !rl_is_integer_array_class(member_class)) return -1;
        if (want == RL_WANT_STRING && bt_field_class_get_type(member_class) != BT_FIELD_CLASS_TYPE_STRING) return -1;
        return (int64_t)index;
    }
    return -1;
}

static int64_t rl_tid_member(const bt_field_class *structure, const char *first, const char *second) {
    int64_t index = rl_member_index(structure, first, RL_WANT_INTEGER);
    return index >= 0 ? index : rl_member_index(structure, second, RL_WANT_INTEGER);
}

/// Which `runloop` event an event class is: `runloop:<event>` or a bare `<event>`; -1 for anything else.
static int rl_event_for_name(const char *name) {
    if (!name) return -1;
    static const char prefix[] = "runloop:";
    if (strncmp(name, prefix, sizeof prefix - 1) == 0) {
        name += sizeof prefix - 1;
    } else if (strchr(name, ':')) {
        return -1;
    }
    for (uint32_t event = 0; event < rl_schema_event_count; event++) {
        if (strcmp(name, rl_schema_events[event].name) == 0) return (int)event;
    }
    return -1;
}

static void rl_describe_class(rl_class_info *info, const bt_event_class *event_class) {
    memset(info, 0, sizeof *info);
    info->key = event_class;
    info->context_tid = -1;
    info->packet_tid = -1;
    info->context_pid = -1;
    const char *name = bt_event_class_get_name(event_class);
    info->event = rl_event_for_name(name);
    if (info->event < 0) return;

    const rl_schema_event *schema = &rl_schema_events[info->event];
    const bt_field_class *payload = bt_event_class_borrow_payload_field_class_const(event_class);
    for (uint32_t field = 0; field < schema->field_count; field++) {
        int want = schema->fields[field].length ? RL_WANT_ARRAY
                 : schema->fields[field].type == RL_TYPE_STRING ? RL_WANT_STRING : RL_WANT_INTEGER;
        int64_t index = rl_member_index(payload, schema->fields[field].name, want);
        if (index < 0) {
            static const char *const wanted[] = { "a string", "an integer", "an integer array" };
            info->problem = rl_format("event `%s` is declared without %s field `%s`", name, wanted[want],
                                      schema->fields[field].name);
            return;
        }
        info->field_index[field] = (uint64_t)index;
    }

    const bt_stream_class *stream_class = bt_event_class_borrow_stream_class_const(event_class);
    info->context_tid = rl_tid_member(bt_stream_class_borrow_event_common_context_field_class_const(stream_class),
                                      "vtid", "tid");
    info->context_pid = rl_tid_member(bt_stream_class_borrow_event_common_context_field_class_const(stream_class),
                                      "vpid", "pid");
    if (bt_stream_class_supports_packets(stream_class)) {
        info->packet_tid = rl_tid_member(bt_stream_class_borrow_packet_context_field_class_const(stream_class),
                                         "tid", "vtid");
    }
    const bt_clock_class *clock = bt_stream_class_borrow_default_clock_class_const(stream_class);
    if (clock) {
        info->has_clock = 1;
        info->frequency = bt_clock_class_get_frequency(clock);
    }
}

static rl_class_info *rl_class_info_for(rl_graph *reader, const bt_event_class *event_class) {
    // Traces have a few dozen classes at most: a linear search, starting with the last one found.
    if (reader->last_class < reader->class_count && reader->classes[reader->last_class].key == event_class)
        return &reader->classes[reader->last_class];
    for (size_t index = 0; index < reader->class_count; index++) {
        if (reader->classes[index].key == event_class) {
            reader->last_class = index;
            return &reader->classes[index];
        }
    }
    if (rl_reserve((void **)&reader->classes, &reader->class_capacity, reader->class_count + 1,
                   sizeof(rl_class_info)) != 0)
        return NULL;
    rl_class_info *info = &reader->classes[reader->class_count++];
    rl_describe_class(info, event_class);
    reader->last_class = reader->class_count - 1;
    return info;
}

static int rl_read_tid(const bt_field *structure, int64_t index, int32_t *tid) {
    if (!structure || index < 0) return 0;
    if ((uint64_t)index >= bt_field_class_structure_get_member_count(bt_field_borrow_class_const(structure))) return 0;
    uint64_t value = 0;
    if (rl_read_integer(bt_field_structure_borrow_member_field_by_index_const(structure, (uint64_t)index), &value) != 0)
        return 0;
    *tid = (int32_t)(int64_t)value;
    return 1;
}

// ===== flattening messages =====

/// Puts the stream's name in the batch's text (once per batch): its name, which src.ctf.fs sets to the data
/// file's path, else the trace's name and the stream id.
static int rl_stream_name(rl_graph *reader, const bt_stream *stream, uint64_t *offset, uint64_t *length) {
    for (size_t index = 0; index < reader->batch_stream_count; index++) {
        if (reader->batch_streams[index].stream == stream) {
            *offset = reader->batch_streams[index].offset;
            *length = reader->batch_streams[index].length;
            return 0;
        }
    }
    const char *name = bt_stream_get_name(stream);
    char *owned = NULL;
    if (!name) {
        const char *trace = bt_trace_get_name(bt_stream_borrow_trace_const(stream));
        owned = rl_format("%s stream %llu", trace ? trace : "trace", (unsigned long long)bt_stream_get_id(stream));
        if (!owned) return -1;
        name = owned;
    }
    size_t name_length = strlen(name);
    int64_t appended = rl_append_text(reader, name, name_length);
    free(owned);
    if (appended < 0) return -1;
    *offset = (uint64_t)appended;
    *length = name_length;
    if (rl_reserve((void **)&reader->batch_streams, &reader->batch_stream_capacity, reader->batch_stream_count + 1,
                   sizeof *reader->batch_streams) != 0) return -1;
    reader->batch_streams[reader->batch_stream_count++] = (struct rl_batch_stream){stream, *offset, *length};
    return 0;
}

/// Sets the record's stream (and, for losses, its text) to the stream's name: offsets until the batch is done.
static int rl_set_stream(rl_graph *reader, rl_ctf_record *record, const bt_stream *stream, int as_text) {
    uint64_t offset, length;
    if (rl_stream_name(reader, stream, &offset, &length) != 0) return -1;
    record->stream = (const char *)(uintptr_t)offset;
    record->stream_length = length;
    if (as_text) {
        record->text = record->stream;
        record->text_length = length;
    }
    return 0;
}


static int rl_flatten_event(rl_graph *reader, const bt_message *message) {
    const bt_event *event = bt_message_event_borrow_event_const(message);
    const bt_event_class *event_class = bt_event_borrow_class_const(event);
    rl_class_info *info = rl_class_info_for(reader, event_class);
    if (!info) return -1;
    if (info->event < 0) return 0;
    if (info->problem) {
        // The metadata declared it: name that file (streams are named after their data file, in the trace folder).
        const char *stream = bt_stream_get_name(bt_event_borrow_stream_const(event));
        const char *slash = stream ? strrchr(stream, '/') : NULL;
        rl_set_sink_error(reader, slash ? rl_format("%s in `%.*s/metadata`", info->problem, (int)(slash - stream), stream)
                                        : strdup(info->problem));
        return -1;
    }
    const rl_schema_event *schema = &rl_schema_events[info->event];
    const bt_field *payload = bt_event_borrow_payload_field_const(event);
    if (!payload) {
        rl_set_sink_error(reader, rl_format("event `%s` has no payload", bt_event_class_get_name(event_class)));
        return -1;
    }
    rl_ctf_record *record = rl_new_record(reader);
    if (!record) return -1;
    record->kind = RL_CTF_RECORD_EVENT;
    record->event = (uint8_t)info->event;
    uint64_t members = bt_field_class_structure_get_member_count(bt_field_borrow_class_const(payload));
    for (uint32_t field = 0; field < schema->field_count; field++) {
        const bt_field *member = info->field_index[field] < members
            ? bt_field_structure_borrow_member_field_by_index_const(payload, info->field_index[field]) : NULL;
        if (schema->fields[field].length) {
            int64_t offset = member && bt_field_class_type_is(bt_field_get_class_type(member), BT_FIELD_CLASS_TYPE_ARRAY)
                ? rl_append_array(reader, member) : -1;
            if (offset < 0) {
                rl_set_sink_error(reader, rl_format("event `%s`: field `%s` is not an array of integers",
                                                    bt_event_class_get_name(event_class), schema->fields[field].name));
                return -1;
            }
            record->values[field] = (uint64_t)offset;
            continue;
        }
        if (schema->fields[field].type != RL_TYPE_STRING) {
            if (!member || rl_read_integer(member, &record->values[field]) != 0) {
                rl_set_sink_error(reader, rl_format("event `%s`: field `%s` is not an integer",
                                                    bt_event_class_get_name(event_class), schema->fields[field].name));
                return -1;
            }
            continue;
        }
        if (!member || bt_field_get_class_type(member) != BT_FIELD_CLASS_TYPE_STRING) {
            rl_set_sink_error(reader, rl_format("event `%s`: field `%s` is not a string",
                                                bt_event_class_get_name(event_class), schema->fields[field].name));
            return -1;
        }
        const char *value = bt_field_string_get_value(member);
        uint64_t length = bt_field_string_get_length(member);
        // An offset into the batch's text, NUL-terminated there.
        int64_t offset = rl_append_text(reader, value ? value : "", value ? (size_t)length : 0);
        if (offset < 0) return -1;
        record->values[field] = (uint64_t)offset;
    }
    int32_t tid = 0;
    if (!rl_read_tid(bt_event_borrow_common_context_field_const(event), info->context_tid, &tid) &&
        info->packet_tid >= 0) {
        const bt_packet *packet = bt_event_borrow_packet_const(event);
        if (packet) rl_read_tid(bt_packet_borrow_context_field_const(packet), info->packet_tid, &tid);
    }
    record->tid = tid;
    int32_t pid = 0;
    rl_read_tid(bt_event_borrow_common_context_field_const(event), info->context_pid, &pid);
    record->pid = pid;
    if (rl_set_stream(reader, record, bt_event_borrow_stream_const(event), 0) != 0) return -1;
    if (info->has_clock) {
        const bt_clock_snapshot *snapshot = bt_message_event_borrow_default_clock_snapshot_const(message);
        record->timestamp = rl_to_ns(bt_clock_snapshot_get_value(snapshot), info->frequency);
    }
    return 0;
}

static int rl_flatten_discarded(rl_graph *reader, const bt_message *message, int packets) {
    rl_ctf_record *record = rl_new_record(reader);
    if (!record) return -1;
    const bt_stream *stream;
    uint64_t count = 0;
    bt_property_availability availability;
    const bt_clock_snapshot *begin = NULL, *end = NULL;
    if (packets) {
        record->kind = RL_CTF_RECORD_DISCARDED_PACKETS;
        stream = bt_message_discarded_packets_borrow_stream_const(message);
        availability = bt_message_discarded_packets_get_count(message, &count);
        if (bt_stream_class_discarded_packets_have_default_clock_snapshots(bt_stream_borrow_class_const(stream))) {
            begin = bt_message_discarded_packets_borrow_beginning_default_clock_snapshot_const(message);
            end = bt_message_discarded_packets_borrow_end_default_clock_snapshot_const(message);
        }
    } else {
        record->kind = RL_CTF_RECORD_DISCARDED_EVENTS;
        stream = bt_message_discarded_events_borrow_stream_const(message);
        availability = bt_message_discarded_events_get_count(message, &count);
        if (bt_stream_class_discarded_events_have_default_clock_snapshots(bt_stream_borrow_class_const(stream))) {
            begin = bt_message_discarded_events_borrow_beginning_default_clock_snapshot_const(message);
            end = bt_message_discarded_events_borrow_end_default_clock_snapshot_const(message);
        }
    }
    record->count_known = availability == BT_PROPERTY_AVAILABILITY_AVAILABLE;
    record->values[0] = record->count_known ? count : 0;
    if (begin && end) {
        record->has_time = 1;
        record->timestamp = rl_snapshot_ns(begin);
        record->end_timestamp = rl_snapshot_ns(end);
    }
    return rl_set_stream(reader, record, stream, 1);
}

// ===== the sink component (babeltrace2's "simple sink": our own consume function) =====

static bt_graph_simple_sink_component_initialize_func_status rl_sink_initialize(bt_message_iterator *iterator,
                                                                                void *data) {
    (void)iterator;
    (void)data;
    return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

static bt_graph_simple_sink_component_consume_func_status rl_sink_consume(bt_message_iterator *iterator,
                                                                          void *data) {
    rl_graph *reader = data;
    bt_message_array_const messages;
    uint64_t count = 0;
    switch (bt_message_iterator_next(iterator, &messages, &count)) {
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
        break;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
    default:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
    }
    int failed = 0;
    for (uint64_t index = 0; index < count; index++) {
        const bt_message *message = messages[index];
        if (!failed) {
            switch (bt_message_get_type(message)) {
            case BT_MESSAGE_TYPE_EVENT:
                failed = rl_flatten_event(reader, message) != 0;
                break;
            case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
                failed = rl_flatten_discarded(reader, message, 0) != 0;
                break;
            case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
                failed = rl_flatten_discarded(reader, message, 1) != 0;
                break;
            default:
                break;
            }
        }
        bt_message_put_ref(message);
    }
    if (failed) {
        if (!reader->sink_error) rl_set_sink_error(reader, strdup("out of memory"));
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
    }
    return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

// ===== errors =====

/// Takes the calling thread's babeltrace2 error and releases it. Renders its causes as a chain, most general
/// first ("cannot open X: Cannot create trace: Failed to index stream file Y"), leaving out the library's own
/// causes (addresses and internal state) when a component said what went wrong.
static char *rl_take_error(const char *context) {
    const bt_error *error = bt_current_thread_take_error();
    if (!error) return strdup(context);
    uint64_t causes = bt_error_get_cause_count(error);
    int have_component_cause = 0;
    for (uint64_t index = 0; index < causes; index++) {
        const bt_error_cause *cause = bt_error_borrow_cause_by_index(error, index);
        if (bt_error_cause_get_actor_type(cause) != BT_ERROR_CAUSE_ACTOR_TYPE_UNKNOWN) have_component_cause = 1;
    }
    char *text = strdup(context);
    // Index 0 is the root cause; later causes were appended by the callers, on the way out.
    for (uint64_t index = causes; text && index-- > 0;) {
        const bt_error_cause *cause = bt_error_borrow_cause_by_index(error, index);
        if (have_component_cause && bt_error_cause_get_actor_type(cause) == BT_ERROR_CAUSE_ACTOR_TYPE_UNKNOWN)
            continue;
        const char *message = bt_error_cause_get_message(cause);
        if (!message || !*message) continue;
        size_t length = strlen(message);
        while (length && (message[length - 1] == '.' || message[length - 1] == '\n')) length--;
        char *longer = rl_format("%s: %.*s", text, (int)length, message);
        free(text);
        text = longer;
    }
    bt_error_release(error);
    return text;
}

// ===== opening =====

/// Finds and keeps the `ctf` and `utils` plugins' component classes (lock held).
static char *rl_load_classes(void) {
    if (rl_fs_class && rl_muxer_class) return NULL;
    if (!rl_ctf_plugin &&
        bt_plugin_find("ctf", BT_TRUE, BT_FALSE, BT_TRUE, BT_FALSE, BT_FALSE, &rl_ctf_plugin) !=
            BT_PLUGIN_FIND_STATUS_OK) {
        bt_current_thread_clear_error();
        rl_ctf_plugin = NULL;
        return strdup("babeltrace2's `ctf` plugin was not found (is the babeltrace2 package installed?)");
    }
    if (!rl_utils_plugin &&
        bt_plugin_find("utils", BT_TRUE, BT_FALSE, BT_TRUE, BT_FALSE, BT_FALSE, &rl_utils_plugin) !=
            BT_PLUGIN_FIND_STATUS_OK) {
        bt_current_thread_clear_error();
        rl_utils_plugin = NULL;
        return strdup("babeltrace2's `utils` plugin was not found (is the babeltrace2 package installed?)");
    }
    rl_fs_class = bt_plugin_borrow_source_component_class_by_name_const(rl_ctf_plugin, "fs");
    rl_muxer_class = bt_plugin_borrow_filter_component_class_by_name_const(rl_utils_plugin, "muxer");
    if (!rl_fs_class || !rl_muxer_class) {
        rl_fs_class = NULL;
        rl_muxer_class = NULL;
        return strdup("babeltrace2's plugins lack the `src.ctf.fs` or `flt.utils.muxer` component class");
    }
    return NULL;
}

static char *rl_build_graph(rl_graph *reader, const char *const *trace_dirs, size_t count) {
    char *problem = rl_load_classes();
    if (problem) return problem;
    reader->graph = bt_graph_create(0);
    if (!reader->graph) return strdup("out of memory");

    const bt_component_source **sources = calloc(count ? count : 1, sizeof *sources);
    if (!sources) return strdup("out of memory");
    for (size_t index = 0; index < count; index++) {
        bt_value *params = bt_value_map_create();
        bt_value *inputs = NULL;
        int ok = params && bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) ==
                               BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK &&
                 bt_value_array_append_string_element(inputs, trace_dirs[index]) ==
                     BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK;
        if (!ok) {
            bt_value_put_ref(params);
            free(sources);
            return strdup("out of memory");
        }
        char name[32];
        snprintf(name, sizeof name, "source-%zu", index);
        bt_graph_add_component_status status = bt_graph_add_source_component(
            reader->graph, rl_fs_class, name, params, BT_LOGGING_LEVEL_NONE, &sources[index]);
        bt_value_put_ref(params);
        if (status != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
            free(sources);
            char *context = rl_format("cannot open CTF trace %s", trace_dirs[index]);
            char *message = rl_take_error(context ? context : "cannot open CTF trace");
            free(context);
            return message;
        }
    }

    const bt_component_filter *muxer = NULL;
    const bt_component_sink *sink = NULL;
    if (bt_graph_add_simple_sink_component(reader->graph, "rlctl-sink", rl_sink_initialize, rl_sink_consume, NULL,
                                           reader, &sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
        free(sources);
        return rl_take_error("cannot build the babeltrace2 graph");
    }
    if (bt_graph_add_filter_component(reader->graph, rl_muxer_class, "muxer", NULL, BT_LOGGING_LEVEL_NONE, &muxer) !=
        BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
        free(sources);
        return rl_take_error("cannot build the babeltrace2 graph");
    }
    for (size_t index = 0; index < count; index++) {
        uint64_t ports = bt_component_source_get_output_port_count(sources[index]);
        for (uint64_t port = 0; port < ports; port++) {
            const bt_port_output *output = bt_component_source_borrow_output_port_by_index_const(sources[index], port);
            // The muxer adds a fresh input port each time its last one is connected.
            const bt_port_input *input = bt_component_filter_borrow_input_port_by_index_const(
                muxer, bt_component_filter_get_input_port_count(muxer) - 1);
            if (bt_graph_connect_ports(reader->graph, output, input, NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
                free(sources);
                return rl_take_error("cannot connect a trace stream to the muxer");
            }
        }
    }
    free(sources);
    if (bt_graph_connect_ports(reader->graph, bt_component_filter_borrow_output_port_by_index_const(muxer, 0),
                               bt_component_sink_borrow_input_port_by_index_const(sink, 0),
                               NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
        return rl_take_error("cannot connect the muxer to the sink");
    }
    return NULL;
}

static void rl_graph_destroy(rl_graph *reader) {
    bt_graph_put_ref(reader->graph);
    for (size_t index = 0; index < reader->class_count; index++) free(reader->classes[index].problem);
    free(reader->classes);
    free(reader->batch_streams);
    free(reader->records);
    free(reader->text);
    free(reader->error);
    free(reader->sink_error);
    free(reader);
}

static rl_graph *rl_graph_open(const char *const *trace_dirs, size_t count, char **error) {
    *error = NULL;
    rl_graph *reader = calloc(1, sizeof *reader);
    if (!reader) {
        *error = strdup("out of memory");
        return NULL;
    }
    pthread_mutex_lock(&rl_bt_lock);
    char *problem = rl_build_graph(reader, trace_dirs, count);
    if (problem) {
        bt_current_thread_clear_error();
        rl_graph_destroy(reader);
        reader = NULL;
    }
    pthread_mutex_unlock(&rl_bt_lock);
    if (problem) *error = problem;
    return reader;
}

/// Records per batch: enough that the per-batch costs (a pipe write, a call from Swift) vanish, few enough that a
/// batch stays a few hundred kilobytes.
static const size_t rl_batch_records = 2048;

/// Runs the graph until the sink has flattened a batch of records (or the trace ends): 1 with records (their
/// `text` still an offset into reader->text), 0 at the end, -1 on an error (reader->error).
static int rl_graph_next(rl_graph *reader) {
    if (reader->failed) return -1;
    if (reader->finished) return 0;
    reader->record_count = 0;
    reader->text_length = 0;
    reader->batch_stream_count = 0;
    int result = 1;
    pthread_mutex_lock(&rl_bt_lock);
    while (reader->record_count < rl_batch_records) {
        bt_graph_run_once_status status = bt_graph_run_once(reader->graph);
        if (status == BT_GRAPH_RUN_ONCE_STATUS_OK) continue;
        if (status == BT_GRAPH_RUN_ONCE_STATUS_AGAIN) continue;
        if (status == BT_GRAPH_RUN_ONCE_STATUS_END) {
            reader->finished = 1;
            result = reader->record_count ? 1 : 0;
            break;
        }
        reader->failed = 1;
        if (reader->sink_error) {
            bt_current_thread_clear_error();
            reader->error = reader->sink_error;
            reader->sink_error = NULL;
        } else {
            reader->error = rl_take_error(status == BT_GRAPH_RUN_ONCE_STATUS_MEMORY_ERROR ? "out of memory"
                                                                                         : "cannot read the trace");
        }
        result = -1;
        break;
    }
    pthread_mutex_unlock(&rl_bt_lock);
    return result;
}

static void rl_graph_close(rl_graph *reader) {
    if (!reader) return;
    pthread_mutex_lock(&rl_bt_lock);
    rl_graph_destroy(reader);
    pthread_mutex_unlock(&rl_bt_lock);
}

/// Turns an offset into the batch's text into a pointer, or NULL when it does not lie within it.
static void rl_rebase(const char **field, uint64_t *length, const char *text, size_t text_length) {
    uintptr_t offset = (uintptr_t)*field;
    if (!text || offset > text_length || *length > text_length - offset) {
        *field = NULL;
        *length = 0;
    } else {
        *field = text + offset;
    }
}

/// Turns the records' text offsets into pointers into `text`.
static void rl_fix_text(rl_ctf_record *records, size_t count, const char *text, size_t text_length) {
    for (size_t index = 0; index < count; index++) {
        rl_ctf_record *record = &records[index];
        if (record->kind == RL_CTF_RECORD_EVENT) {
            // Events' string fields are offsets into the whole batch text.
            record->text = text;
            record->text_length = text ? text_length : 0;
        } else {
            rl_rebase(&record->text, &record->text_length, text, text_length);
        }
        rl_rebase(&record->stream, &record->stream_length, text, text_length);
    }
}

// ===== the reader process =====
//
// libbabeltrace2 2.0 asserts on some corrupt inputs (packet sizes of 2^63 bits and more, for one), and an
// assertion aborts the process. So the graph runs in a child process: the executable itself, started again
// with RLCTL_CTF_READER_CHILD=1, where this file's constructor runs the graph before main() and sends each
// batch through a pipe (fd 3). A crash, an error or a stall of the child becomes a reader error, and
// babeltrace2's stderr goes to a pipe whose tail is quoted in that error instead of to ours.

enum { RL_FRAME_OPENED = 1, RL_FRAME_BATCH = 2, RL_FRAME_END = 3, RL_FRAME_ERROR = 4 };
static const uint32_t rl_frame_magic = 0x524C4342; /* "BCLR" */
static const uint64_t rl_max_batch_records = 1u << 24;
static const uint64_t rl_max_batch_text = 1ull << 32;

typedef struct rl_frame {
    uint32_t magic;
    uint32_t kind;
    uint64_t count;
    uint64_t text_length;
} rl_frame;

static int rl_send(int fd, uint32_t kind, const rl_ctf_record *records, uint64_t count, const char *text,
                   uint64_t text_length) {
    rl_frame frame = {rl_frame_magic, kind, count, text_length};
    struct iovec parts[3] = {
        {&frame, sizeof frame},
        {(void *)records, count * sizeof *records},
        {(void *)text, text_length},
    };
    struct iovec *next = parts;
    int left = 3;
    while (left > 0) {
        ssize_t written = writev(fd, next, left);
        if (written < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        // Skip what was written; resume inside a part that was written partly.
        while (left > 0 && (size_t)written >= next->iov_len) {
            written -= (ssize_t)next->iov_len;
            next++;
            left--;
        }
        if (left > 0) {
            next->iov_base = (char *)next->iov_base + written;
            next->iov_len -= (size_t)written;
        }
    }
    return 0;
}

static void rl_child_run(int argc, char **argv) {
    const int fd = 3;
    char *error = NULL;
    rl_graph *graph = rl_graph_open((const char *const *)argv + 1, argc > 1 ? (size_t)(argc - 1) : 0, &error);
    if (!graph) {
        const char *message = error ? error : "out of memory";
        rl_send(fd, RL_FRAME_ERROR, NULL, 0, message, strlen(message));
        _exit(0);
    }
    if (rl_send(fd, RL_FRAME_OPENED, NULL, 0, NULL, 0) != 0) _exit(1);
    for (;;) {
        int status = rl_graph_next(graph);
        if (status == 1) {
            if (rl_send(fd, RL_FRAME_BATCH, graph->records, graph->record_count, graph->text, graph->text_length) != 0)
                _exit(1);
        } else if (status == 0) {
            rl_send(fd, RL_FRAME_END, NULL, 0, NULL, 0);
            break;
        } else {
            const char *message = graph->error ? graph->error : "cannot read the trace";
            rl_send(fd, RL_FRAME_ERROR, NULL, 0, message, strlen(message));
            break;
        }
    }
    _exit(0);
}

/// In the child, runs the reader instead of the program (glibc passes argc and argv to constructors).
__attribute__((constructor)) static void rl_ctf_child_entry(int argc, char **argv, char **envp) {
    (void)envp;
    const char *role = getenv("RLCTL_CTF_READER_CHILD");
    if (role && strcmp(role, "1") == 0 && argc > 0 && argv && argv[0] && strcmp(argv[0], "rlctl-ctf-reader") == 0)
        rl_child_run(argc, argv);
}

struct rl_ctf_reader {
    /// The in-process graph when RLCTL_CTF_READER_IN_PROCESS=1 or the child cannot be started.
    rl_graph *local;
    pid_t pid;
    int data_fd;
    int error_fd;
    int stall_timeout_ms;
    int finished;
    int failed;
    char *error;
    rl_ctf_record *records;
    size_t record_capacity;
    char *text;
    size_t text_capacity;
    /// The end of the child's stderr.
    char stderr_tail[4096];
    size_t stderr_length;
};

static void rl_keep_stderr(rl_ctf_reader *reader, const char *bytes, size_t length) {
    size_t capacity = sizeof reader->stderr_tail - 1;
    if (length >= capacity) {
        memcpy(reader->stderr_tail, bytes + length - capacity, capacity);
        reader->stderr_length = capacity;
    } else {
        if (reader->stderr_length + length > capacity) {
            size_t drop = reader->stderr_length + length - capacity;
            memmove(reader->stderr_tail, reader->stderr_tail + drop, reader->stderr_length - drop);
            reader->stderr_length -= drop;
        }
        memcpy(reader->stderr_tail + reader->stderr_length, bytes, length);
        reader->stderr_length += length;
    }
    reader->stderr_tail[reader->stderr_length] = 0;
}

static void rl_stop_child(rl_ctf_reader *reader, int kill_it, int *status) {
    if (reader->pid <= 0) return;
    if (kill_it) kill(reader->pid, SIGKILL);
    int result;
    do {
        result = waitpid(reader->pid, status, 0);
    } while (result < 0 && errno == EINTR);
    if (result < 0 && status) *status = -1;
    reader->pid = 0;
}

/// What the child's stderr says about its end: babeltrace2's assertion line if there is one, else the last line.
static char *rl_stderr_summary(rl_ctf_reader *reader) {
    char *text = reader->stderr_tail;
    char *pick = NULL;
    char *position = NULL;
    for (char *line = strtok_r(text, "\n", &position); line; line = strtok_r(NULL, "\n", &position)) {
        while (*line == ' ') line++;
        if (!*line || strncmp(line, "***", 3) == 0 || strstr(line, "swift-runtime")) continue;
        if (strstr(line, "Assertion") || strstr(line, "assert")) {
            pick = line;
            break;
        }
        if (!pick || strstr(pick, "Assertion") == NULL) pick = line;
    }
    if (!pick) return strdup("");
    // babeltrace2 prefixes its assertion messages with a table-flip face and two spaces.
    char *start = strstr(pick, "  ");
    if (start && start - pick < 64) pick = start;
    while (*pick == ' ') pick++;
    return strdup(pick);
}

/// Reaps a child that ended or stalled, and says what happened.
static char *rl_child_failure(rl_ctf_reader *reader, const char *when, int stalled) {
    int status = 0;
    rl_stop_child(reader, 1, &status);
    char *detail = rl_stderr_summary(reader);
    char *message;
    if (stalled) {
        message = rl_format("babeltrace2 made no progress for %d s while %s, so it was stopped%s%s",
                            reader->stall_timeout_ms / 1000, when, *detail ? ": " : "", detail);
    } else if (status != -1 && WIFSIGNALED(status)) {
        int signal = WTERMSIG(status);
        const char *name = sigdescr_np(signal);
        message = rl_format("babeltrace2 crashed (signal %d, %s) while %s%s%s", signal, name ? name : "unknown",
                            when, *detail ? ": " : "", detail);
    } else if (status != -1 && WIFEXITED(status)) {
        message = rl_format("the trace reader process exited with status %d while %s%s%s", WEXITSTATUS(status),
                            when, *detail ? ": " : "", detail);
    } else {
        message = rl_format("the trace reader process ended unexpectedly while %s%s%s", when, *detail ? ": " : "",
                            detail);
    }
    free(detail);
    return message;
}

/// Reads exactly `length` bytes from the child, keeping its stderr. 0 on success, 1 at the end of the data,
/// 2 when the child stalled, -1 on a read error.
static int rl_receive(rl_ctf_reader *reader, void *buffer, size_t length) {
    char *bytes = buffer;
    while (length > 0) {
        struct pollfd fds[2] = {{reader->data_fd, POLLIN, 0}, {reader->error_fd, POLLIN, 0}};
        int ready = poll(fds, reader->error_fd >= 0 ? 2 : 1, reader->stall_timeout_ms);
        if (ready < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (ready == 0) return 2;
        if (reader->error_fd >= 0 && fds[1].revents) {
            char chunk[1024];
            ssize_t got = read(reader->error_fd, chunk, sizeof chunk);
            if (got > 0) {
                rl_keep_stderr(reader, chunk, (size_t)got);
            } else if (got == 0 || errno != EINTR) {
                close(reader->error_fd);
                reader->error_fd = -1;
            }
        }
        if (fds[0].revents) {
            ssize_t got = read(reader->data_fd, bytes, length);
            if (got < 0) {
                if (errno == EINTR) continue;
                return -1;
            }
            if (got == 0) {
                // The child is gone: collect the rest of its stderr for the message.
                while (reader->error_fd >= 0) {
                    char chunk[1024];
                    ssize_t more = read(reader->error_fd, chunk, sizeof chunk);
                    if (more > 0) {
                        rl_keep_stderr(reader, chunk, (size_t)more);
                    } else if (more == 0 || errno != EINTR) {
                        close(reader->error_fd);
                        reader->error_fd = -1;
                    }
                }
                return 1;
            }
            bytes += got;
            length -= (size_t)got;
        }
    }
    return 0;
}

/// Receives one frame header; on failure sets the reader's error.
static int rl_receive_frame(rl_ctf_reader *reader, rl_frame *frame, const char *when) {
    int status = rl_receive(reader, frame, sizeof *frame);
    if (status != 0) {
        reader->error = rl_child_failure(reader, when, status == 2);
        return -1;
    }
    if (frame->magic != rl_frame_magic || frame->count > rl_max_batch_records || frame->text_length > rl_max_batch_text) {
        rl_stop_child(reader, 1, NULL);
        reader->error = strdup("the trace reader process sent garbage");
        return -1;
    }
    return 0;
}

/// Receives a frame's text (an error message or a batch's strings) into reader->text.
static int rl_receive_text(rl_ctf_reader *reader, uint64_t length, const char *when) {
    if (rl_reserve((void **)&reader->text, &reader->text_capacity, (size_t)length + 1, 1) != 0) {
        reader->error = strdup("out of memory");
        return -1;
    }
    int status = rl_receive(reader, reader->text, (size_t)length);
    if (status != 0) {
        reader->error = rl_child_failure(reader, when, status == 2);
        return -1;
    }
    reader->text[length] = 0;
    return 0;
}

/// `fd`, or a close-on-exec copy of it numbered 10 or more when it is 0 to 3 (-1 if that fails).
static int rl_move_above_3(int fd) {
    if (fd > 3) return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    return moved;
}

static int rl_spawn(rl_ctf_reader *reader, const char *const *trace_dirs, size_t count) {
    char executable[4096];
    ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
    if (length <= 0) return -1;
    executable[length] = 0;

    int data[2], errors[2];
    if (pipe2(data, O_CLOEXEC) != 0) return -1;
    if (pipe2(errors, O_CLOEXEC) != 0) {
        close(data[0]);
        close(data[1]);
        return -1;
    }
    // The child's ends become its fds 3 and 2: move them out of the way if they happen to be small numbers.
    data[1] = rl_move_above_3(data[1]);
    errors[1] = rl_move_above_3(errors[1]);

    size_t environment_count = 0;
    while (environ[environment_count]) environment_count++;
    char **environment = calloc(environment_count + 4, sizeof *environment);
    char **arguments = calloc(count + 2, sizeof *arguments);
    int result = -1;
    if (environment && arguments && data[1] >= 0 && errors[1] >= 0) {
        size_t used = 0;
        for (size_t index = 0; index < environment_count; index++) {
            const char *entry = environ[index];
            if (strncmp(entry, "RLCTL_CTF_READER_CHILD=", 23) == 0 || strncmp(entry, "SWIFT_BACKTRACE=", 16) == 0 ||
                strncmp(entry, "LTTNG_UST_REGISTER_TIMEOUT=", 27) == 0)
                continue;
            environment[used++] = (char *)entry;
        }
        environment[used++] = "RLCTL_CTF_READER_CHILD=1";
        environment[used++] = "SWIFT_BACKTRACE=enable=no";      // a crash is reported by us, briefly
        environment[used++] = "LTTNG_UST_REGISTER_TIMEOUT=0";   // do not wait for an LTTng session daemon
        arguments[0] = "rlctl-ctf-reader";
        for (size_t index = 0; index < count; index++) arguments[index + 1] = (char *)trace_dirs[index];

        posix_spawn_file_actions_t actions;
        posix_spawnattr_t attributes;
        posix_spawn_file_actions_init(&actions);
        posix_spawnattr_init(&attributes);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&actions, errors[1], 2);
        posix_spawn_file_actions_adddup2(&actions, data[1], 3);
        posix_spawn_file_actions_addclosefrom_np(&actions, 4);
        sigset_t all, none;
        sigfillset(&all);
        sigemptyset(&none);
        posix_spawnattr_setsigdefault(&attributes, &all);
        posix_spawnattr_setsigmask(&attributes, &none);
        posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
        pid_t pid;
        if (posix_spawn(&pid, executable, &actions, &attributes, arguments, environment) == 0) {
            reader->pid = pid;
            result = 0;
        }
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attributes);
    }
    free(environment);
    free(arguments);
    if (data[1] >= 0) close(data[1]);
    if (errors[1] >= 0) close(errors[1]);
    if (result == 0) {
        reader->data_fd = data[0];
        reader->error_fd = errors[0];
    } else {
        close(data[0]);
        close(errors[0]);
    }
    return result;
}

static void rl_reader_free(rl_ctf_reader *reader) {
    rl_stop_child(reader, 1, NULL);
    if (reader->data_fd >= 0) close(reader->data_fd);
    if (reader->error_fd >= 0) close(reader->error_fd);
    rl_graph_close(reader->local);
    free(reader->error);
    free(reader->records);
    free(reader->text);
    free(reader);
}

rl_ctf_reader *rl_ctf_reader_open(const char *const *trace_dirs, size_t count, int stall_timeout_ms, char **error) {
    *error = NULL;
    rl_ctf_reader *reader = calloc(1, sizeof *reader);
    if (!reader) {
        *error = strdup("out of memory");
        return NULL;
    }
    reader->data_fd = -1;
    reader->error_fd = -1;
    reader->stall_timeout_ms = stall_timeout_ms > 0 ? stall_timeout_ms : 120000;
    const char *in_process = getenv("RLCTL_CTF_READER_IN_PROCESS");
    if ((in_process && strcmp(in_process, "1") == 0) || rl_spawn(reader, trace_dirs, count) != 0) {
        reader->local = rl_graph_open(trace_dirs, count, error);
        if (!reader->local) {
            rl_reader_free(reader);
            return NULL;
        }
        return reader;
    }
    rl_frame frame;
    if (rl_receive_frame(reader, &frame, "opening the trace") == 0) {
        if (frame.kind == RL_FRAME_OPENED) return reader;
        if (frame.kind == RL_FRAME_ERROR && rl_receive_text(reader, frame.text_length, "opening the trace") == 0) {
            *error = strdup(reader->text);
        } else if (!reader->error) {
            reader->error = strdup("the trace reader process sent garbage");
        }
    }
    if (!*error) *error = reader->error ? strdup(reader->error) : strdup("cannot open the trace");
    rl_reader_free(reader);
    return NULL;
}

int rl_ctf_reader_next(rl_ctf_reader *reader, const rl_ctf_record **records, size_t *count) {
    *records = NULL;
    *count = 0;
    if (reader->failed) return -1;
    if (reader->finished) return 0;
    if (reader->local) {
        int status = rl_graph_next(reader->local);
        if (status == 1) {
            rl_fix_text(reader->local->records, reader->local->record_count, reader->local->text,
                        reader->local->text_length);
            *records = reader->local->records;
            *count = reader->local->record_count;
        } else if (status == 0) {
            reader->finished = 1;
        } else {
            reader->failed = 1;
            reader->error = strdup(reader->local->error ? reader->local->error : "cannot read the trace");
        }
        return status;
    }
    rl_frame frame;
    if (rl_receive_frame(reader, &frame, "reading the trace") != 0) {
        reader->failed = 1;
        return -1;
    }
    switch (frame.kind) {
    case RL_FRAME_BATCH: {
        if (frame.count == 0 ||
            rl_reserve((void **)&reader->records, &reader->record_capacity, (size_t)frame.count, sizeof(rl_ctf_record)) != 0) {
            reader->failed = 1;
            reader->error = strdup(frame.count ? "out of memory" : "the trace reader process sent garbage");
            rl_stop_child(reader, 1, NULL);
            return -1;
        }
        int status = rl_receive(reader, reader->records, (size_t)frame.count * sizeof(rl_ctf_record));
        if (status != 0) {
            reader->failed = 1;
            reader->error = rl_child_failure(reader, "reading the trace", status == 2);
            return -1;
        }
        if (rl_receive_text(reader, frame.text_length, "reading the trace") != 0) {
            reader->failed = 1;
            return -1;
        }
        rl_fix_text(reader->records, (size_t)frame.count, reader->text, (size_t)frame.text_length);
        *records = reader->records;
        *count = (size_t)frame.count;
        return 1;
    }
    case RL_FRAME_END:
        reader->finished = 1;
        rl_stop_child(reader, 0, NULL);
        return 0;
    case RL_FRAME_ERROR:
        reader->failed = 1;
        if (rl_receive_text(reader, frame.text_length, "reading the trace") == 0) reader->error = strdup(reader->text);
        rl_stop_child(reader, 1, NULL);
        return -1;
    default:
        reader->failed = 1;
        reader->error = strdup("the trace reader process sent garbage");
        rl_stop_child(reader, 1, NULL);
        return -1;
    }
}

const char *rl_ctf_reader_error(const rl_ctf_reader *reader) { return reader->error; }

void rl_ctf_reader_close(rl_ctf_reader *reader) {
    if (reader) rl_reader_free(reader);
}

#else /* !RLCTL_HAVE_BABELTRACE2 */

struct rl_ctf_reader {
    int unused;
};

int rl_ctf_available(void) { return 0; }

rl_ctf_reader *rl_ctf_reader_open(const char *const *trace_dirs, size_t count, int stall_timeout_ms, char **error) {
    (void)trace_dirs;
    (void)count;
    (void)stall_timeout_ms;
    *error = strdup("rlctl was built without libbabeltrace2 (install libbabeltrace2-dev and babeltrace2, then "
                    "rebuild) so it cannot read CTF traces");
    return NULL;
}

int rl_ctf_reader_next(rl_ctf_reader *reader, const rl_ctf_record **records, size_t *count) {
    (void)reader;
    *records = NULL;
    *count = 0;
    return -1;
}

const char *rl_ctf_reader_error(const rl_ctf_reader *reader) {
    (void)reader;
    return "rlctl was built without libbabeltrace2";
}

void rl_ctf_reader_close(rl_ctf_reader *reader) { (void)reader; }

#endif /* RLCTL_HAVE_BABELTRACE2 */

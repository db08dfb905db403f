/*
 * A CTF 1.8 trace reader on libbabeltrace2's graph API, for Swift (Sources/TraceReading/CTFTraceReader.swift).
 *
 * The graph is one `src.ctf.fs` source per trace folder, the `flt.utils.muxer` filter (timestamp order across
 * streams) and this shim's own sink component, which flattens each message into an rl_ctf_record. Swift pulls
 * one batch at a time, so memory stays constant whatever the trace size. The graph runs in a child process
 * and the batches come through a pipe, so that libbabeltrace2 aborting on a corrupt trace is an error, not a
 * crash of the program reading it.
 *
 * Events are recognised by name (`runloop:<event>` or `<event>`) and their fields by name, through the schema
 * table (CTraceSchema), so any CTF 1.8 trace with the `runloop` schema's event and field names is read, whoever
 * wrote it: fields the schema does not have are ignored, other events skipped, and an event without a field
 * the schema has is an error naming both.
 *
 * This header is the same with or without libbabeltrace2 (RLCTL_HAVE_BABELTRACE2 is passed to the C file
 * only); without it rl_ctf_available() returns 0 and rl_ctf_reader_open() fails with a message saying so.
 */
#ifndef RL_CTF_READER_H
#define RL_CTF_READER_H

#include <stddef.h>
#include <stdint.h>

#include "rl_schema.h"

#ifdef __cplusplus
extern "C" {
#endif

/// What a record is.
typedef enum rl_ctf_record_kind : uint8_t {
    /// A `runloop` event: `event`, `timestamp`, `tid`, `values`, `text`.
    RL_CTF_RECORD_EVENT = 0,
    /// The tracer dropped events: `values[0]` of them (when `count_known`), in [`timestamp`, `end_timestamp`]
    /// (when `has_time`), on stream `text`.
    RL_CTF_RECORD_DISCARDED_EVENTS = 1,
    /// Whole packets were lost: `values[0]` of them, as for discarded events.
    RL_CTF_RECORD_DISCARDED_PACKETS = 2,
} rl_ctf_record_kind;

/// One flattened message. For an event, `values` holds its fields in the order of the schema table
/// (rl_schema_events[event], runloop_events.def), found in the trace by name whatever its order or extra fields:
/// integers and enumerations as 64 bits (signed ones as two's complement), strings as the offset of their
/// NUL-terminated text in `text`.
typedef struct rl_ctf_record {
    uint8_t kind;
    /// The schema's event id (rl_event_id).
    uint8_t event;
    uint8_t has_time;
    uint8_t count_known;
    /// The emitting thread (`vtid` context, else packet-context `tid`, else 0).
    int32_t tid;
    /// The emitting process (`vpid` context, else `pid`, else 0: rlctl's sessions add only `vtid`).
    int32_t pid;
    /// The event's time (CLOCK_MONOTONIC ns: the clock's value, without its offset); for losses, the start.
    uint64_t timestamp;
    /// For losses: the end of the window.
    uint64_t end_timestamp;
    /// For losses, values[0] is the count.
    uint64_t values[RL_SCHEMA_MAX_FIELDS];
    /// Events: the batch's text, which string fields' values index (`text_length` bytes). Losses: the stream's
    /// name (not NUL-terminated). Valid until the next rl_ctf_reader_next() or rl_ctf_reader_close().
    const char *text;
    uint64_t text_length;
    /// The stream the record comes from: its name, which src.ctf.fs sets to the data file's path. Like `text`.
    const char *stream;
    uint64_t stream_length;
} rl_ctf_record;

typedef struct rl_ctf_reader rl_ctf_reader;

/// 1 when built with libbabeltrace2.
int rl_ctf_available(void);


/// Opens the CTF traces in `trace_dirs` (folders holding a `metadata` file) as one
/// time-ordered sequence.
/// Returns NULL and sets *error (free it with rl_ctf_free_string) when the traces cannot be opened.
///
/// The babeltrace2 graph runs in a child process (this executable, started again; see rl_ctf_reader.c), so
/// that an assertion in libbabeltrace2 on a corrupt trace is an error here, not a crash. A child that sends
/// nothing for `stall_timeout_ms` (0: 120 s) is stopped and reported. RLCTL_CTF_READER_IN_PROCESS=1 runs the
/// graph in this process instead (for debugging; a corrupt trace may then abort the process).
rl_ctf_reader *rl_ctf_reader_open(const char *const *trace_dirs, size_t count, int stall_timeout_ms, char **error);

/// The next batch of records: 1 with *records/*count set, 0 at the end, -1 on an error (see
/// rl_ctf_reader_error; the reader is then unusable). The count is above 0.
int rl_ctf_reader_next(rl_ctf_reader *reader, const rl_ctf_record **records, size_t *count);

/// The last error's message (babeltrace2's error causes, most specific last), or NULL.
const char *rl_ctf_reader_error(const rl_ctf_reader *reader);

void rl_ctf_reader_close(rl_ctf_reader *reader);
void rl_ctf_free_string(char *string);

#ifdef __cplusplus
}
#endif

#endif /* RL_CTF_READER_H */

/*
 * A CTF 1.8 trace reader on libbabeltrace2's graph API, for Swift (Sources/Tracing/Readers/CTFTraceReader.swift).
 *
 * The graph is one `src.ctf.fs` source per trace folder, the `flt.utils.muxer` filter (timestamp order across
 * streams) and this shim's own sink component, which flattens each message into an rl_ctf_record. Swift pulls
 * one batch at a time, so memory stays constant whatever the trace size. The graph runs in a child process
 * and the batches come through a pipe, so that libbabeltrace2 aborting on a corrupt trace is an error, not a
 * crash of the program reading it.
 *
 * Events are recognised by name (`runloop:<event>` or `<event>`) and their fields by name, so any CTF 1.8 trace
 * with the `runloop` provider's event and field names is read, whoever wrote it. Other events are skipped.
 *
 * This header is the same with or without libbabeltrace2 (RLCTL_HAVE_BABELTRACE2 is passed to the C file
 * only); without it rl_ctf_available() returns 0 and rl_ctf_reader_open() fails with a message saying so.
 */
#ifndef RL_CTF_READER_H
#define RL_CTF_READER_H

#include <stddef.h>
#include <stdint.h>

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

/// The `runloop` events, in the order of TraceEvent.Payload.
typedef enum rl_ctf_event : uint8_t {
    RL_CTF_ENTRY = 0,
    RL_CTF_BEFORE_TIMERS,
    RL_CTF_BEFORE_SOURCES,
    RL_CTF_BEFORE_WAITING,
    RL_CTF_AFTER_WAITING,
    RL_CTF_EXIT,
    RL_CTF_RUN_BEGIN,
    RL_CTF_RUN_END,
    RL_CTF_TIMER_FIRE_BEGIN,
    RL_CTF_TIMER_FIRE_END,
    RL_CTF_SOURCE_SIGNAL,
    RL_CTF_SOURCE_PERFORM_BEGIN,
    RL_CTF_SOURCE_PERFORM_END,
    RL_CTF_BLOCK_BEGIN,
    RL_CTF_BLOCK_END,
    RL_CTF_OBSERVER_BEGIN,
    RL_CTF_OBSERVER_END,
    RL_CTF_WAKEUP,
    RL_CTF_LOOP_CREATE,
    RL_CTF_ITEM_LABEL,
    RL_CTF_EVENT_COUNT
} rl_ctf_event;

/// The most integer fields an event has.
#define RL_CTF_MAX_VALUES 6

/// One flattened message. Integer fields are in the order of the provider header's field list, skipping the
/// string field (`mode`, `name` or `label`), which is `text`; signed fields are stored as two's complement.
typedef struct rl_ctf_record {
    uint8_t kind;
    uint8_t event;
    uint8_t has_time;
    uint8_t count_known;
    /// The emitting thread (`vtid` context, else packet-context `tid`, else 0).
    int32_t tid;
    /// The event's time (CLOCK_MONOTONIC ns: the clock's value, without its offset); for losses, the start.
    uint64_t timestamp;
    /// For losses: the end of the window.
    uint64_t end_timestamp;
    uint64_t values[RL_CTF_MAX_VALUES];
    /// Not NUL-terminated; valid until the next rl_ctf_reader_next() or rl_ctf_reader_close().
    const char *text;
    uint64_t text_length;
    /// The stream the record comes from: its name, which src.ctf.fs sets to the data file's path. Like `text`.
    const char *stream;
    uint64_t stream_length;
} rl_ctf_record;

typedef struct rl_ctf_reader rl_ctf_reader;

/// 1 when built with libbabeltrace2.
int rl_ctf_available(void);

/// `entry`, `before_timers`, ….
const char *rl_ctf_event_name(rl_ctf_event event);

/// Opens the CTF traces in `trace_dirs` (folders holding a `metadata` file) as one time-ordered sequence.
/// Returns NULL and sets *error (free it with rl_ctf_free_string) when the traces cannot be opened.
///
/// The babeltrace2 graph runs in a child process (this executable, started again; see rl_ctf_reader.c), so
/// that an assertion in libbabeltrace2 on a corrupt trace is an error here, not a crash. A child that sends
/// nothing for `stall_timeout_ms` (0: 120 s) is stopped and reported. RLCTL_CTF_READER_IN_PROCESS=1 runs the
/// graph in this process instead (for debugging; a corrupt trace may then abort the process).
rl_ctf_reader *rl_ctf_reader_open(const char *const *trace_dirs, size_t count, int stall_timeout_ms, char **error);

/// The next batch of records: 1 with *records/*count set (count > 0), 0 at the end, -1 on an error (see
/// rl_ctf_reader_error; the reader is then unusable).
int rl_ctf_reader_next(rl_ctf_reader *reader, const rl_ctf_record **records, size_t *count);

/// The last error's message (babeltrace2's error causes, most specific last), or NULL.
const char *rl_ctf_reader_error(const rl_ctf_reader *reader);

void rl_ctf_reader_close(rl_ctf_reader *reader);
void rl_ctf_free_string(char *string);

#ifdef __cplusplus
}
#endif

#endif /* RL_CTF_READER_H */

// The embedded recorder's hot path: per-thread buffers of CTF packets, written without locks or allocation.
//
// Each emitting thread gets `sub_buffer_count` sub-buffers of `sub_buffer_size` bytes on its first event. A
// sub-buffer is one CTF packet in the making (layout: Sources/TraceModel/TraceSchema.swift). The thread
// fills one at a time; a full one is handed to the consumer (the writer thread), which writes it to the thread's
// stream file and gives it back. In discard mode a thread that finds no free sub-buffer drops events and counts
// them; in overwrite mode (flight recorder) it takes back its oldest sub-buffer and counts what it overwrote.
#ifndef CRECORDER_H
#define CRECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "rl_schema.h"


/// How events are stamped (always in CLOCK_MONOTONIC nanoseconds).
typedef enum rlrec_clock : int32_t {
    /// From the TSC, extrapolated from CLOCK_MONOTONIC readings renewed every millisecond, where the TSC is
    /// invariant and drives the kernel's clocksource (see "timestamps" in CRecorder.c); otherwise, or when
    /// RLCTL_RECORDER_CLOCK=clock_gettime is set, clock_gettime per event.
    RLREC_CLOCK_AUTOMATIC = 0,
    /// clock_gettime(CLOCK_MONOTONIC) per event.
    RLREC_CLOCK_GETTIME = 1,
} rlrec_clock;

typedef struct {
    uint32_t sub_buffer_size;   // bytes, at least 4096
    uint32_t sub_buffer_count;  // at least 2
    int overwrite;              // 1: flight recorder (keep the newest data), 0: discard new events when full
    uint8_t uuid[16];
    rlrec_clock clock;          // RLREC_CLOCK_AUTOMATIC (0) unless clock_gettime per event is wanted
    uint64_t switch_interval_ns;  // close a thread's packet at its first event this long after the packet began,
                                  // so that its events reach the file even if the process dies (0: only when full)
} rlrec_config;

/// Starts a recording. Returns 0, or -1 when one is already running.
int rlrec_start(const rlrec_config *config);
/// Stops recording: later events are ignored, events in progress finish, and every thread's partly filled
/// sub-buffer is handed to the consumer. Call from one thread, once per start.
void rlrec_stop(void);

// ===== consumer side (one thread at a time) =====

typedef struct {
    const uint8_t *data;   // the packet, header included
    uint32_t size;         // bytes
    int32_t tid;
    uint32_t buffer;       // which thread buffer (for rlrec_release)
    uint32_t sub_buffer;
} rlrec_packet;

/// Takes the next packet ready to be written, oldest first per thread. Returns 1 with *packet set, or 0.
int rlrec_take(rlrec_packet *packet);
/// After rlrec_stop and once rlrec_take finds nothing more: a header-only packet per thread whose last events
/// were dropped after its last packet, so the trace reports every drop. Returns 1 with *packet set, or 0.
/// Release it like any packet.
int rlrec_take_final(rlrec_packet *packet);
/// Gives a taken packet's sub-buffer back to its thread.
void rlrec_release(const rlrec_packet *packet);
/// Frees the stopped recording's buffers, after every packet was taken and released.
void rlrec_reset(void);

// ===== flight-recorder snapshots (overwrite mode) =====

/// Where a snapshot asked for at one moment ends, though it is copied later: the asking thread's packets up to
/// the one it closed, and the other threads' packets closed by `at_ns`.
typedef struct {
    const void *thread;               // the asking thread's buffer (NULL: it had none)
    uint64_t packets;                 // how many packets the asking thread had closed
    uint64_t at_ns;                   // the moment (CLOCK_MONOTONIC ns, the events' clock)
} rlrec_snapshot_cut;

/// Closes the calling thread's packet now, so that its events so far are in a snapshot (a loop calls it after
/// reporting the stall that takes one), and returns the snapshot's cut at `at_ns`. Closes nothing when not
/// recording.
rlrec_snapshot_cut rlrec_close_thread_packet(uint64_t at_ns);

/// Receives one thread's stream: its closed packets, oldest first, one after another.
typedef void (*rlrec_stream_sink)(void *context, int32_t tid, const uint8_t *data, size_t size);
/// Overwrite mode: copies every thread's closed packets while recording goes on, and hands each thread's copy
/// to `sink` (from the calling thread, with no lock held). A copy is a stream of its own: a packet's
/// events_discarded counts only the events dropped since the copy's first packet began, not what the ring
/// overwrote before it, and sequence numbers start at 0 with the first packet. While a
/// thread's packets are copied, that thread drops (and counts) events rather than overwrite one of them, should
/// its ring come round to it. With a `cut` (NULL: none), packets closed after it are left out, except the
/// calling thread's own: the copy shows the rings as they were at the cut. Returns the number of threads
/// copied, or -1 (not in overwrite mode, or out of memory: then the copy is incomplete). One caller at a time,
/// never while rlrec_stop, rlrec_take or rlrec_reset run.
int rlrec_copy_ring(rlrec_stream_sink sink, void *context, const rlrec_snapshot_cut *cut);

typedef struct {
    uint64_t events_recorded;   // events written into packets
    uint64_t events_discarded;  // events dropped or overwritten, all threads
    uint64_t threads;           // threads that emitted
    uint64_t threads_without_buffer; // events dropped because a thread's buffer could not be allocated
} rlrec_stats;

/// Totals so far (exact after rlrec_stop).
rlrec_stats rlrec_statistics(void);
/// After rlrec_stop and before rlrec_reset: the thread of buffer `index` and the events written into its packets
/// (what its stream file holds once every packet is written). Returns 0 when `index` is past the last buffer.
int rlrec_thread_statistics(uint32_t index, int32_t *tid, uint64_t *recorded);

/// The timestamp of the calling thread's last event while a recording runs (recorded or dropped), else 0.
uint64_t rlrec_last_timestamp(void);

typedef struct {
    int32_t tsc;                // 1 while events are stamped from the TSC, 0 with clock_gettime
    uint64_t fallbacks;         // times this recording gave up the TSC (drift over 1 µs, or a TSC going back)
    uint64_t anchors_checked;   // anchor renewals that measured the extrapolation's drift
    int64_t max_lead_ns;        // the most an extrapolated time ran ahead of CLOCK_MONOTONIC at a renewal
    int64_t max_lag_ns;         // the most it fell behind (a positive number; 0 when it never did)
} rlrec_clock_stats;

/// How this (or the last) recording stamps events, and how close the TSC clock stayed to CLOCK_MONOTONIC.
rlrec_clock_stats rlrec_clock_statistics(void);

/// For code that keeps its own TSC times (the wait interposer's LTTng batches), and the recorder's own rule: 1 when
/// CLOCK_MONOTONIC can be extrapolated from the TSC on this machine (an invariant TSC that is the kernel's
/// clocksource) and RLCTL_RECORDER_CLOCK does not ask for clock_gettime; 0 otherwise, and on CPUs without a TSC.
int rlrec_tsc_clock_eligible(void);
/// A TSC reading and a CLOCK_MONOTONIC reading (ns) taken at nearly the same moment: the narrowest pair of up to
/// `attempts` (the TSC is read first). *tsc is 0 on CPUs without a TSC.
void rlrec_clock_pair(int attempts, uint64_t *tsc, uint64_t *ns);

// ===== events (any thread; a no-op unless recording) =====

// One encoder per event of runloop_events.def, its parameters the event's fields in order:
// rlrec_<event>(fields…), and for the events of a class rlrec_<class>(event_id, fields…) (rlrec_activity).
#define RL_FIELD RL_FIELD_TUPLE
#define RL_ENUM_FIELD RL_ENUM_FIELD_TUPLE
#define RL_ARRAY_FIELD RL_ARRAY_FIELD_TUPLE
#define RL_EVENT_CLASS(class, fields) void rlrec_##class(uint8_t event_id RL_MORE_PARAMS(fields));
#define RL_EVENT(id, name, fields) void rlrec_##name(RL_PARAMS(fields));
#include "runloop_events.def"

#endif

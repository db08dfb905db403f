#define _GNU_SOURCE
#include "CRecorder.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// Event ids: keep equal to TraceSchema.EventID.
enum {
    EV_RUN_BEGIN = 6, EV_RUN_END = 7, EV_TIMER_FIRE_BEGIN = 8, EV_SOURCE_SIGNAL = 10,
    EV_SOURCE_PERFORM_BEGIN = 11, EV_BLOCK_BEGIN = 13, EV_OBSERVER_BEGIN = 15, EV_WAKEUP = 17,
    EV_LOOP_CREATE = 18, EV_ITEM_LABEL = 19,
};

#define PACKET_HEADER_SIZE (4 + 16 + 8 * 6 + 4)
#define EVENT_HEADER_SIZE 9
#define MAX_STRING 255

enum { SUB_FREE = 0, SUB_FILLING = 1, SUB_READY = 2 };

// One thread's buffer. Fields marked (producer) are touched only by the owning thread while recording, and by
// rlrec_stop after it has waited for the thread to leave its event (busy == 0).
typedef struct thread_buffer {
    uint64_t generation;              // the recording it belongs to
    int32_t tid;
    uint32_t sub_size, sub_count;
    uint8_t *memory;                  // sub_count * sub_size
    _Atomic int *state;               // per sub-buffer: SUB_FREE / SUB_FILLING / SUB_READY
    uint64_t *packet_events;          // per sub-buffer: events in it (for overwrite accounting)
    _Atomic int busy;                 // 1 while the thread writes an event
    // (producer)
    uint32_t current;                 // sub-buffer being filled; UINT32_MAX when stalled without one
    uint32_t offset;                  // write offset in it
    uint64_t first_ts, last_ts, events, seq, discarded, recorded;
    uint64_t reported_discards;       // `discarded` as written in the last closed packet
    uint8_t final_packet[PACKET_HEADER_SIZE];   // a header-only packet reporting drops made after the last one
    // (consumer)
    uint32_t consume_next;
    uint64_t consume_seq;
} thread_buffer;

static rlrec_config g_config;
static _Atomic int g_enabled;
static _Atomic uint64_t g_generation;
static _Atomic uint64_t g_no_buffer_drops;
static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static thread_buffer **g_buffers;
static uint32_t g_buffer_count, g_buffer_capacity;
static __thread thread_buffer *t_buffer;
static pthread_key_t g_exit_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint8_t *sub_base(thread_buffer *tb, uint32_t index) {
    return tb->memory + (size_t)index * tb->sub_size;
}

static void thread_exited(void *unused);

static void make_key(void) {
    pthread_key_create(&g_exit_key, thread_exited);
}

// ===== packets =====

static inline void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/// Fills the packet header and context of the current sub-buffer and hands it to the consumer.
static void close_current(thread_buffer *tb) {
    uint8_t *p = sub_base(tb, tb->current);
    uint64_t size_bits = (uint64_t)tb->offset * 8;
    put32(p, 0xC1FC1FC1u);
    memcpy(p + 4, g_config.uuid, 16);
    put64(p + 20, tb->first_ts);
    put64(p + 28, tb->last_ts);
    put64(p + 36, size_bits);
    put64(p + 44, size_bits);
    put64(p + 52, tb->seq++);
    put64(p + 60, tb->discarded);
    put32(p + 68, (uint32_t)tb->tid);
    tb->reported_discards = tb->discarded;
    tb->packet_events[tb->current] = tb->events;
    __atomic_store_n(&tb->recorded, tb->recorded + tb->events, __ATOMIC_RELAXED);
    atomic_store_explicit(&tb->state[tb->current], SUB_READY, memory_order_release);
    tb->current = UINT32_MAX;
}

/// Starts filling sub-buffer `index`.
static void open_sub_buffer(thread_buffer *tb, uint32_t index, uint64_t ts) {
    tb->current = index;
    tb->offset = PACKET_HEADER_SIZE;
    tb->first_ts = tb->last_ts = ts;
    tb->events = 0;
}

/// Moves to the next sub-buffer; returns 0 when none is free (discard mode: the event is dropped).
static int switch_sub_buffer(thread_buffer *tb, uint64_t ts) {
    uint32_t next;
    if (tb->current != UINT32_MAX) {
        next = (tb->current + 1) % tb->sub_count;
        close_current(tb);
    } else {
        next = (uint32_t)(tb->seq % tb->sub_count);   // stalled: the one after the last closed
    }
    int state = atomic_load_explicit(&tb->state[next], memory_order_acquire);
    if (state == SUB_READY && g_config.overwrite) {
        // Flight recorder: the oldest packet gives way; its events count as lost.
        __atomic_store_n(&tb->discarded, tb->discarded + tb->packet_events[next], __ATOMIC_RELAXED);
        __atomic_store_n(&tb->recorded, tb->recorded - tb->packet_events[next], __ATOMIC_RELAXED);
        atomic_store_explicit(&tb->state[next], SUB_FILLING, memory_order_relaxed);
    } else if (state != SUB_FREE) {
        return 0;
    } else {
        atomic_store_explicit(&tb->state[next], SUB_FILLING, memory_order_relaxed);
    }
    open_sub_buffer(tb, next, ts);
    return 1;
}

// ===== thread buffers =====

static thread_buffer *attach_thread(uint64_t generation) {
    pthread_once(&g_key_once, make_key);
    thread_buffer *tb = calloc(1, sizeof *tb);
    if (!tb) return NULL;
    tb->generation = generation;
    tb->tid = (int32_t)syscall(SYS_gettid);
    tb->sub_size = g_config.sub_buffer_size;
    tb->sub_count = g_config.sub_buffer_count;
    tb->memory = malloc((size_t)tb->sub_size * tb->sub_count);
    tb->state = calloc(tb->sub_count, sizeof *tb->state);
    tb->packet_events = calloc(tb->sub_count, sizeof *tb->packet_events);
    if (!tb->memory || !tb->state || !tb->packet_events) {
        free(tb->memory); free((void *)tb->state); free(tb->packet_events); free(tb);
        return NULL;
    }
    atomic_store_explicit(&tb->state[0], SUB_FILLING, memory_order_relaxed);
    open_sub_buffer(tb, 0, now_ns());
    pthread_mutex_lock(&g_registry_lock);
    if (generation != atomic_load(&g_generation) || !atomic_load(&g_enabled)) {
        pthread_mutex_unlock(&g_registry_lock);   // the recording ended meanwhile
        free(tb->memory); free((void *)tb->state); free(tb->packet_events); free(tb);
        return NULL;
    }
    if (g_buffer_count == g_buffer_capacity) {
        uint32_t capacity = g_buffer_capacity ? g_buffer_capacity * 2 : 16;
        thread_buffer **grown = realloc(g_buffers, capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&g_registry_lock);
            free(tb->memory); free((void *)tb->state); free(tb->packet_events); free(tb);
            return NULL;
        }
        g_buffers = grown;
        g_buffer_capacity = capacity;
    }
    g_buffers[g_buffer_count++] = tb;
    pthread_mutex_unlock(&g_registry_lock);
    t_buffer = tb;
    pthread_setspecific(g_exit_key, tb);
    return tb;
}

/// On thread exit, hand the partly filled packet to the consumer: nobody will write it any more.
static void thread_exited(void *arg) {
    thread_buffer *tb = arg;
    t_buffer = NULL;
    atomic_store_explicit(&tb->busy, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&g_enabled, memory_order_seq_cst) &&
        tb->generation == atomic_load(&g_generation) && tb->current != UINT32_MAX && tb->events > 0) {
        close_current(tb);
    }
    atomic_store_explicit(&tb->busy, 0, memory_order_release);
}

// ===== the event path =====

/// Reserves `size` bytes for an event and writes its header; NULL when not recording or dropped.
/// A non-NULL return leaves the buffer busy: finish with commit().
static inline uint8_t *reserve(uint8_t event_id, uint32_t size, thread_buffer **out) {
    if (!atomic_load_explicit(&g_enabled, memory_order_relaxed)) return NULL;
    uint64_t generation = atomic_load_explicit(&g_generation, memory_order_relaxed);
    thread_buffer *tb = t_buffer;
    if (__builtin_expect(!tb || tb->generation != generation, 0)) {
        tb = attach_thread(generation);
        if (!tb) {
            atomic_fetch_add_explicit(&g_no_buffer_drops, 1, memory_order_relaxed);
            return NULL;
        }
    }
    // Dekker with rlrec_stop: either stop sees busy, or this thread sees the recording stopped.
    atomic_store_explicit(&tb->busy, 1, memory_order_seq_cst);
    if (!atomic_load_explicit(&g_enabled, memory_order_seq_cst)) {
        atomic_store_explicit(&tb->busy, 0, memory_order_release);
        return NULL;
    }
    uint64_t ts = now_ns();
    uint32_t total = EVENT_HEADER_SIZE + size;
    if (__builtin_expect(tb->current == UINT32_MAX || tb->offset + total > tb->sub_size, 0)) {
        if (PACKET_HEADER_SIZE + total > tb->sub_size || !switch_sub_buffer(tb, ts)) {
            // Written atomically: rlrec_statistics reads it from another thread while recording.
            __atomic_store_n(&tb->discarded, tb->discarded + 1, __ATOMIC_RELAXED);
            atomic_store_explicit(&tb->busy, 0, memory_order_release);
            return NULL;
        }
    }
    uint8_t *p = sub_base(tb, tb->current) + tb->offset;
    p[0] = event_id;
    memcpy(p + 1, &ts, 8);
    tb->last_ts = ts;
    if (tb->events == 0) tb->first_ts = ts;
    *out = tb;
    return p + EVENT_HEADER_SIZE;
}

static inline void commit(thread_buffer *tb, uint32_t size) {
    tb->offset += EVENT_HEADER_SIZE + size;
    tb->events++;
    atomic_store_explicit(&tb->busy, 0, memory_order_release);
}

static inline uint32_t string_size(const char *s) {
    return (uint32_t)(s ? strnlen(s, MAX_STRING) : 0) + 1;
}

static inline uint8_t *put_string(uint8_t *p, const char *s, uint32_t size) {
    if (size > 1) memcpy(p, s, size - 1);
    p[size - 1] = 0;
    return p + size;
}

#define PUT(p, v) do { __typeof__(v) _v = (v); memcpy((p), &_v, sizeof _v); (p) += sizeof _v; } while (0)

void rlrec_activity(uint8_t event_id, uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    uint32_t mode_size = string_size(mode);
    uint32_t size = 8 + mode_size + 8 + 4;
    thread_buffer *tb;
    uint8_t *p = reserve(event_id, size, &tb);
    if (!p) return;
    PUT(p, loop_id);
    p = put_string(p, mode, mode_size);
    PUT(p, iteration);
    PUT(p, depth);
    commit(tb, size);
}

void rlrec_run_begin(uint64_t loop_id, const char *mode, uint64_t timeout_ns, uint8_t return_after_source_handled) {
    uint32_t mode_size = string_size(mode);
    uint32_t size = 8 + mode_size + 8 + 1;
    thread_buffer *tb;
    uint8_t *p = reserve(EV_RUN_BEGIN, size, &tb);
    if (!p) return;
    PUT(p, loop_id);
    p = put_string(p, mode, mode_size);
    PUT(p, timeout_ns);
    PUT(p, return_after_source_handled);
    commit(tb, size);
}

void rlrec_run_end(uint64_t loop_id, const char *mode, uint8_t result) {
    uint32_t mode_size = string_size(mode);
    uint32_t size = 8 + mode_size + 1;
    thread_buffer *tb;
    uint8_t *p = reserve(EV_RUN_END, size, &tb);
    if (!p) return;
    PUT(p, loop_id);
    p = put_string(p, mode, mode_size);
    PUT(p, result);
    commit(tb, size);
}

void rlrec_timer_fire_begin(uint64_t loop_id, uint64_t timer_id, uint64_t scheduled_ns, uint64_t tolerance_ns,
                            uint64_t interval_ns, uint64_t missed) {
    thread_buffer *tb;
    uint8_t *p = reserve(EV_TIMER_FIRE_BEGIN, 48, &tb);
    if (!p) return;
    PUT(p, loop_id); PUT(p, timer_id); PUT(p, scheduled_ns); PUT(p, tolerance_ns); PUT(p, interval_ns); PUT(p, missed);
    commit(tb, 48);
}

void rlrec_id_pair(uint8_t event_id, uint64_t loop_id, uint64_t item_id) {
    thread_buffer *tb;
    uint8_t *p = reserve(event_id, 16, &tb);
    if (!p) return;
    PUT(p, loop_id); PUT(p, item_id);
    commit(tb, 16);
}

void rlrec_source_signal(uint64_t source_id) {
    thread_buffer *tb;
    uint8_t *p = reserve(EV_SOURCE_SIGNAL, 8, &tb);
    if (!p) return;
    PUT(p, source_id);
    commit(tb, 8);
}

void rlrec_source_perform_begin(uint64_t loop_id, uint64_t source_id, uint8_t kind, int64_t order, uint64_t signaled_ns) {
    thread_buffer *tb;
    uint8_t *p = reserve(EV_SOURCE_PERFORM_BEGIN, 33, &tb);
    if (!p) return;
    PUT(p, loop_id); PUT(p, source_id); PUT(p, kind); PUT(p, order); PUT(p, signaled_ns);
    commit(tb, 33);
}

void rlrec_block_begin(uint64_t loop_id, uint64_t block_id, uint64_t enqueued_ns) {
    thread_buffer *tb;
    uint8_t *p = reserve(EV_BLOCK_BEGIN, 24, &tb);
    if (!p) return;
    PUT(p, loop_id); PUT(p, block_id); PUT(p, enqueued_ns);
    commit(tb, 24);
}

void rlrec_observer_begin(uint64_t loop_id, uint64_t observer_id, uint8_t activity) {
    thread_buffer *tb;
    uint8_t *p = reserve(EV_OBSERVER_BEGIN, 17, &tb);
    if (!p) return;
    PUT(p, loop_id); PUT(p, observer_id); PUT(p, activity);
    commit(tb, 17);
}

void rlrec_wakeup(uint64_t loop_id, uint8_t reason, uint64_t slept_ns) {
    thread_buffer *tb;
    uint8_t *p = reserve(EV_WAKEUP, 17, &tb);
    if (!p) return;
    PUT(p, loop_id); PUT(p, reason); PUT(p, slept_ns);
    commit(tb, 17);
}

void rlrec_loop_create(uint64_t loop_id, int32_t tid, const char *name) {
    uint32_t name_size = string_size(name);
    uint32_t size = 8 + 4 + name_size;
    thread_buffer *tb;
    uint8_t *p = reserve(EV_LOOP_CREATE, size, &tb);
    if (!p) return;
    PUT(p, loop_id); PUT(p, tid);
    put_string(p, name, name_size);
    commit(tb, size);
}

void rlrec_item_label(uint64_t item_id, uint8_t kind, const char *label) {
    uint32_t label_size = string_size(label);
    uint32_t size = 8 + 1 + label_size;
    thread_buffer *tb;
    uint8_t *p = reserve(EV_ITEM_LABEL, size, &tb);
    if (!p) return;
    PUT(p, item_id); PUT(p, kind);
    put_string(p, label, label_size);
    commit(tb, size);
}

// ===== control =====

int rlrec_start(const rlrec_config *config) {
    pthread_mutex_lock(&g_registry_lock);
    if (atomic_load(&g_enabled) || g_buffer_count != 0) {
        pthread_mutex_unlock(&g_registry_lock);
        return -1;
    }
    g_config = *config;
    if (g_config.sub_buffer_size < 4096) g_config.sub_buffer_size = 4096;
    if (g_config.sub_buffer_count < 2) g_config.sub_buffer_count = 2;
    atomic_store(&g_no_buffer_drops, 0);
    atomic_fetch_add(&g_generation, 1);
    atomic_store(&g_enabled, 1);
    pthread_mutex_unlock(&g_registry_lock);
    return 0;
}

int rlrec_is_recording(void) {
    return atomic_load(&g_enabled);
}

void rlrec_stop(void) {
    pthread_mutex_lock(&g_registry_lock);
    atomic_store_explicit(&g_enabled, 0, memory_order_seq_cst);
    for (uint32_t i = 0; i < g_buffer_count; i++) {
        thread_buffer *tb = g_buffers[i];
        while (atomic_load_explicit(&tb->busy, memory_order_acquire)) sched_yield();
        // The thread is out of its event and will not start another: its producer state is ours now.
        // Drops made while it had no free sub-buffer are reported by rlrec_take_final's header-only packet.
        if (tb->current != UINT32_MAX && (tb->events > 0 || tb->discarded != tb->reported_discards)) {
            close_current(tb);
        }
    }
    pthread_mutex_unlock(&g_registry_lock);
}

int rlrec_take(rlrec_packet *packet) {
    pthread_mutex_lock(&g_registry_lock);
    for (uint32_t i = 0; i < g_buffer_count; i++) {
        thread_buffer *tb = g_buffers[i];
        // Overwrite mode leaves packets out of order in the ring: take the oldest sequence number first.
        uint32_t index = g_config.overwrite ? UINT32_MAX : tb->consume_next;
        if (g_config.overwrite) {
            uint64_t best = UINT64_MAX;
            for (uint32_t s = 0; s < tb->sub_count; s++) {
                if (atomic_load_explicit(&tb->state[s], memory_order_acquire) != SUB_READY) continue;
                uint64_t seq;
                memcpy(&seq, sub_base(tb, s) + 52, 8);
                if (seq < best) { best = seq; index = s; }
            }
            if (index == UINT32_MAX) continue;
        } else if (atomic_load_explicit(&tb->state[index], memory_order_acquire) != SUB_READY) {
            continue;
        }
        uint8_t *p = sub_base(tb, index);
        uint64_t bits;
        memcpy(&bits, p + 36, 8);
        packet->data = p;
        packet->size = (uint32_t)(bits / 8);
        packet->tid = tb->tid;
        packet->buffer = i;
        packet->sub_buffer = index;
        pthread_mutex_unlock(&g_registry_lock);
        return 1;
    }
    pthread_mutex_unlock(&g_registry_lock);
    return 0;
}

int rlrec_take_final(rlrec_packet *packet) {
    pthread_mutex_lock(&g_registry_lock);
    for (uint32_t i = 0; i < g_buffer_count && !atomic_load(&g_enabled); i++) {
        thread_buffer *tb = g_buffers[i];
        if (tb->discarded == tb->reported_discards) continue;
        uint8_t *p = tb->final_packet;
        uint64_t size_bits = PACKET_HEADER_SIZE * 8;
        put32(p, 0xC1FC1FC1u);
        memcpy(p + 4, g_config.uuid, 16);
        put64(p + 20, tb->last_ts);
        put64(p + 28, tb->last_ts);
        put64(p + 36, size_bits);
        put64(p + 44, size_bits);
        put64(p + 52, tb->seq++);
        put64(p + 60, tb->discarded);
        put32(p + 68, (uint32_t)tb->tid);
        tb->reported_discards = tb->discarded;
        packet->data = p;
        packet->size = PACKET_HEADER_SIZE;
        packet->tid = tb->tid;
        packet->buffer = i;
        packet->sub_buffer = UINT32_MAX;
        pthread_mutex_unlock(&g_registry_lock);
        return 1;
    }
    pthread_mutex_unlock(&g_registry_lock);
    return 0;
}

void rlrec_release(const rlrec_packet *packet) {
    if (packet->sub_buffer == UINT32_MAX) return;   // a final packet, not a sub-buffer
    pthread_mutex_lock(&g_registry_lock);
    if (packet->buffer < g_buffer_count) {
        thread_buffer *tb = g_buffers[packet->buffer];
        if (!g_config.overwrite) tb->consume_next = (packet->sub_buffer + 1) % tb->sub_count;
        atomic_store_explicit(&tb->state[packet->sub_buffer], SUB_FREE, memory_order_release);
    }
    pthread_mutex_unlock(&g_registry_lock);
}

rlrec_stats rlrec_statistics(void) {
    rlrec_stats stats = {0};
    pthread_mutex_lock(&g_registry_lock);
    for (uint32_t i = 0; i < g_buffer_count; i++) {
        // Exact after rlrec_stop; while recording these are the producers' counters read in passing.
        stats.events_recorded += __atomic_load_n(&g_buffers[i]->recorded, __ATOMIC_RELAXED);
        stats.events_discarded += __atomic_load_n(&g_buffers[i]->discarded, __ATOMIC_RELAXED);
    }
    stats.threads = g_buffer_count;
    stats.threads_without_buffer = atomic_load(&g_no_buffer_drops);
    pthread_mutex_unlock(&g_registry_lock);
    return stats;
}

void rlrec_reset(void) {
    pthread_mutex_lock(&g_registry_lock);
    if (!atomic_load(&g_enabled)) {
        // Buffer structs stay allocated: a thread's TLS may still point at one (it checks the generation
        // before touching it). The packet memory is what is large, and no thread writes it any more.
        for (uint32_t i = 0; i < g_buffer_count; i++) {
            free(g_buffers[i]->memory);
            g_buffers[i]->memory = NULL;
            free((void *)g_buffers[i]->state);
            g_buffers[i]->state = NULL;
            free(g_buffers[i]->packet_events);
            g_buffers[i]->packet_events = NULL;
        }
        g_buffer_count = 0;
    }
    pthread_mutex_unlock(&g_registry_lock);
}

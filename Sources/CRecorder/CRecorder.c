#define _GNU_SOURCE
#include "CRecorder.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define RLREC_HAVE_TSC 1
#else
#define RLREC_HAVE_TSC 0
#endif

#if __has_include(<linux/membarrier.h>)
#include <linux/membarrier.h>
#define RLREC_HAVE_MEMBARRIER 1
#else
#define RLREC_HAVE_MEMBARRIER 0
#endif

#define PACKET_HEADER_SIZE (4 + 16 + 8 * 6 + 4)
#define EVENT_HEADER_SIZE 9
#define MAX_STRING 255

// The wait interposer (CWaitInterposer) builds this file with RLREC_ALLOC_MMAP: there a thread's first event
// comes from inside any program's libc wait call, possibly made under that program's own allocator (or a
// replacement malloc that waits), so thread buffers take their memory from the kernel. Other builds use malloc.
#ifdef RLREC_ALLOC_MMAP
#define RLREC_ALLOC_HEADER 16   // the mapping's size, kept in front of the block (and keeps it 16-byte aligned)
static void *rlrec_calloc(size_t count, size_t size) {
    if (size && count > (SIZE_MAX - RLREC_ALLOC_HEADER) / size) return NULL;
    size_t total = count * size + RLREC_ALLOC_HEADER;
    uint8_t *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
    memcpy(base, &total, sizeof total);
    return base + RLREC_ALLOC_HEADER;
}
static void rlrec_free(void *block) {
    if (!block) return;
    uint8_t *base = (uint8_t *)block - RLREC_ALLOC_HEADER;
    size_t total;
    memcpy(&total, base, sizeof total);
    munmap(base, total);
}
static void *rlrec_realloc(void *block, size_t size) {
    void *grown = rlrec_calloc(1, size);
    if (!grown || !block) return grown;
    size_t old;
    memcpy(&old, (uint8_t *)block - RLREC_ALLOC_HEADER, sizeof old);
    old -= RLREC_ALLOC_HEADER;
    memcpy(grown, block, old < size ? old : size);
    rlrec_free(block);
    return grown;
}
#else
#define rlrec_calloc calloc
#define rlrec_free free
#define rlrec_realloc realloc
#endif

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

// SUB_COPYING: a closed packet a snapshot is copying (rlrec_copy_ring); the flight recorder may not take it back
// until the copy is done.
enum { SUB_FREE = 0, SUB_FILLING = 1, SUB_READY = 2, SUB_COPYING = 3 };

// What the flight recorder keeps of each sub-buffer beside its bytes (producer-written; read by a snapshot once
// it holds the packet as SUB_COPYING).
typedef struct sub_info {
    uint64_t events;                  // in the packet, when it closed (overwrite accounting)
    uint64_t drops_at_open;           // events the thread had dropped (not overwritten) when the packet opened
    uint64_t overwritten_at_close;    // events the ring had overwritten when the packet closed
} sub_info;

// One thread's buffer. Fields marked (producer) are touched only by the owning thread while recording, and by
// rlrec_stop after it has waited for the thread to leave its event (busy == 0). The fields every event reads
// come first, so that an event touches one cache line of this struct.
typedef struct thread_buffer {
    // (producer, hot)
    uint64_t tag;                     // g_state of the recording it belongs to
    uint8_t *memory;                  // sub_count * sub_size
    uint32_t sub_size;
    uint32_t current;                 // sub-buffer being filled; UINT32_MAX when stalled without one
    uint32_t offset;                  // write offset in it; sub_size while stalled, so one compare sends
                                      // every event of a stalled or full sub-buffer to the slow path
    _Atomic int busy;                 // 1 while the thread writes an event
    uint64_t last_ts;                 // the last timestamp handed out: stamps never go below it
    uint64_t events;                  // in the current sub-buffer
    uint64_t anchor_tsc, anchor_ns;   // TSC clock: the pair the thread extrapolates from (see event_time)
    uint64_t first_ts;
    // (producer, per packet)
    uint64_t seq, discarded, recorded;
    uint64_t overwritten;             // the part of `discarded` the flight recorder overwrote (not dropped)
    uint64_t reported_discards;       // `discarded` as written in the last closed packet
    int32_t tid;
    uint32_t sub_count;
    size_t memory_size;               // bytes mapped at `memory`
    _Atomic int *state;               // per sub-buffer: SUB_FREE / SUB_FILLING / SUB_READY / SUB_COPYING
    sub_info *subs;                   // per sub-buffer
    uint8_t final_packet[PACKET_HEADER_SIZE];   // a header-only packet reporting drops made after the last one
    // (consumer)
    uint32_t consume_next;
} thread_buffer;

// What every event reads, together. `state` is (generation << 1) | recording: one load tells an event both
// whether a recording runs and whether its thread buffer belongs to it (a thread can hold a stale buffer of an
// earlier recording, whose memory is gone).
static struct {
    _Atomic uint64_t state;
    _Atomic int clock_tsc;            // 1: stamp events from the TSC; 0: clock_gettime (set by rlrec_start)
    _Atomic int asymmetric;           // membarrier registered: events need only a compiler barrier (see reserve)
    uint64_t tsc_mult;                // ns per TSC tick, 32.32 fixed point (see calibrate_tsc)
    uint64_t tsc_window;              // ticks an anchor is trusted for
    uint64_t switch_ns;               // packet age that closes it at the next event (UINT64_MAX: never)
} g_hot __attribute__((aligned(64)));

static rlrec_config g_config;
static _Atomic uint64_t g_no_buffer_drops;
static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static thread_buffer **g_buffers;
static uint32_t g_buffer_count, g_buffer_capacity;
// initial-exec: the library is linked into executables (or loaded with them), so the thread pointer plus a
// constant finds the slot; the default model for position-independent code calls __tls_get_addr.
static __thread thread_buffer *t_buffer __attribute__((tls_model("initial-exec")));
// The stamp of this thread's last event, kept even when the event was dropped: a loop watching for stalls times
// its callouts with it instead of reading the clock again (rlrec_last_timestamp).
static __thread uint64_t t_last_stamp __attribute__((tls_model("initial-exec")));
static pthread_key_t g_exit_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

// ===== timestamps =====
//
// Events are stamped in CLOCK_MONOTONIC nanoseconds, the loop's clock: analyses compare event times with fire
// dates, enqueue and signal times the loop read with clock_gettime. clock_gettime costs about twice a bare
// RDTSC (the vDSO fences the TSC read and follows a seqlock), so where CLOCK_MONOTONIC is itself made from an
// invariant TSC, an event reads the TSC and converts it with a per-thread anchor:
//
//   ns = anchor_ns + (tsc - anchor_tsc) * mult
//
// where (anchor_tsc, anchor_ns) is a TSC reading and a clock_gettime reading taken together, renewed by the
// first event more than RLREC_TSC_WINDOW_NS after the last renewal (that event gets clock_gettime's value).
// The error within a window is at most the window times the rate error, and it cannot build up, since every
// window starts from clock_gettime again: even an NTP slew of CLOCK_MONOTONIC at its 500 ppm maximum, which
// `mult` would not know of, stays at 0.5 µs. `mult` is measured against CLOCK_MONOTONIC (over the life of the
// process) and raised by 2^-14 (61 ppm), and anchor_tsc is read before anchor_ns: both make an extrapolated
// stamp err ahead of CLOCK_MONOTONIC (by about 100 ns at the end of a window), so that an event is not stamped
// before a clock_gettime reading that preceded it. The event's RDTSC is not fenced (a fence would cost most of
// the saving), so it may execute some tens of cycles early, which the bias covers too. A per-thread clamp keeps
// stamps from going backwards when a renewal lands below the last extrapolation. Each renewal measures how far
// the extrapolation had drifted; a drift beyond RLREC_TSC_DRIFT_LIMIT_NS either way (a TSC that changed rate or
// stepped) ends TSC stamping for the rest of the recording. Without an invariant TSC that drives the kernel's
// clocksource, every event calls clock_gettime.

#define RLREC_TSC_WINDOW_NS 1000000ull
#define RLREC_TSC_DRIFT_LIMIT_NS 1000

static _Atomic uint64_t g_clock_anchors, g_clock_fallbacks;
static _Atomic int64_t g_clock_max_lead, g_clock_max_lag;

static inline uint64_t clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t tsc_to_ns(uint64_t ticks) {
    return (uint64_t)(((unsigned __int128)ticks * g_hot.tsc_mult) >> 32);
}

static void atomic_max(_Atomic int64_t *target, int64_t value) {
    int64_t seen = atomic_load_explicit(target, memory_order_relaxed);
    while (value > seen && !atomic_compare_exchange_weak_explicit(target, &seen, value, memory_order_relaxed,
                                                                  memory_order_relaxed)) {}
}

#if RLREC_HAVE_TSC

typedef struct { uint64_t tsc, ns, width; } clock_pair;

static inline uint64_t tsc_ordered(void) {
    _mm_lfence();
    return __rdtsc();
}

static uint64_t g_tight_pair = 1000;   // ticks: a pair this narrow is as good as pairs get (calibrate_tsc)

/// A TSC reading and a clock_gettime reading taken at nearly the same moment: `tsc` is read before `ns`,
/// `width` ticks apart from a TSC read after it. The narrowest of up to `attempts` tries: an interrupt or a
/// virtual machine exit inside one widens it by microseconds, and the anchor would then run ahead by as much.
static clock_pair read_pair(int attempts) {
    clock_pair best = { 0, 0, UINT64_MAX };
    for (int attempt = 0; attempt < attempts; attempt++) {
        uint64_t before = tsc_ordered();
        uint64_t ns = clock_ns();
        uint64_t after = tsc_ordered();
        if (after - before < best.width) best = (clock_pair){ before, ns, after - before };
        if (best.width <= g_tight_pair) break;
    }
    return best;
}

/// Whether CLOCK_MONOTONIC can be extrapolated from the TSC: the CPU says its TSC is invariant (constant rate
/// in every P-, C- and T-state), and the kernel uses the TSC as its clocksource, which it does only after
/// checking that every CPU's TSC agrees.
static int tsc_eligible(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return 0;
    __get_cpuid(0x80000007, &a, &b, &c, &d);
    if (!(d & (1u << 8))) return 0;
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char name[16] = {0};
    ssize_t n = read(fd, name, sizeof name - 1);
    close(fd);
    return n >= 3 && memcmp(name, "tsc", 3) == 0 && (n == 3 || name[3] == '\n');
}

static clock_pair g_first_pair;       // the process's first calibration pair (under g_registry_lock)
static uint64_t g_unbiased_mult;      // the rate the last calibration measured

/// Measures the TSC's rate against CLOCK_MONOTONIC over the time since the first calibration of the process
/// (the longer the baseline, the smaller the error of the two pairs' few tens of nanoseconds); the first
/// recording of a process waits 2 ms for a baseline. Returns 0 when the measurement makes no sense.
static int calibrate_tsc(void) {
    // What a pair costs when nothing interrupts it: the narrowest of many, with some slack.
    g_tight_pair = 0;
    clock_pair narrowest = read_pair(16);
    g_tight_pair = narrowest.width + narrowest.width / 2 + 64;
    clock_pair now = read_pair(16);
    for (int fresh = 0; fresh < 2; fresh++) {
        if (g_first_pair.ns == 0 || fresh) {
            g_first_pair = now;
            struct timespec pause = { 0, 2000000 };
            while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
            now = read_pair(16);
        }
        if (now.tsc <= g_first_pair.tsc || now.ns < g_first_pair.ns + 1000000) continue;
        unsigned __int128 mult = ((unsigned __int128)(now.ns - g_first_pair.ns) << 32) / (now.tsc - g_first_pair.tsc);
        // A rate far from the previous measurement means the long baseline spans something the TSC did not
        // count like CLOCK_MONOTONIC (a suspend, a migrated VM): measure afresh.
        if (!fresh && g_unbiased_mult && (mult > g_unbiased_mult + (g_unbiased_mult >> 10) ||
                                          mult < g_unbiased_mult - (g_unbiased_mult >> 10))) continue;
        if (mult == 0 || mult > ((unsigned __int128)1 << 40)) return 0;
        g_unbiased_mult = (uint64_t)mult;
        g_hot.tsc_mult = (uint64_t)(mult + (mult >> 14));
        g_hot.tsc_window = (uint64_t)(((unsigned __int128)RLREC_TSC_WINDOW_NS << 32) / g_hot.tsc_mult);
        return 1;
    }
    return 0;
}

/// A new anchor for the calling thread; returns its CLOCK_MONOTONIC time. Checks first how far the old
/// anchor's extrapolation had drifted, when the old anchor is recent enough for that to mean something.
static __attribute__((noinline, cold)) uint64_t reanchor(thread_buffer *tb) {
    clock_pair pair = read_pair(8);
    uint64_t elapsed = pair.tsc - tb->anchor_tsc;
    if (tb->anchor_ns != 0 && pair.width <= g_tight_pair) {
        if ((int64_t)elapsed < 0) {
            // The TSC went backwards between two reads of this thread: the CPUs' TSCs disagree after all.
            atomic_fetch_add_explicit(&g_clock_fallbacks, 1, memory_order_relaxed);
            atomic_store_explicit(&g_hot.clock_tsc, 0, memory_order_relaxed);
        } else if (elapsed < 2 * g_hot.tsc_window) {
            int64_t drift = (int64_t)(tb->anchor_ns + tsc_to_ns(elapsed) - pair.ns);
            atomic_fetch_add_explicit(&g_clock_anchors, 1, memory_order_relaxed);
            if (drift >= 0) atomic_max(&g_clock_max_lead, drift); else atomic_max(&g_clock_max_lag, -drift);
            if (drift > RLREC_TSC_DRIFT_LIMIT_NS || drift < -RLREC_TSC_DRIFT_LIMIT_NS) {
                atomic_fetch_add_explicit(&g_clock_fallbacks, 1, memory_order_relaxed);
                atomic_store_explicit(&g_hot.clock_tsc, 0, memory_order_relaxed);
            }
        }
    }
    tb->anchor_tsc = pair.tsc;
    tb->anchor_ns = pair.ns;
    return pair.ns;
}

#endif /* RLREC_HAVE_TSC */

/// The timestamp of an event of this thread (producer side): never below the thread's previous one.
static inline __attribute__((always_inline)) uint64_t event_time(thread_buffer *tb) {
    uint64_t ns;
#if RLREC_HAVE_TSC
    if (LIKELY(atomic_load_explicit(&g_hot.clock_tsc, memory_order_relaxed))) {
        uint64_t elapsed = __rdtsc() - tb->anchor_tsc;
        ns = LIKELY(elapsed < g_hot.tsc_window) ? tb->anchor_ns + tsc_to_ns(elapsed) : reanchor(tb);
    } else
#endif
    {
        ns = clock_ns();
    }
    return ns > tb->last_ts ? ns : tb->last_ts;
}

/// The first timestamp of a thread buffer (anchors the TSC clock).
static uint64_t first_time(thread_buffer *tb) {
#if RLREC_HAVE_TSC
    if (atomic_load_explicit(&g_hot.clock_tsc, memory_order_relaxed)) return reanchor(tb);
#endif
    return clock_ns();
}

// ===== the stop protocol's fences =====
//
// rlrec_stop must not take over a thread's buffer while the thread writes an event, and a thread must not start
// an event once stop has looked at it: a Dekker handshake (the event stores busy = 1 then loads g_hot.state;
// stop stores state then loads busy). That needs a full fence on both sides, and an event's fence (a locked
// instruction) was its most expensive step after the clock. With membarrier(2) the cost moves to stop: events
// keep only a compiler barrier, and stop's MEMBARRIER_CMD_PRIVATE_EXPEDITED runs a full fence on every CPU
// running a thread of this process (a thread not running has passed one in its last context switch). Either an
// event's busy store precedes that fence, and stop sees it, or the event's state load follows it, and sees the
// stop. Without membarrier events use a full fence.

static int membarrier_ready(void) {
#if RLREC_HAVE_MEMBARRIER
    // Under g_registry_lock. Registration belongs to the process: a child made by fork() registers again.
    static pid_t registered_for = 0;
    static int registered = 0;
    if (registered_for != getpid()) {
        registered_for = getpid();
        long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        registered = commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                     (commands & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) &&
                     syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    }
    return registered;
#else
    return 0;
#endif
}

/// Stop's side of the handshake, after it stored the new state.
static void heavy_fence(void) {
    atomic_thread_fence(memory_order_seq_cst);
#if RLREC_HAVE_MEMBARRIER
    if (atomic_load_explicit(&g_hot.asymmetric, memory_order_relaxed) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        // Cannot fail once this process registered (rlrec_start checked); should it anyway, every store
        // buffer drains within microseconds.
        usleep(1000);
    }
#endif
}

// ===== packets =====

static inline uint8_t *sub_base(thread_buffer *tb, uint32_t index) {
    return tb->memory + (size_t)index * tb->sub_size;
}

static void thread_exited(void *unused);

static void make_key(void) {
    pthread_key_create(&g_exit_key, thread_exited);
}

static inline void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/// Writes a packet's header and context (TraceSchema's packet layout) for `size` bytes starting at `p`, and
/// counts the thread's discards so far as reported.
static void write_packet_header(uint8_t *p, thread_buffer *tb, uint64_t begin_ts, uint32_t size) {
    uint64_t size_bits = (uint64_t)size * 8;
    put32(p, 0xC1FC1FC1u);
    memcpy(p + 4, g_config.uuid, 16);
    put64(p + 20, begin_ts);
    put64(p + 28, tb->last_ts);
    put64(p + 36, size_bits);
    put64(p + 44, size_bits);
    put64(p + 52, tb->seq++);
    put64(p + 60, tb->discarded);
    put32(p + 68, (uint32_t)tb->tid);
    tb->reported_discards = tb->discarded;
}

/// Fills the packet header and context of the current sub-buffer and hands it to the consumer.
static void close_current(thread_buffer *tb) {
    write_packet_header(sub_base(tb, tb->current), tb, tb->first_ts, tb->offset);
    tb->subs[tb->current].events = tb->events;
    tb->subs[tb->current].overwritten_at_close = tb->overwritten;
    atomic_store_explicit(&tb->state[tb->current], SUB_READY, memory_order_release);
    tb->current = UINT32_MAX;
    tb->offset = tb->sub_size;
}

/// Starts filling sub-buffer `index`.
static void open_sub_buffer(thread_buffer *tb, uint32_t index, uint64_t ts) {
    tb->current = index;
    tb->offset = PACKET_HEADER_SIZE;
    tb->first_ts = tb->last_ts = ts;
    tb->events = 0;
    tb->subs[index].drops_at_open = tb->discarded - tb->overwritten;
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
        // Flight recorder: the oldest packet gives way; its events count as lost. Unless a snapshot is copying
        // it right now (then this event, and the thread's next ones until the copy is done, are dropped and
        // counted): acquire, so that the copy's reads come before this thread writes over them.
        int expected = SUB_READY;
        if (!atomic_compare_exchange_strong_explicit(&tb->state[next], &expected, SUB_FILLING, memory_order_acquire,
                                                     memory_order_relaxed)) {
            return 0;
        }
        uint64_t lost = tb->subs[next].events;
        tb->overwritten += lost;
        __atomic_store_n(&tb->discarded, tb->discarded + lost, __ATOMIC_RELAXED);
        __atomic_store_n(&tb->recorded, tb->recorded - lost, __ATOMIC_RELAXED);
    } else if (state != SUB_FREE) {
        return 0;
    } else {
        atomic_store_explicit(&tb->state[next], SUB_FILLING, memory_order_relaxed);
    }
    open_sub_buffer(tb, next, ts);
    return 1;
}

// ===== thread buffers =====

static void free_buffer_memory(thread_buffer *tb) {
    if (tb->memory) munmap(tb->memory, tb->memory_size);
    tb->memory = NULL;
    rlrec_free((void *)tb->state);
    tb->state = NULL;
    rlrec_free(tb->subs);
    tb->subs = NULL;
}

static __attribute__((noinline, cold)) thread_buffer *attach_thread(uint64_t tag) {
    pthread_once(&g_key_once, make_key);
    thread_buffer *tb = rlrec_calloc(1, sizeof *tb);
    if (!tb) return NULL;
    tb->tag = tag;
    tb->tid = (int32_t)syscall(SYS_gettid);
    tb->sub_size = g_config.sub_buffer_size;
    tb->sub_count = g_config.sub_buffer_count;
    tb->memory_size = (size_t)tb->sub_size * tb->sub_count;
    // Populated now, in one call: a page first touched by an event costs that event a page fault (several
    // microseconds on a virtual machine, once per 4 KiB, inside the traced callout). The thread's first event
    // pays for the whole buffer instead, once.
    void *memory = mmap(NULL, tb->memory_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    tb->memory = memory == MAP_FAILED ? NULL : memory;
    tb->state = rlrec_calloc(tb->sub_count, sizeof *tb->state);
    tb->subs = rlrec_calloc(tb->sub_count, sizeof *tb->subs);
    if (!tb->memory || !tb->state || !tb->subs) {
        free_buffer_memory(tb);
        rlrec_free(tb);
        return NULL;
    }
    atomic_store_explicit(&tb->state[0], SUB_FILLING, memory_order_relaxed);
    pthread_mutex_lock(&g_registry_lock);
    if (atomic_load(&g_hot.state) != tag) {
        pthread_mutex_unlock(&g_registry_lock);   // the recording ended meanwhile
        free_buffer_memory(tb);
        rlrec_free(tb);
        return NULL;
    }
    // Under the lock: this thread is not busy yet, so only the lock keeps a new rlrec_start from recalibrating
    // the clock while it is read.
    open_sub_buffer(tb, 0, first_time(tb));
    if (g_buffer_count == g_buffer_capacity) {
        uint32_t capacity = g_buffer_capacity ? g_buffer_capacity * 2 : 16;
        thread_buffer **grown = rlrec_realloc(g_buffers, capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&g_registry_lock);
            free_buffer_memory(tb);
            rlrec_free(tb);
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
    // Full fences on this side whatever the mode: that is always enough for the handshake.
    atomic_store_explicit(&tb->busy, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&g_hot.state, memory_order_seq_cst) == tb->tag &&
        tb->current != UINT32_MAX && tb->events > 0) {
        close_current(tb);
    }
    atomic_store_explicit(&tb->busy, 0, memory_order_release);
}

// ===== the event path =====

/// The slow half of reserve: the current sub-buffer is full or there is none. Moves to the next one, or drops
/// the event (counting it) and leaves the event. Returns 1 when there is room now.
static __attribute__((noinline, cold)) int make_room(thread_buffer *tb, uint32_t total, uint64_t ts) {
    if (PACKET_HEADER_SIZE + total <= tb->sub_size && switch_sub_buffer(tb, ts)) return 1;
    // Written atomically: rlrec_statistics reads it from another thread while recording.
    __atomic_store_n(&tb->discarded, tb->discarded + 1, __ATOMIC_RELAXED);
    atomic_store_explicit(&tb->busy, 0, memory_order_release);
    return 0;
}

/// Closes a packet that has been open for the switch interval, so that the writer can take it (LTTng's switch
/// timer, without a timer): only when the next sub-buffer is free, so that no event is dropped for it.
static __attribute__((noinline, cold)) void switch_by_age(thread_buffer *tb, uint64_t ts) {
    if (tb->events == 0) return;
    uint32_t next = (tb->current + 1) % tb->sub_count;
    if (atomic_load_explicit(&tb->state[next], memory_order_acquire) != SUB_FREE) return;
    atomic_store_explicit(&tb->state[next], SUB_FILLING, memory_order_relaxed);
    close_current(tb);
    open_sub_buffer(tb, next, ts);
}

static __attribute__((noinline, cold)) void count_no_buffer_drop(void) {
    atomic_fetch_add_explicit(&g_no_buffer_drops, 1, memory_order_relaxed);
}

/// Reserves `size` bytes for an event and writes its header; NULL when not recording or dropped.
/// A non-NULL return leaves the buffer busy: finish with commit().
static inline __attribute__((always_inline)) uint8_t *reserve(uint8_t event_id, uint32_t size, thread_buffer **out) {
    uint64_t state = atomic_load_explicit(&g_hot.state, memory_order_acquire);
    if (!(state & 1)) return NULL;
    thread_buffer *tb = t_buffer;
    if (UNLIKELY(!tb || tb->tag != state)) {
        tb = attach_thread(state);
        if (!tb) {
            count_no_buffer_drop();
            return NULL;
        }
    }
    // The event's half of the handshake with rlrec_stop (see "the stop protocol's fences").
    atomic_store_explicit(&tb->busy, 1, memory_order_relaxed);
    if (LIKELY(atomic_load_explicit(&g_hot.asymmetric, memory_order_relaxed))) atomic_signal_fence(memory_order_seq_cst);
    else atomic_thread_fence(memory_order_seq_cst);
    if (UNLIKELY(atomic_load_explicit(&g_hot.state, memory_order_acquire) != state)) {
        atomic_store_explicit(&tb->busy, 0, memory_order_release);
        return NULL;
    }
    uint64_t ts = event_time(tb);
    t_last_stamp = ts;
    uint32_t total = EVENT_HEADER_SIZE + size;
    if (UNLIKELY(tb->offset + total > tb->sub_size) && !make_room(tb, total, ts)) return NULL;
    if (UNLIKELY(ts - tb->first_ts >= g_hot.switch_ns)) switch_by_age(tb, ts);
    uint8_t *p = tb->memory + (size_t)tb->current * tb->sub_size + tb->offset;
    p[0] = event_id;
    memcpy(p + 1, &ts, 8);
    tb->last_ts = ts;
    if (tb->events == 0) tb->first_ts = ts;
    *out = tb;
    return p + EVENT_HEADER_SIZE;
}

static inline __attribute__((always_inline)) void commit(thread_buffer *tb, uint32_t size) {
    tb->offset += EVENT_HEADER_SIZE + size;
    tb->events++;
    // Counted per event, not when the packet closes: progress read while recording would otherwise stay at 0
    // until a whole packet (256 KiB by default) is full. Only this thread writes it; readers load it relaxed.
    __atomic_store_n(&tb->recorded, tb->recorded + 1, __ATOMIC_RELAXED);
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

// The encoders, one per event of runloop_events.def: the payload's size from the field types (strings measured
// once), then each field stored in order. After expansion each is the straight-line code one would write by
// hand (constant sizes folded), so the hot path costs what it did when they were written out.
#define RLREC_STRING_SIZE_string(name) uint32_t name##_size = string_size(name);
#define RLREC_STRING_SIZE_u8(name)
#define RLREC_STRING_SIZE_u32(name)
#define RLREC_STRING_SIZE_s32(name)
#define RLREC_STRING_SIZE_u64(name)
#define RLREC_STRING_SIZE_s64(name)
#define RLREC_STRING_SIZE_enum(name)
#define RLREC_STRING_SIZE_u8_array(name)
#define RLREC_STRING_SIZE_u32_array(name)
#define RLREC_STRING_SIZE_s32_array(name)
#define RLREC_STRING_SIZE_u64_array(name)
#define RLREC_STRING_SIZE_s64_array(name)
#define RLREC_STRING_SIZES(fields) RLREC_SS_A fields (0)
#define RLREC_SS_A(more, ...) RL_CAT(RLREC_SS_A_, more)(__VA_ARGS__)
#define RLREC_SS_B(more, ...) RL_CAT(RLREC_SS_B_, more)(__VA_ARGS__)
#define RLREC_SS_A_0()
#define RLREC_SS_B_0()
#define RLREC_SS_A_1(type, name, enumeration) RLREC_STRING_SIZE_##type(name) RLREC_SS_B
#define RLREC_SS_B_1(type, name, enumeration) RLREC_STRING_SIZE_##type(name) RLREC_SS_A

// `extra` is an enumeration's name, or an array's length field.
#define RLREC_BYTES_string(name, extra) name##_size
#define RLREC_BYTES_u8(name, extra) (uint32_t)sizeof(uint8_t)
#define RLREC_BYTES_u32(name, extra) (uint32_t)sizeof(uint32_t)
#define RLREC_BYTES_s32(name, extra) (uint32_t)sizeof(int32_t)
#define RLREC_BYTES_u64(name, extra) (uint32_t)sizeof(uint64_t)
#define RLREC_BYTES_s64(name, extra) (uint32_t)sizeof(int64_t)
#define RLREC_BYTES_enum(name, extra) (uint32_t)sizeof(uint8_t)
#define RLREC_BYTES_ARRAY(element, length) ((uint32_t)sizeof(uint32_t) + (uint32_t)(length) * (uint32_t)sizeof(element))
#define RLREC_BYTES_u8_array(name, length) RLREC_BYTES_ARRAY(uint8_t, length)
#define RLREC_BYTES_u32_array(name, length) RLREC_BYTES_ARRAY(uint32_t, length)
#define RLREC_BYTES_s32_array(name, length) RLREC_BYTES_ARRAY(int32_t, length)
#define RLREC_BYTES_u64_array(name, length) RLREC_BYTES_ARRAY(uint64_t, length)
#define RLREC_BYTES_s64_array(name, length) RLREC_BYTES_ARRAY(int64_t, length)
#define RLREC_PAYLOAD_SIZE(fields) (0 RLREC_SZ_A fields (0))
#define RLREC_SZ_A(more, ...) RL_CAT(RLREC_SZ_A_, more)(__VA_ARGS__)
#define RLREC_SZ_B(more, ...) RL_CAT(RLREC_SZ_B_, more)(__VA_ARGS__)
#define RLREC_SZ_A_0()
#define RLREC_SZ_B_0()
#define RLREC_SZ_A_1(type, name, enumeration) + RLREC_BYTES_##type(name, enumeration) RLREC_SZ_B
#define RLREC_SZ_B_1(type, name, enumeration) + RLREC_BYTES_##type(name, enumeration) RLREC_SZ_A

#define RLREC_STORE_string(name, extra) p = put_string(p, name, name##_size);
#define RLREC_STORE_u8(name, extra) PUT(p, name);
#define RLREC_STORE_u32(name, extra) PUT(p, name);
#define RLREC_STORE_s32(name, extra) PUT(p, name);
#define RLREC_STORE_u64(name, extra) PUT(p, name);
#define RLREC_STORE_s64(name, extra) PUT(p, name);
#define RLREC_STORE_enum(name, extra) PUT(p, name);
// As LTTng-UST stores a sequence: its own element count, then the elements.
#define RLREC_STORE_ARRAY(element, name, length)                 \
    PUT(p, (uint32_t)(length));                                  \
    if ((length) > 0) memcpy(p, name, (size_t)(length) * sizeof(element)); \
    p += (size_t)(length) * sizeof(element);
#define RLREC_STORE_u8_array(name, length) RLREC_STORE_ARRAY(uint8_t, name, length)
#define RLREC_STORE_u32_array(name, length) RLREC_STORE_ARRAY(uint32_t, name, length)
#define RLREC_STORE_s32_array(name, length) RLREC_STORE_ARRAY(int32_t, name, length)
#define RLREC_STORE_u64_array(name, length) RLREC_STORE_ARRAY(uint64_t, name, length)
#define RLREC_STORE_s64_array(name, length) RLREC_STORE_ARRAY(int64_t, name, length)
#define RLREC_STORES(fields) RLREC_ST_A fields (0)
#define RLREC_ST_A(more, ...) RL_CAT(RLREC_ST_A_, more)(__VA_ARGS__)
#define RLREC_ST_B(more, ...) RL_CAT(RLREC_ST_B_, more)(__VA_ARGS__)
#define RLREC_ST_A_0()
#define RLREC_ST_B_0()
#define RLREC_ST_A_1(type, name, enumeration) RLREC_STORE_##type(name, enumeration) RLREC_ST_B
#define RLREC_ST_B_1(type, name, enumeration) RLREC_STORE_##type(name, enumeration) RLREC_ST_A

#define RLREC_ENCODE(event_id, fields)                      \
    {                                                       \
        RLREC_STRING_SIZES(fields)                          \
        uint32_t size = RLREC_PAYLOAD_SIZE(fields);         \
        thread_buffer *tb;                                  \
        uint8_t *p = reserve(event_id, size, &tb);          \
        if (!p) return;                                     \
        RLREC_STORES(fields)                                \
        (void)p;                                            \
        commit(tb, size);                                   \
    }

#define RL_FIELD RL_FIELD_TUPLE
#define RL_ENUM_FIELD RL_ENUM_FIELD_TUPLE
#define RL_ARRAY_FIELD RL_ARRAY_FIELD_TUPLE
#define RL_EVENT_CLASS(class, fields) \
    void rlrec_##class(uint8_t event_id RL_MORE_PARAMS(fields)) RLREC_ENCODE(event_id, fields)
#define RL_EVENT(id, name, fields) void rlrec_##name(RL_PARAMS(fields)) RLREC_ENCODE(id, fields)
#include "runloop_events.def"

uint64_t rlrec_last_timestamp(void) {
    return (atomic_load_explicit(&g_hot.state, memory_order_relaxed) & 1) ? t_last_stamp : 0;
}

// ===== flight-recorder snapshots =====

rlrec_snapshot_cut rlrec_close_thread_packet(uint64_t at_ns) {
    rlrec_snapshot_cut cut = { NULL, 0, at_ns };
    uint64_t state = atomic_load_explicit(&g_hot.state, memory_order_acquire);
    if (!(state & 1)) return cut;
    thread_buffer *tb = t_buffer;
    if (!tb || tb->tag != state) return cut;
    // The handshake with rlrec_stop, as an event does it (see reserve).
    atomic_store_explicit(&tb->busy, 1, memory_order_relaxed);
    if (LIKELY(atomic_load_explicit(&g_hot.asymmetric, memory_order_relaxed))) atomic_signal_fence(memory_order_seq_cst);
    else atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&g_hot.state, memory_order_acquire) == state) {
        if (tb->current != UINT32_MAX && tb->events > 0) {
            // When the next sub-buffer cannot be had (a snapshot copies it), the packet is closed all the same and
            // the thread's next event looks for room again.
            switch_sub_buffer(tb, tb->last_ts);
        }
        cut.thread = tb;
        cut.packets = tb->seq;
    }
    atomic_store_explicit(&tb->busy, 0, memory_order_release);
    return cut;
}

static uint64_t packet_sequence(thread_buffer *tb, uint32_t index) {
    uint64_t seq;
    memcpy(&seq, sub_base(tb, index) + 52, 8);
    return seq;
}

static uint64_t packet_end(thread_buffer *tb, uint32_t index) {
    uint64_t ts;
    memcpy(&ts, sub_base(tb, index) + 28, 8);
    return ts;
}

/// Whether a snapshot cut at `cut` holds the packet: the asking thread's up to the one it closed, others' closed
/// by the cut's moment.
static int within_cut(thread_buffer *tb, uint32_t index, const rlrec_snapshot_cut *cut) {
    if (cut->thread == tb) return packet_sequence(tb, index) < cut->packets;
    return packet_end(tb, index) <= cut->at_ns;
}

static uint32_t packet_bytes(thread_buffer *tb, uint32_t index) {
    uint64_t bits;
    memcpy(&bits, sub_base(tb, index) + 36, 8);
    return (uint32_t)(bits / 8);
}

int rlrec_copy_ring(rlrec_stream_sink sink, void *context, const rlrec_snapshot_cut *cut) {
    if (!g_config.overwrite) return -1;
    int copied = 0;
    for (uint32_t i = 0;; i++) {
        // The lock only to find the thread: a pinned packet is out of its producer's reach, and the buffers are
        // freed only by rlrec_reset, after a stop (never during a copy). A thread making its first event waits
        // for this lock: it is not held through the copy.
        pthread_mutex_lock(&g_registry_lock);
        thread_buffer *tb = i < g_buffer_count && (atomic_load(&g_hot.state) & 1) ? g_buffers[i] : NULL;
        pthread_mutex_unlock(&g_registry_lock);
        if (!tb) break;
        uint32_t *pinned = rlrec_calloc(tb->sub_count, sizeof *pinned);
        if (!pinned) return -1;
        // Hold every closed packet, so that the thread cannot take one back during the copy: it drops (and
        // counts) events instead, should its ring come round that far. Passes until one pins nothing new: a
        // packet that closed behind the previous pass (the thread's newest) is taken too, or the copy would
        // have a hole where the ring has none.
        uint32_t count = 0;
        for (int fresh = 1; fresh && count < tb->sub_count;) {
            fresh = 0;
            for (uint32_t s = 0; s < tb->sub_count; s++) {
                int expected = SUB_READY;
                if (atomic_compare_exchange_strong_explicit(&tb->state[s], &expected, SUB_COPYING, memory_order_acquire,
                                                            memory_order_relaxed)) {
                    pinned[count++] = s;
                    fresh = 1;
                }
            }
        }
        // Oldest first, as a stream file holds them.
        for (uint32_t a = 1; a < count; a++) {
            uint32_t index = pinned[a];
            uint64_t seq = packet_sequence(tb, index);
            uint32_t b = a;
            while (b > 0 && packet_sequence(tb, pinned[b - 1]) > seq) { pinned[b] = pinned[b - 1]; b--; }
            pinned[b] = index;
        }
        // Packets closed after the cut are newer than the moment the snapshot shows (the newest, so the last
        // ones); the calling thread's own (a snapshot thread's names) are always in.
        uint32_t end = count;
        if (cut && tb != t_buffer) {
            while (end > 0 && !within_cut(tb, pinned[end - 1], cut)) end--;
        }
        // Should the sequence still break (a packet taken back between two passes), the copy keeps the unbroken
        // run of the newest packets: a gap would be a hole with no count.
        uint32_t first = 0;
        for (uint32_t a = 1; a < end; a++) {
            if (packet_sequence(tb, pinned[a]) != packet_sequence(tb, pinned[a - 1]) + 1) first = a;
        }
        size_t total = 0;
        for (uint32_t a = first; a < end; a++) total += packet_bytes(tb, pinned[a]);
        uint8_t *stream = end > first ? rlrec_calloc(1, total) : NULL;
        if (stream) {
            // A packet's events_discarded counts what the ring overwrote too; in a snapshot only drops inside its
            // span are losses: the count becomes the drops since the snapshot's first packet opened.
            // Sequence numbers count from the copy's first packet the same way: the packets the ring let go
            // before it are not missing from the snapshot.
            uint64_t base = tb->subs[pinned[first]].drops_at_open, first_seq = packet_sequence(tb, pinned[first]);
            size_t at = 0;
            for (uint32_t a = first; a < end; a++) {
                uint32_t index = pinned[a], bytes = packet_bytes(tb, index);
                memcpy(stream + at, sub_base(tb, index), bytes);
                uint64_t discarded;
                memcpy(&discarded, stream + at + 60, 8);
                uint64_t dropped = discarded - tb->subs[index].overwritten_at_close;
                put64(stream + at + 60, dropped >= base ? dropped - base : 0);
                put64(stream + at + 52, packet_sequence(tb, index) - first_seq);
                at += bytes;
            }
        }
        for (uint32_t a = 0; a < count; a++) {
            atomic_store_explicit(&tb->state[pinned[a]], SUB_READY, memory_order_release);
        }
        rlrec_free(pinned);
        if (end > first && !stream) return -1;
        if (stream) {
            sink(context, tb->tid, stream, total);
            rlrec_free(stream);
            copied++;
        }
    }
    return copied;
}

// ===== the clock, for other code =====

int rlrec_tsc_clock_eligible(void) {
#if RLREC_HAVE_TSC
    const char *forced = getenv("RLCTL_RECORDER_CLOCK");
    return !(forced && strcmp(forced, "clock_gettime") == 0) && tsc_eligible();
#else
    return 0;
#endif
}

void rlrec_clock_pair(int attempts, uint64_t *tsc, uint64_t *ns) {
#if RLREC_HAVE_TSC
    clock_pair pair = read_pair(attempts);
    *tsc = pair.tsc;
    *ns = pair.ns;
#else
    (void)attempts;
    *tsc = 0;
    *ns = clock_ns();
#endif
}

// ===== control =====

static int use_tsc(const rlrec_config *config) {
#if RLREC_HAVE_TSC
    if (config->clock != RLREC_CLOCK_AUTOMATIC) return 0;
    return rlrec_tsc_clock_eligible() && calibrate_tsc();
#else
    (void)config;
    return 0;
#endif
}

int rlrec_start(const rlrec_config *config) {
    pthread_mutex_lock(&g_registry_lock);
    uint64_t state = atomic_load(&g_hot.state);
    if ((state & 1) || g_buffer_count != 0) {
        pthread_mutex_unlock(&g_registry_lock);
        return -1;
    }
    g_config = *config;
    if (g_config.sub_buffer_size < 4096) g_config.sub_buffer_size = 4096;
    if (g_config.sub_buffer_count < 2) g_config.sub_buffer_count = 2;
    atomic_store(&g_no_buffer_drops, 0);
    atomic_store(&g_clock_anchors, 0);
    atomic_store(&g_clock_fallbacks, 0);
    atomic_store(&g_clock_max_lead, 0);
    atomic_store(&g_clock_max_lag, 0);
    atomic_store(&g_hot.clock_tsc, use_tsc(&g_config));
    // A flight recorder writes only at stop: closing packets early would only shorten what its ring holds.
    g_hot.switch_ns = (g_config.switch_interval_ns == 0 || g_config.overwrite) ? UINT64_MAX : g_config.switch_interval_ns;
    atomic_store_explicit(&g_hot.asymmetric, membarrier_ready(), memory_order_relaxed);
    // Publishes the settings above to every event that sees the new state (an acquire load).
    atomic_store(&g_hot.state, ((state >> 1) + 1) << 1 | 1);
    pthread_mutex_unlock(&g_registry_lock);
    return 0;
}

void rlrec_stop(void) {
    pthread_mutex_lock(&g_registry_lock);
    atomic_store_explicit(&g_hot.state, atomic_load(&g_hot.state) & ~(uint64_t)1, memory_order_seq_cst);
    heavy_fence();
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
                uint64_t seq = packet_sequence(tb, s);
                if (seq < best) { best = seq; index = s; }
            }
            if (index == UINT32_MAX) continue;
        } else if (atomic_load_explicit(&tb->state[index], memory_order_acquire) != SUB_READY) {
            continue;
        }
        packet->data = sub_base(tb, index);
        packet->size = packet_bytes(tb, index);
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
    for (uint32_t i = 0; i < g_buffer_count && !(atomic_load(&g_hot.state) & 1); i++) {
        thread_buffer *tb = g_buffers[i];
        if (tb->discarded == tb->reported_discards) continue;
        // Header only: the drops made after the last packet, at the thread's last time.
        write_packet_header(tb->final_packet, tb, tb->last_ts, PACKET_HEADER_SIZE);
        packet->data = tb->final_packet;
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

int rlrec_thread_statistics(uint32_t index, int32_t *tid, uint64_t *recorded) {
    pthread_mutex_lock(&g_registry_lock);
    int found = index < g_buffer_count;
    if (found) {
        *tid = g_buffers[index]->tid;
        *recorded = __atomic_load_n(&g_buffers[index]->recorded, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&g_registry_lock);
    return found;
}

rlrec_clock_stats rlrec_clock_statistics(void) {
    rlrec_clock_stats stats = {0};
    stats.tsc = atomic_load_explicit(&g_hot.clock_tsc, memory_order_relaxed);
    stats.fallbacks = atomic_load_explicit(&g_clock_fallbacks, memory_order_relaxed);
    stats.anchors_checked = atomic_load_explicit(&g_clock_anchors, memory_order_relaxed);
    stats.max_lead_ns = atomic_load_explicit(&g_clock_max_lead, memory_order_relaxed);
    stats.max_lag_ns = atomic_load_explicit(&g_clock_max_lag, memory_order_relaxed);
    return stats;
}

void rlrec_reset(void) {
    pthread_mutex_lock(&g_registry_lock);
    if (!(atomic_load(&g_hot.state) & 1)) {
        // Buffer structs stay allocated: a thread's TLS may still point at one (it checks the tag before
        // touching it). The packet memory is what is large, and no thread writes it any more.
        for (uint32_t i = 0; i < g_buffer_count; i++) free_buffer_memory(g_buffers[i]);
        g_buffer_count = 0;
    }
    pthread_mutex_unlock(&g_registry_lock);
}

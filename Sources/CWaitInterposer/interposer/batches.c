// The LTTng path of the interposer: waits batched per thread into runloop:wait_batch events.
//
// One lttng-ust event costs about 96 ns here (docs/lttng.md), so a wait_begin and a wait_end per wait cost twice
// the 100 ns a wrapped wait may cost. Instead, each thread keeps its waits in a batch of its own (static TLS: no
// allocation, no lock on the wait's path) and sends one wait_batch per RLI_BATCH_WAITS waits. A wait costs two
// clock reads and a few stores; the event is shared by 32. The clock reads are the TSC where CLOCK_MONOTONIC can
// be extrapolated from it (the embedded recorder's test): clock_gettime took 47 of a wait's 80 ns. A batch takes
// a (TSC, CLOCK_MONOTONIC) pair when its first wait begins and another when it is sent, and its ticks become ns
// between the two: the rate is measured over the batch itself, so no calibration ages, and the error is the
// pairs' own (tens of ns). A thread's times never go back from one batch to the next (clamped, as the recorder's).
//
// Batches held back would blind a live view and lose waits at exit, so:
//   - the flusher thread sends what each thread has finished and not sent (a thread blocked in a long wait, one
//     that waits rarely) every RLI_FLUSH_INTERVAL_MS (RLCTL_ANY_FLUSH_INTERVAL_MS: the tests' stress runs it every
//     millisecond);
//   - a thread's batch is sent when it exits (its key's destructor), and every batch, with the wait a thread is
//     still in, when the recording ends (exit, exec: rli_batches_finish);
//   - a forked child forgets its parent's batches (the parent sends them).
//
// Who sends a batch names its thread in the event (tid), since the flusher and the finisher send other threads'.
// Sending and resetting a batch happen under the batch's own lock (a spin: held for one event); the owner appends
// without it: it writes the record past `committed` and then publishes it with a release store.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "CRecorder.h"
#include "interposer.h"
#include "provider/rl_provider_abi.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define RLI_HAVE_TSC 1
#else
#define RLI_HAVE_TSC 0
#endif

#define RLI_BATCH_WAITS 32
#define RLI_FLUSH_INTERVAL_MS 100

struct rli_batch {
    // Record i, as runloop_events.def's wait_batch lays out its arrays (one array per field: sent as they are).
    uint8_t call[RLI_BATCH_WAITS];
    int32_t target[RLI_BATCH_WAITS];
    uint32_t set_size[RLI_BATCH_WAITS];
    int64_t timeout_ns[RLI_BATCH_WAITS];
    uint64_t begin_ns[RLI_BATCH_WAITS];
    uint64_t end_ns[RLI_BATCH_WAITS];
    int32_t ready[RLI_BATCH_WAITS];
    int32_t error[RLI_BATCH_WAITS];
    /// Records [0, committed) have ended (stored by the owner with release).
    _Atomic uint32_t committed;
    /// 1 while record `committed` has begun and not ended: its begin fields are written.
    _Atomic int open;
    /// Waits begun while `open` (a signal handler's, inside the wait it interrupted): left out, counted.
    uint32_t nested;
    /// Records [0, sent) were sent (under `lock`).
    uint32_t sent;
    _Atomic int lock;
    int32_t tid;
    /// The (TSC, ns) pair taken when record 0 began (TSC timing).
    uint64_t start_tsc, start_ns;
    /// The last time sent for this thread: the next are not below it.
    uint64_t last_ns;
    /// The recording (g_rli.session) this batch was registered in.
    uint32_t session;
    int linked;
    struct rli_batch *next, *previous;
};

static __thread struct rli_batch t_batch __attribute__((tls_model("initial-exec")));

// Every thread's batch that may hold waits, for the flusher and the finisher.
static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rli_batch *g_registry;
static pthread_key_t g_exit_key;
static int g_have_exit_key;
static const rl_provider *g_provider;

static struct {
    pthread_t thread;
    int running;
    // The flusher sleeps on `wake` (CLOCK_MONOTONIC), so that ending a recording does not wait out its interval.
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop;
} g_flusher = { .lock = PTHREAD_MUTEX_INITIALIZER };

/// The recording whose final pass ran (rli_batches_finish): a thread exiting after it has nobody to send for.
static uint32_t g_finished_session;
/// Waits left out: a signal handler's wait nested in the one it interrupted, or a batch the final pass could not
/// take (its thread holds it, in a signal handler that ends the process). Reported with the recording's drops.
static _Atomic uint64_t g_left_out;

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// ===== the waits' clock =====

// 1: waits hold TSC ticks, turned into ns when sent; 0: clock_gettime's ns. Set before the recording starts.
static int g_tsc;

static inline __attribute__((always_inline)) uint64_t wait_time(void) {
#if RLI_HAVE_TSC
    if (__builtin_expect(g_tsc, 1)) return __rdtsc();
#endif
    return now_ns();
}

/// `clock`'s time `ms` milliseconds from now, for the timed waits of pthreads.
static struct timespec deadline_after(clockid_t clock, long ms) {
    struct timespec deadline;
    clock_gettime(clock, &deadline);
    deadline.tv_nsec += ms * 1000000L;
    deadline.tv_sec += deadline.tv_nsec / 1000000000L;
    deadline.tv_nsec %= 1000000000L;
    return deadline;
}

#if defined(__x86_64__) || defined(__i386__)
#define SPIN_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define SPIN_PAUSE() __asm__ __volatile__("yield")
#else
#define SPIN_PAUSE() ((void)0)
#endif

/// Takes the batch's lock, spinning: it is held for one event at most. After `attempts` tries (0: no limit) it
/// gives up and returns 0; between tries it yields the CPU, in case the holder was preempted.
static int lock_batch_within(struct rli_batch *b, unsigned attempts) {
    for (unsigned tries = 1;; tries++) {
        if (!atomic_exchange_explicit(&b->lock, 1, memory_order_acquire)) return 1;
        if (attempts && tries >= attempts) return 0;
        for (int spin = 0; spin < 64 && atomic_load_explicit(&b->lock, memory_order_relaxed); spin++) SPIN_PAUSE();
        if (atomic_load_explicit(&b->lock, memory_order_relaxed)) sched_yield();
    }
}

static void lock_batch(struct rli_batch *b) {
    lock_batch_within(b, 0);
}

static void unlock_batch(struct rli_batch *b) {
    atomic_store_explicit(&b->lock, 0, memory_order_release);
}

/// A thread's time as sent: never below the last one (pairs taken at different moments differ by their noise).
static inline uint64_t monotonic(struct rli_batch *b, uint64_t ns) {
    if (ns < b->last_ns) ns = b->last_ns;
    b->last_ns = ns;
    return ns;
}

/// ns per tick over the batch so far (32.32 fixed point): from its start pair to a pair taken now, which it
/// leaves in `end_tsc` and `end_ns`.
static uint64_t batch_rate(const struct rli_batch *b, uint64_t *end_tsc, uint64_t *end_ns) {
    rlrec_clock_pair(8, end_tsc, end_ns);
    if (*end_tsc <= b->start_tsc || *end_ns <= b->start_ns) return 0;
    return (uint64_t)(((unsigned __int128)(*end_ns - b->start_ns) << 32) / (*end_tsc - b->start_tsc));
}

/// A wait time as sent (the lock held): TSC ticks become CLOCK_MONOTONIC ns at `rate` (batch_rate), never below the
/// thread's last one.
static uint64_t sent_time(struct rli_batch *b, uint64_t time, uint64_t rate) {
    if (!g_tsc) return time;
    uint64_t ticks = time > b->start_tsc ? time - b->start_tsc : 0;
    return monotonic(b, b->start_ns + (uint64_t)(((unsigned __int128)ticks * rate) >> 32));
}

/// One runloop:wait_batch of `count` waits, from arrays laid out as the batch's, if a session enables it.
static void emit(int32_t tid, uint32_t count, const uint8_t *call, const int32_t *target, const uint32_t *set_size,
                 const int64_t *timeout_ns, const uint64_t *begin_ns, const uint64_t *end_ns, const int32_t *ready,
                 const int32_t *error) {
    if (__atomic_load_n(g_provider->state[RL_EVENT_wait_batch], __ATOMIC_RELAXED))
        g_provider->wait_batch(tid, count, call, target, set_size, timeout_ns, begin_ns, end_ns, ready, error);
}

/// Sends records [sent, upto), their times turned into ns in place (the batch's lock held). Returns 1 when it
/// took a clock pair, left in `end_tsc` and `end_ns` (TSC times, something to send).
static int send_locked(struct rli_batch *b, uint32_t upto, uint64_t *end_tsc, uint64_t *end_ns) {
    uint32_t from = b->sent;
    if (upto <= from) return 0;
    uint64_t rate = g_tsc ? batch_rate(b, end_tsc, end_ns) : 0;
    for (uint32_t i = from; i < upto; i++) {
        b->begin_ns[i] = sent_time(b, b->begin_ns[i], rate);
        b->end_ns[i] = sent_time(b, b->end_ns[i], rate);
    }
    emit(b->tid, upto - from, &b->call[from], &b->target[from], &b->set_size[from], &b->timeout_ns[from],
         &b->begin_ns[from], &b->end_ns[from], &b->ready[from], &b->error[from]);
    b->sent = upto;
    return g_tsc;
}

/// The thread's exit: its finished waits are sent, and its batch (in its TLS, about to be freed) leaves the
/// registry.
static void thread_exiting(void *value) {
    struct rli_batch *b = value;
    // A signal handler that waits would find the registry locked by its own thread.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pthread_mutex_lock(&g_registry_lock);
    if (b->linked) {
        lock_batch(b);
        // Also while the recording is ending (role busy): until its final pass has run, that pass would miss it.
        uint32_t session = atomic_load_explicit(&g_rli.session, memory_order_relaxed);
        uint64_t end_tsc, end_ns;
        if (b->session == session && g_finished_session != session)
            send_locked(b, atomic_load_explicit(&b->committed, memory_order_acquire), &end_tsc, &end_ns);
        unlock_batch(b);
        if (b->previous) b->previous->next = b->next; else g_registry = b->next;
        if (b->next) b->next->previous = b->previous;
        b->linked = 0;
    }
    pthread_mutex_unlock(&g_registry_lock);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}

/// A thread's first wait of a recording: an empty batch, in the registry.
static __attribute__((noinline, cold)) void join_recording(struct rli_batch *b, uint32_t session) {
    pthread_mutex_lock(&g_registry_lock);
    lock_batch(b);
    b->tid = (int32_t)syscall(SYS_gettid);
    b->sent = 0;
    b->last_ns = 0;
    atomic_store_explicit(&b->committed, 0, memory_order_relaxed);
    atomic_store_explicit(&b->open, 0, memory_order_relaxed);
    b->nested = 0;
    b->session = session;
    unlock_batch(b);
    // In the registry only with the destructor that takes it out again (the batch is in the thread's TLS, freed
    // when it exits); without, its thread sends it when full and what is left at the end is lost. The destructor
    // runs only for a non-NULL value; a program with more keys than glibc keeps inline may make this allocate,
    // once per thread.
    if (!b->linked && g_have_exit_key && pthread_setspecific(g_exit_key, b) == 0) {
        b->previous = NULL;
        b->next = g_registry;
        if (g_registry) g_registry->previous = b;
        g_registry = b;
        b->linked = 1;
    }
    pthread_mutex_unlock(&g_registry_lock);
}

/// A full batch: sent by its thread, then emptied. The next batch starts at the clock pair the send ended with
/// (a fresh one if the flusher had sent it all).
static __attribute__((noinline)) void send_full(struct rli_batch *b) {
    lock_batch(b);
    uint64_t end_tsc, end_ns;
    if (send_locked(b, atomic_load_explicit(&b->committed, memory_order_relaxed), &end_tsc, &end_ns)) {
        b->start_tsc = end_tsc;
        b->start_ns = end_ns;
    } else if (g_tsc) {
        rlrec_clock_pair(2, &b->start_tsc, &b->start_ns);
    }
    b->sent = 0;
    atomic_store_explicit(&b->committed, 0, memory_order_relaxed);
    unlock_batch(b);
}

/// A wait begun while this thread's last one is still open: a signal handler's, inside the wait it interrupted
/// (its record must not be overwritten), or, after a few, one whose wrapper was left by a longjmp and never
/// ended (it is dropped, and recording goes on). Either way one wait is left out and counted. Returns 1 when
/// the new wait is to be recorded.
static __attribute__((noinline, cold)) int begin_while_open(struct rli_batch *b) {
    atomic_fetch_add_explicit(&g_left_out, 1, memory_order_relaxed);
    if (++b->nested < 4) return 0;
    b->nested = 0;
    atomic_store_explicit(&b->open, 0, memory_order_relaxed);
    return 1;
}

int rli_batch_begin(uint8_t call, int32_t target, uint32_t set_size, int64_t timeout_ns, uint32_t session) {
    struct rli_batch *b = &t_batch;
    if (__builtin_expect(b->session != session, 0)) join_recording(b, session);
    if (__builtin_expect(atomic_load_explicit(&b->open, memory_order_relaxed), 0) && !begin_while_open(b)) return 0;
    uint32_t i = atomic_load_explicit(&b->committed, memory_order_relaxed);
    if (__builtin_expect(i == RLI_BATCH_WAITS, 0)) {
        send_full(b);
        i = 0;
    } else if (i == 0 && g_tsc) {
        rlrec_clock_pair(2, &b->start_tsc, &b->start_ns);
    }
    b->call[i] = call;
    b->target[i] = target;
    b->set_size[i] = set_size;
    b->timeout_ns[i] = timeout_ns;
    b->begin_ns[i] = wait_time();
    atomic_store_explicit(&b->open, 1, memory_order_release);
    return 1;
}

void rli_batch_end(int32_t ready, int32_t error) {
    struct rli_batch *b = &t_batch;
    uint32_t i = atomic_load_explicit(&b->committed, memory_order_relaxed);
    // Only the wait that is open ends (one that begin_while_open dropped does not).
    if (__builtin_expect(!atomic_load_explicit(&b->open, memory_order_relaxed) || i >= RLI_BATCH_WAITS, 0)) return;
    b->nested = 0;
    b->end_ns[i] = wait_time();
    b->ready[i] = ready;
    b->error[i] = error;
    atomic_store_explicit(&b->open, 0, memory_order_relaxed);
    atomic_store_explicit(&b->committed, i + 1, memory_order_release);
}

/// Sends every batch's finished waits; with `final`, also each wait still in progress (end 0), which the
/// recording ends before.
/// The final pass does not wait for ever: the process may be ending from a signal handler that interrupted its
/// own thread while that thread held the registry or its batch (a thread's first wait, or a full batch).
static void send_all(int final) {
    if (!final) {
        pthread_mutex_lock(&g_registry_lock);
    } else {
        struct timespec deadline = deadline_after(CLOCK_REALTIME, 200);   // pthread mutexes time out on CLOCK_REALTIME
        if (pthread_mutex_timedlock(&g_registry_lock, &deadline) != 0) return;
    }
    uint32_t session = atomic_load_explicit(&g_rli.session, memory_order_relaxed);
    for (struct rli_batch *b = g_registry; b; b = b->next) {
        if (!final) {
            lock_batch(b);
        } else if (!lock_batch_within(b, 1000)) {
            uint32_t committed = atomic_load_explicit(&b->committed, memory_order_acquire);
            if (committed > b->sent) atomic_fetch_add_explicit(&g_left_out, committed - b->sent, memory_order_relaxed);
            continue;
        }
        if (b->session == session) {
            // `open` read between two equal reads of `committed` is about record `committed`.
            uint32_t committed, again;
            int open;
            do {
                committed = atomic_load_explicit(&b->committed, memory_order_acquire);
                open = atomic_load_explicit(&b->open, memory_order_acquire);
                again = atomic_load_explicit(&b->committed, memory_order_acquire);
            } while (committed != again);
            uint64_t end_tsc, end_ns;
            send_locked(b, committed, &end_tsc, &end_ns);
            if (final && open && committed < RLI_BATCH_WAITS) {
                // Its begin fields were published by `open`; its end fields are the owner's to write: send a copy.
                int32_t ready = 0, error = 0;
                uint64_t begin = sent_time(b, b->begin_ns[committed], g_tsc ? batch_rate(b, &end_tsc, &end_ns) : 0);
                uint64_t end = 0;
                emit(b->tid, 1, &b->call[committed], &b->target[committed], &b->set_size[committed],
                     &b->timeout_ns[committed], &begin, &end, &ready, &error);
            }
        }
        unlock_batch(b);
    }
    if (final) g_finished_session = session;
    pthread_mutex_unlock(&g_registry_lock);
}

static void *flusher_main(void *name) {
    rli_name_own_thread(name);
    long ms = RLI_FLUSH_INTERVAL_MS;
    const char *asked = getenv("RLCTL_ANY_FLUSH_INTERVAL_MS");
    if (asked && atol(asked) > 0 && atol(asked) < 1000) ms = atol(asked);
    pthread_mutex_lock(&g_flusher.lock);
    while (!g_flusher.stop) {
        struct timespec deadline = deadline_after(CLOCK_MONOTONIC, ms);
        while (!g_flusher.stop && pthread_cond_timedwait(&g_flusher.wake, &g_flusher.lock, &deadline) == 0) {}
        if (g_flusher.stop) break;
        pthread_mutex_unlock(&g_flusher.lock);
        if (atomic_load_explicit(&g_rli.role, memory_order_acquire) == RLI_RECORDING) send_all(0);
        pthread_mutex_lock(&g_flusher.lock);
    }
    pthread_mutex_unlock(&g_flusher.lock);
    return NULL;
}

static void flusher_init(void) {
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&g_flusher.wake, &attributes);
    pthread_condattr_destroy(&attributes);
    pthread_mutex_init(&g_flusher.lock, NULL);
    g_flusher.stop = 0;
}

int rli_batches_start(const rl_provider *provider) {
    g_provider = provider;
    g_tsc = RLI_HAVE_TSC && rlrec_tsc_clock_eligible();
    if (!g_have_exit_key) g_have_exit_key = pthread_key_create(&g_exit_key, thread_exiting) == 0;
    flusher_init();
    g_flusher.running = rli_start_thread(&g_flusher.thread, flusher_main, "rlctl-flusher") == 0;
    return g_flusher.running ? 0 : -1;
}

uint64_t rli_batches_finish(void) {
    if (g_flusher.running) {
        pthread_mutex_lock(&g_flusher.lock);
        g_flusher.stop = 1;
        pthread_cond_signal(&g_flusher.wake);
        pthread_mutex_unlock(&g_flusher.lock);
        pthread_join(g_flusher.thread, NULL);
        g_flusher.running = 0;
    }
    if (g_provider) send_all(1);
    return atomic_exchange(&g_left_out, 0);
}

void rli_batches_forget_after_fork(void) {
    // The copies are the parent's threads' (and this thread's parent's waits): the parent sends them. A lock
    // held by a parent thread at the fork would never be released here.
    pthread_mutex_init(&g_registry_lock, NULL);
    g_registry = NULL;
    g_flusher.running = 0;
    flusher_init();
    atomic_store(&g_left_out, 0);
    struct rli_batch *b = &t_batch;
    atomic_store(&b->lock, 0);
    b->linked = 0;
    b->session = 0;
    b->sent = 0;
    atomic_store(&b->committed, 0);
    atomic_store(&b->open, 0);
    b->nested = 0;
}

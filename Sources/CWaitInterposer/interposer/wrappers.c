// The wrapped libc wait calls: each records wait_begin, makes the real call, and records wait_end, leaving the
// result and errno exactly as the real call left them. The path takes no lock and allocates nothing (a thread's
// first event maps its buffer); a process that does not record only pays a load and a branch.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>

#include "CRecorder.h"
#include "interposer.h"

#define RLI_EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

// The values of runloop_events.def's wait_call enumeration.
enum {
    CALL_EPOLL_WAIT = 0, CALL_EPOLL_PWAIT = 1, CALL_EPOLL_PWAIT2 = 2, CALL_POLL = 3, CALL_PPOLL = 4,
    CALL_SELECT = 5, CALL_PSELECT = 6,
};

// ===== the real functions =====
//
// Resolved by the constructor (session.c calls rli_resolve first thing); a wait made before it ran (another
// library's constructor) resolves its own. A NULL from dlsym (a libc without epoll_pwait2) makes that call
// fail with ENOSYS, as the missing function would.

typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
typedef int (*poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int (*poll_chk_fn)(struct pollfd *, nfds_t, int, size_t);
typedef int (*ppoll_chk_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t);
typedef int (*select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);

static struct {
    epoll_wait_fn epoll_wait;
    epoll_pwait_fn epoll_pwait;
    epoll_pwait2_fn epoll_pwait2;
    poll_fn poll;
    ppoll_fn ppoll;
    poll_chk_fn poll_chk;
    ppoll_chk_fn ppoll_chk;
    select_fn select;
    pselect_fn pselect;
} real;

static void *next_symbol(const char *name) {
    return dlsym(RTLD_NEXT, name);
}

void rli_resolve_waits(void) {
    real.epoll_wait = (epoll_wait_fn)next_symbol("epoll_wait");
    real.epoll_pwait = (epoll_pwait_fn)next_symbol("epoll_pwait");
    real.epoll_pwait2 = (epoll_pwait2_fn)next_symbol("epoll_pwait2");
    real.poll = (poll_fn)next_symbol("poll");
    real.ppoll = (ppoll_fn)next_symbol("ppoll");
    real.poll_chk = (poll_chk_fn)next_symbol("__poll_chk");
    real.ppoll_chk = (ppoll_chk_fn)next_symbol("__ppoll_chk");
    real.select = (select_fn)next_symbol("select");
    real.pselect = (pselect_fn)next_symbol("pselect");
}

#define REAL(name) (LIKELY(real.name != NULL) ? real.name : (real.name = (__typeof__(real.name))next_symbol(#name)))
#define REAL_CHK(field, symbol) \
    (LIKELY(real.field != NULL) ? real.field : (real.field = (__typeof__(real.field))next_symbol(symbol)))
#define MISSING() (errno = ENOSYS, -1)

// ===== recording one wait =====

// 1 while this thread is inside the recorder: a wait made by a signal handler that interrupted it is skipped
// (the recorder's per-thread buffer is not re-entrant). initial-exec: a preloaded library has static TLS.
static __thread int t_inside __attribute__((tls_model("initial-exec")));
// The recording session this thread last announced itself in (wait_thread).
static __thread uint32_t t_session __attribute__((tls_model("initial-exec")));
// The renames (g_rli.names) this thread's last announcement came after.
static __thread uint32_t t_names __attribute__((tls_model("initial-exec")));

static inline int64_t from_ms(int timeout) {
    return timeout < 0 ? -1 : (int64_t)timeout * 1000000;
}

static inline int64_t from_timespec(const struct timespec *timeout) {
    return timeout ? (int64_t)timeout->tv_sec * 1000000000 + timeout->tv_nsec : -1;
}

static inline int64_t from_timeval(const struct timeval *timeout) {
    return timeout ? (int64_t)timeout->tv_sec * 1000000000 + (int64_t)timeout->tv_usec * 1000 : -1;
}

static __attribute__((noinline, cold)) int begin_slow(int role) {
    if (role == RLI_PENDING) return rli_start_pending();
    return 0;
}

/// Records wait_begin; returns 1 when the wait's end is to be recorded too.
static inline __attribute__((always_inline)) int wait_begin(uint8_t call, int target, uint32_t set_size, int64_t timeout_ns) {
    int role = atomic_load_explicit(&g_rli.role, memory_order_acquire);
    if (UNLIKELY(role != RLI_RECORDING) && !begin_slow(role)) return 0;
    if (UNLIKELY(t_inside)) {
        atomic_fetch_add_explicit(&g_rli.reentered, 1, memory_order_relaxed);
        return 0;
    }
    int saved = errno;
    t_inside = 1;
    atomic_signal_fence(memory_order_seq_cst);
    uint32_t session = atomic_load_explicit(&g_rli.session, memory_order_relaxed);
    uint32_t names = atomic_load_explicit(&g_rli.names, memory_order_relaxed);
    if (UNLIKELY(t_session != session || t_names != names)) {
        t_session = session;
        t_names = names;
        rli_announce_thread();
    }
    int recorded = 1;
    if (LIKELY(!g_rli.lttng)) rlrec_wait_begin(call, target, set_size, timeout_ns);
    else recorded = rli_batch_begin(call, target, set_size, timeout_ns, t_session);
    atomic_signal_fence(memory_order_seq_cst);
    t_inside = 0;
    errno = saved;
    return recorded;
}

/// Records wait_end for a wait whose begin was recorded; errno is left as the real call set it.
static inline __attribute__((always_inline)) void wait_end(int recorded, int result) {
    if (!recorded) return;
    int saved = errno;
    if (UNLIKELY(t_inside)) {
        atomic_fetch_add_explicit(&g_rli.reentered, 1, memory_order_relaxed);
        return;
    }
    t_inside = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (LIKELY(!g_rli.lttng)) rlrec_wait_end(result, result < 0 ? saved : 0);
    else rli_batch_end(result, result < 0 ? saved : 0);
    atomic_signal_fence(memory_order_seq_cst);
    t_inside = 0;
    errno = saved;
}

// 1 while this thread is in a real wait call whose begin was recorded: rlctl's kernel view reads it (its address
// was given with the thread's claim, rli_announce_thread) to leave that call to us, and to record any other wait
// of the thread (a raw system call, syscall(2)) itself.
__thread int rli_t_waiting __attribute__((tls_model("initial-exec")));

static inline __attribute__((always_inline)) int enter_real(int recorded) {
    int outer = rli_t_waiting;   // (a signal handler's wait inside another: the outer one's value comes back after)
    rli_t_waiting = recorded;
    atomic_signal_fence(memory_order_seq_cst);
    return outer;
}

static inline __attribute__((always_inline)) void leave_real(int outer) {
    atomic_signal_fence(memory_order_seq_cst);
    rli_t_waiting = outer;
}

// ===== the wrappers =====

RLI_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    epoll_wait_fn call = REAL(epoll_wait);
    if (UNLIKELY(!call)) return MISSING();
    int recorded = wait_begin(CALL_EPOLL_WAIT, epfd, (uint32_t)maxevents, from_ms(timeout));
    int outer = enter_real(recorded);
    int result = call(epfd, events, maxevents, timeout);
    leave_real(outer);
    wait_end(recorded, result);
    return result;
}

RLI_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout, const sigset_t *mask) {
    epoll_pwait_fn call = REAL(epoll_pwait);
    if (UNLIKELY(!call)) return MISSING();
    int recorded = wait_begin(CALL_EPOLL_PWAIT, epfd, (uint32_t)maxevents, from_ms(timeout));
    int outer = enter_real(recorded);
    int result = call(epfd, events, maxevents, timeout, mask);
    leave_real(outer);
    wait_end(recorded, result);
    return result;
}

RLI_EXPORT int epoll_pwait2(int epfd, struct epoll_event *events, int maxevents, const struct timespec *timeout,
                            const sigset_t *mask) {
    epoll_pwait2_fn call = REAL(epoll_pwait2);
    if (UNLIKELY(!call)) return MISSING();
    int recorded = wait_begin(CALL_EPOLL_PWAIT2, epfd, (uint32_t)maxevents, from_timespec(timeout));
    int outer = enter_real(recorded);
    int result = call(epfd, events, maxevents, timeout, mask);
    leave_real(outer);
    wait_end(recorded, result);
    return result;
}

RLI_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
    poll_fn call = REAL(poll);
    if (UNLIKELY(!call)) return MISSING();
    int recorded = wait_begin(CALL_POLL, -1, (uint32_t)nfds, from_ms(timeout));
    int outer = enter_real(recorded);
    int result = call(fds, nfds, timeout);
    leave_real(outer);
    wait_end(recorded, result);
    return result;
}

RLI_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *mask) {
    ppoll_fn call = REAL(ppoll);
    if (UNLIKELY(!call)) return MISSING();
    int recorded = wait_begin(CALL_PPOLL, -1, (uint32_t)nfds, from_timespec(timeout));
    int outer = enter_real(recorded);
    int result = call(fds, nfds, timeout, mask);
    leave_real(outer);
    wait_end(recorded, result);
    return result;
}

// Programs built with _FORTIFY_SOURCE call these instead of poll and ppoll when the array's size is known.
RLI_EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen) {
    poll_chk_fn call = REAL_CHK(poll_chk, "__poll_chk");
    if (UNLIKELY(!call)) return MISSING();
    int recorded = wait_begin(CALL_POLL, -1, (uint32_t)nfds, from_ms(timeout));
    int outer = enter_real(recorded);
    int result = call(fds, nfds, timeout, fdslen);
    leave_real(outer);
    wait_end(recorded, result);
    return result;
}

RLI_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *mask,
                           size_t fdslen) {
    ppoll_chk_fn call = REAL_CHK(ppoll_chk, "__ppoll_chk");
    if (UNLIKELY(!call)) return MISSING();
    int recorded = wait_begin(CALL_PPOLL, -1, (uint32_t)nfds, from_timespec(timeout));
    int outer = enter_real(recorded);
    int result = call(fds, nfds, timeout, mask, fdslen);
    leave_real(outer);
    wait_end(recorded, result);
    return result;
}

RLI_EXPORT int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout) {
    select_fn call = REAL(select);
    if (UNLIKELY(!call)) return MISSING();
    // Read before the call: Linux's select writes the time left into *timeout.
    int recorded = wait_begin(CALL_SELECT, -1, (uint32_t)nfds, from_timeval(timeout));
    int outer = enter_real(recorded);
    int result = call(nfds, readfds, writefds, exceptfds, timeout);
    leave_real(outer);
    wait_end(recorded, result);
    return result;
}

RLI_EXPORT int pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                       const struct timespec *timeout, const sigset_t *mask) {
    pselect_fn call = REAL(pselect);
    if (UNLIKELY(!call)) return MISSING();
    int recorded = wait_begin(CALL_PSELECT, -1, (uint32_t)nfds, from_timespec(timeout));
    int outer = enter_real(recorded);
    int result = call(nfds, readfds, writefds, exceptfds, timeout, mask);
    leave_real(outer);
    wait_end(recorded, result);
    return result;
}

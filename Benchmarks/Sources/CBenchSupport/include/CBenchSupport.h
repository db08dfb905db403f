// The raw Linux primitives the benchmark's floors and its measurements need (the RunLoopCore shim module is
// internal to RunLoopCore, and Glibc does not export timerfd/eventfd/RUSAGE_THREAD cleanly to Swift).
#ifndef CBENCHSUPPORT_H
#define CBENCHSUPPORT_H

#include <stdint.h>
#include <time.h>

/// CLOCK_MONOTONIC in nanoseconds: the clock every peer's timestamps are taken on (RunLoopCore, NIO and
/// timerfd all schedule on it, so lateness compares directly).
static inline uint64_t cb_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/// Sleeps the calling thread for `ns` nanoseconds (restarting after signals).
void cb_sleep_ns(uint64_t ns);

/// A blocking CLOCK_MONOTONIC timerfd, armed on an absolute grid: first expiry at `first_ns`, then every
/// `interval_ns`. Returns the descriptor or -errno.
int cb_timerfd_periodic(uint64_t first_ns, uint64_t interval_ns);

/// Blocking read of an 8-byte counter (timerfd expirations, eventfd value). Returns the value, or 0 on error.
uint64_t cb_read_counter(int fd);

/// A blocking eventfd. Returns the descriptor or -errno.
int cb_eventfd(void);
/// Adds one to an eventfd's counter. Returns 0 or -errno.
int cb_eventfd_signal(int fd);

/// An epoll instance watching `fd` for readability. Returns the epoll descriptor or -errno.
int cb_epoll_watching(int fd);
/// Waits for one event; timeout_ms -1 blocks. Returns the number of events (0 or 1) or -errno.
int cb_epoll_wait_one(int epfd, int timeout_ms);

int cb_close(int fd);

/// The kernel thread id of the caller.
int32_t cb_gettid(void);
/// Names the calling thread (at most 15 characters are kept), for top/perf.
void cb_set_thread_name(const char *name);
/// Line-buffers stdout, so that tables appear as they are printed even through a pipe.
void cb_line_buffer_stdout(void);
/// The highest-numbered CPU the process's main thread may run on (its affinity mask), or -1 on failure.
int cb_last_allowed_cpu(void);
/// Restricts the calling thread to `cpu`, or with -1 gives it the main thread's CPUs back; 0 or -errno.
int cb_pin_to_cpu(int cpu);

/// The calling thread's resource usage (getrusage RUSAGE_THREAD).
typedef struct {
    uint64_t user_ns;
    uint64_t system_ns;
    uint64_t voluntary_switches;
    uint64_t involuntary_switches;
} cb_thread_usage;
int cb_thread_usage_now(cb_thread_usage *usage);

#endif

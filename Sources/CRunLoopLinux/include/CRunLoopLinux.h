// The Linux primitives RunLoopCore's platform layer needs, exposed with stable
// Swift-friendly signatures. Only RunLoopCore/Platform imports this module.
#ifndef CRUNLOOPLINUX_H
#define CRUNLOOPLINUX_H

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>

#include "crl_main_queue.h"

/// CLOCK_MONOTONIC in nanoseconds: the clock timers run on and LTTng stamps events with.
static inline uint64_t crl_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const uint32_t CRL_EPOLLIN = EPOLLIN;
static const uint32_t CRL_EPOLLOUT = EPOLLOUT;
static const uint32_t CRL_EPOLLERR = EPOLLERR;
static const uint32_t CRL_EPOLLHUP = EPOLLHUP;
static const uint32_t CRL_EPOLLRDHUP = EPOLLRDHUP;

int crl_epoll_create(void);
/// op is EPOLL_CTL_ADD/MOD/DEL; returns 0 or -errno.
int crl_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token);
/// One ready descriptor: a token and its events side by side, so that the first reports after a wait share one
/// cache line (the caller's buffer is 64-byte aligned). Not `struct epoll_event` itself: on x86_64 that is
/// packed, its token unaligned.
struct crl_ready_event {
    uint64_t token;
    uint32_t events;
};

/// Waits; timeout_ms -1 blocks, 0 polls. Returns the number of events or -errno.
int crl_epoll_wait(int epfd, struct crl_ready_event *ready, int capacity, int timeout_ms);

int crl_eventfd_create(void);
/// Adds one to the counter; returns 0 or -errno.
int crl_eventfd_signal(int fd);
/// Drains the counter; returns 0, or -EAGAIN when it was already zero.
int crl_eventfd_drain(int fd);

int crl_timerfd_create(void);
/// Arms at an absolute CLOCK_MONOTONIC deadline in ns; 0 disarms. Returns 0 or -errno.
int crl_timerfd_arm(int fd, uint64_t deadline_ns);
/// Consumes expirations; returns 0 or -EAGAIN when none were pending.
int crl_timerfd_drain(int fd);

/// 1 when fd is an open descriptor of this process, 0 otherwise.
int crl_fd_is_open(int fd);
int crl_close(int fd);
/// The kernel thread id of the caller.
int32_t crl_gettid(void);
/// Copies the calling thread's name (NUL-terminated) into buffer; returns 0 or -errno.
int crl_thread_name(char *buffer, int length);
/// Names the calling thread (at most 15 bytes); returns 0 or -errno (-ERANGE when too long).
int crl_set_thread_name(const char *name);
/// 1 when called on the process's main thread.
int crl_is_main_thread(void);

#endif

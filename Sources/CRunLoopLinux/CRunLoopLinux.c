#define _GNU_SOURCE
#include "CRunLoopLinux.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int crl_epoll_create(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int crl_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &ev) < 0 ? -errno : 0;
}

int crl_epoll_wait(int epfd, struct crl_ready_event *ready, int capacity, int timeout_ms) {
    struct epoll_event buffer[64];
    if (capacity > 64) capacity = 64;
    int n;
    // Deadlines live in a timerfd (absolute time), so restarting after a signal loses nothing.
    do {
        n = epoll_wait(epfd, buffer, capacity, timeout_ms);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return -errno;
    for (int i = 0; i < n; i++) {
        ready[i].token = buffer[i].data.u64;
        ready[i].events = buffer[i].events;
    }
    return n;
}

int crl_eventfd_create(void) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return fd < 0 ? -errno : fd;
}

int crl_eventfd_signal(int fd) {
    for (;;) {
        if (eventfd_write(fd, 1) == 0) return 0;
        if (errno == EINTR) continue;
        // EAGAIN means the counter is saturated: the loop is certainly going to wake.
        return errno == EAGAIN ? 0 : -errno;
    }
}

int crl_eventfd_drain(int fd) {
    eventfd_t value;
    for (;;) {
        if (eventfd_read(fd, &value) == 0) return 0;
        if (errno == EINTR) continue;
        return -errno;
    }
}

int crl_timerfd_create(void) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    return fd < 0 ? -errno : fd;
}

int crl_timerfd_arm(int fd, uint64_t deadline_ns) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (deadline_ns != 0) {
        spec.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
        spec.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
    }
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL) < 0 ? -errno : 0;
}

int crl_timerfd_drain(int fd) {
    uint64_t expirations;
    for (;;) {
        ssize_t n = read(fd, &expirations, sizeof expirations);
        if (n == (ssize_t)sizeof expirations) return 0;
        if (n < 0 && errno == EINTR) continue;
        return n < 0 ? -errno : -EIO;
    }
}

int crl_fd_is_open(int fd) {
    return fd >= 0 && fcntl(fd, F_GETFD) != -1;
}

int crl_close(int fd) {
    return close(fd) < 0 ? -errno : 0;
}

int32_t crl_gettid(void) {
    return (int32_t)syscall(SYS_gettid);
}

int crl_is_main_thread(void) {
    // Cached per thread: asked on every cross-thread check of the main loop, and a thread never changes.
    static __thread int cached = -1;
    if (cached < 0) cached = syscall(SYS_gettid) == getpid();
    return cached;
}

int crl_thread_name(char *buffer, int length) {
    int rc = pthread_getname_np(pthread_self(), buffer, (size_t)length);
    return rc == 0 ? 0 : -rc;
}

int crl_set_thread_name(const char *name) {
    int rc = pthread_setname_np(pthread_self(), name);
    return rc == 0 ? 0 : -rc;
}

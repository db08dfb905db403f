#define _GNU_SOURCE
#include "CBenchSupport.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

void cb_sleep_ns(uint64_t ns) {
    struct timespec request = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    struct timespec remaining;
    while (nanosleep(&request, &remaining) < 0 && errno == EINTR) request = remaining;
}

int cb_timerfd_periodic(uint64_t first_ns, uint64_t interval_ns) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (fd < 0) return -errno;
    struct itimerspec spec;
    spec.it_value.tv_sec = (time_t)(first_ns / 1000000000ull);
    spec.it_value.tv_nsec = (long)(first_ns % 1000000000ull);
    spec.it_interval.tv_sec = (time_t)(interval_ns / 1000000000ull);
    spec.it_interval.tv_nsec = (long)(interval_ns % 1000000000ull);
    if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL) < 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    return fd;
}

uint64_t cb_read_counter(int fd) {
    uint64_t value;
    for (;;) {
        ssize_t n = read(fd, &value, sizeof value);
        if (n == (ssize_t)sizeof value) return value;
        if (n < 0 && errno == EINTR) continue;
        return 0;
    }
}

int cb_eventfd(void) {
    int fd = eventfd(0, EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int cb_eventfd_signal(int fd) {
    uint64_t one = 1;
    for (;;) {
        if (write(fd, &one, sizeof one) == (ssize_t)sizeof one) return 0;
        if (errno != EINTR) return -errno;
    }
}

int cb_epoll_watching(int fd) {
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) return -errno;
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) < 0) {
        int err = errno;
        close(epfd);
        return -err;
    }
    return epfd;
}

int cb_epoll_wait_one(int epfd, int timeout_ms) {
    struct epoll_event event;
    for (;;) {
        int n = epoll_wait(epfd, &event, 1, timeout_ms);
        if (n >= 0) return n;
        if (errno != EINTR) return -errno;
    }
}

int cb_close(int fd) { return close(fd); }

int32_t cb_gettid(void) { return (int32_t)syscall(SYS_gettid); }

void cb_set_thread_name(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = 0;
    pthread_setname_np(pthread_self(), truncated);
}

void cb_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

int cb_thread_usage_now(cb_thread_usage *usage) {
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) < 0) return -errno;
    usage->user_ns = (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000ull;
    usage->system_ns = (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
    usage->voluntary_switches = (uint64_t)ru.ru_nvcsw;
    usage->involuntary_switches = (uint64_t)ru.ru_nivcsw;
    return 0;
}

int cb_last_allowed_cpu(void) {
    cpu_set_t set;
    if (sched_getaffinity(getpid(), sizeof set, &set) != 0) return -1;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--) {
        if (CPU_ISSET(cpu, &set)) return cpu;
    }
    return -1;
}

int cb_pin_to_cpu(int cpu) {
    cpu_set_t set;
    if (cpu < 0) {
        if (sched_getaffinity(getpid(), sizeof set, &set) != 0) return -errno;
    } else {
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
    }
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -errno;
}

// The programs Benchmarks/attach-bench.sh attaches `rlctl record --pid` to, each timing itself from inside:
//   waits N DELAY_MS    N non-blocking epoll_wait calls after DELAY_MS (time for rlctl to attach): ns per call
//   getpid N DELAY_MS   N getpid system calls, the same way: what every process pays while the syscall
//                       tracepoints are enabled, whoever is followed
//   tick SECONDS        a loop of 1 ms epoll_wait timeouts: its longest iteration (wait return to wait return) in
//                       each 100 ms window, one line per window, so the windows around an attach and a detach
//                       can be compared with the others
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000000000LL + now.tv_nsec;
}

static int epoll_with_one_descriptor(void) {
    int epoll = epoll_create1(EPOLL_CLOEXEC), event = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event interest = { .events = EPOLLIN };
    epoll_ctl(epoll, EPOLL_CTL_ADD, event, &interest);
    return epoll;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s waits|getpid N DELAY_MS | tick SECONDS\n", argv[0]);
        return 2;
    }
    int epoll = epoll_with_one_descriptor();
    struct epoll_event ready[8];
    if (!strcmp(argv[1], "tick")) {
        long long end = monotonic_ns() + atoll(argv[2]) * 1000000000LL, window = 100000000LL;
        long long last = monotonic_ns(), window_end = last + window, longest = 0;
        while (last < end) {
            epoll_wait(epoll, ready, 8, 1);
            long long now = monotonic_ns();
            if (now - last > longest) longest = now - last;
            last = now;
            if (now >= window_end) {
                printf("%lld %lld\n", window_end / 1000000, longest);
                longest = 0;
                window_end += window;
            }
        }
        return 0;
    }
    long n = atol(argv[2]);
    int waits = !strcmp(argv[1], "waits");
    usleep(argc > 3 ? atoi(argv[3]) * 1000 : 0);
    long long begin = monotonic_ns();
    for (long i = 0; i < n; i++) {
        if (waits) epoll_wait(epoll, ready, 8, 0);
        else syscall(SYS_getpid);
    }
    printf("%.1f\n", (double)(monotonic_ns() - begin) / n);
    return 0;
}

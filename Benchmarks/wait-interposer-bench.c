// ns per epoll_wait(ep, ev, 1, 0) on an idle epoll descriptor: the cost the wait interposer adds to each wait
// (run by wait-interposer-bench.sh plain, preloaded without recording, and recording).
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
    long calls = argc > 1 ? atol(argv[1]) : 200000;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event events[1];
    for (long i = 0; i < 1000; i++) epoll_wait(ep, events, 1, 0);   // first-event costs (buffer mapping) out
    double start = now_ns();
    for (long i = 0; i < calls; i++) {
        if (epoll_wait(ep, events, 1, 0) != 0) return 1;
    }
    printf("%.1f\n", (now_ns() - start) / (double)calls);
    return 0;
}

// An idle loop: epoll_wait of 10 ms until argv[1] milliseconds have passed, then exit 0.
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>

int main(int argc, char **argv) {
    long total = argc > 1 ? atol(argv[1]) : 1000;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int ep = epoll_create1(0);
    struct epoll_event events[4];
    do {
        epoll_wait(ep, events, 4, 10);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < total);
    return 0;
}

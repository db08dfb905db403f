// Many threads that wait and exit while the wait interposer's flusher sends their batches (AnyProgramTests): waves
// of WAVES × THREADS threads, thread i of a wave making 37 + i immediate epoll_waits and exiting, while the main
// thread waits 1 ms at a time; then the main thread's own 100 immediate waits. Prints nothing; exits 0.
//   wait-storm WAVES THREADS
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

static void waits(int count, int timeout_ms) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event;
    for (int i = 0; i < count; i++) epoll_wait(ep, &event, 1, timeout_ms);
    close(ep);
}

static void *worker(void *argument) {
    waits(37 + (int)(long)argument, 0);
    return NULL;
}

int main(int argc, char **argv) {
    int waves = argc > 1 ? atoi(argv[1]) : 10, threads = argc > 2 ? atoi(argv[2]) : 8;
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    for (int wave = 0; wave < waves; wave++) {
        for (long i = 0; i < threads; i++) pthread_create(&ids[i], NULL, worker, (void *)i);
        waits(3, 1);
        for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    }
    waits(100, 0);
    free(ids);
    return 0;
}

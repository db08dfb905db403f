// Threads renamed after their first wait: the main thread renames itself (prctl) between its waits, and names its
// worker (pthread_setname_np) once the worker has waited. The summary must carry the names they end with.
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

static int started[2], go[2];

static void *worker(void *unused) {
    (void)unused;
    int ep = epoll_create1(0);
    struct epoll_event events[4];
    epoll_wait(ep, events, 4, 1);   // its first wait, under the name it inherited
    char byte = 1;
    if (write(started[1], &byte, 1) != 1) return NULL;
    struct pollfd ready = { .fd = go[0], .events = POLLIN };
    poll(&ready, 1, -1);            // until it has been renamed
    for (int i = 0; i < 20; i++) epoll_wait(ep, events, 4, 2);
    return NULL;
}

int main(void) {
    if (pipe(started) != 0 || pipe(go) != 0) return 1;
    int ep = epoll_create1(0);
    struct epoll_event events[4];
    for (int i = 0; i < 5; i++) epoll_wait(ep, events, 4, 2);
    prctl(PR_SET_NAME, "main-renamed", 0, 0, 0);
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker, NULL) != 0) return 1;
    char byte;
    if (read(started[0], &byte, 1) != 1) return 1;
    pthread_setname_np(thread, "named-later");
    if (write(go[1], &byte, 1) != 1) return 1;
    for (int i = 0; i < 20; i++) epoll_wait(ep, events, 4, 2);
    pthread_join(thread, NULL);
    return 0;
}

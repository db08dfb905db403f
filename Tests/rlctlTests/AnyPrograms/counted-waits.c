// An epoll loop of exactly N waits of 2 ms through libc's epoll_wait, the same whether built static or not: a
// recording must hold N waits, each once, whichever mechanism recorded them.
#include <stdlib.h>
#include <sys/epoll.h>

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 50;
    int ep = epoll_create1(0);
    struct epoll_event event;
    for (int i = 0; i < count; i++) epoll_wait(ep, &event, 1, 2);
    return 0;
}

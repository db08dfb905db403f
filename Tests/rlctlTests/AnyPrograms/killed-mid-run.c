// A loop killed by SIGKILL mid-run: 30 idle waits of 10 ms, then it kills itself. What the recorder wrote before
// (a packet closes 100 ms after it began) must be readable, and the trace marked as cut off.
#include <signal.h>
#include <sys/epoll.h>
#include <unistd.h>

int main(void) {
    int ep = epoll_create1(0);
    struct epoll_event events[4];
    for (int i = 0; i < 30; i++) epoll_wait(ep, events, 4, 10);
    usleep(100000);
    epoll_wait(ep, events, 4, 1);   // the packet switch happens at an event
    kill(getpid(), SIGKILL);
    return 0;
}

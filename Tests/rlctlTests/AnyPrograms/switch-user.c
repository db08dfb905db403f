// A program that drops privileges in its own process, as servers started by root do: 20 waits of 5 ms as root,
// a pause that lets the recorder write them to its stream in the trace folder, then chdir("/"), setgid and setuid to the uid and gid
// in argv[1] and argv[2], and 20 more waits. All 41 are one loop's, recorded before and after the switch.
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    int ep = epoll_create1(0);
    struct epoll_event events[4];
    for (int i = 0; i < 20; i++) epoll_wait(ep, events, 4, 5);
    usleep(200000);
    epoll_wait(ep, events, 4, 1);   // the packet switch happens at an event
    usleep(50000);                  // the writer drains every 15 ms: the packet is in the trace folder
    if (chdir("/") != 0 || setgid((gid_t)atoi(argv[2])) != 0 || setuid((uid_t)atoi(argv[1])) != 0) return 3;
    for (int i = 0; i < 20; i++) epoll_wait(ep, events, 4, 5);
    return 0;
}

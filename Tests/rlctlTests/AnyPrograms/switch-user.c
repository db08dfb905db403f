// A program that drops privileges in its own process, as servers started by root do: 20 waits of 5 ms as root,
// a pause that lets the recorder write them to its stream in the trace folder, then chdir("/"), setgid and setuid
// to the uid and gid in argv[1] and argv[2], and 20 more waits: all 41 one loop's, recorded before and after the
// switch. With "exec" as argv[3] it then execs itself as "again", which waits 10 times more as that user.
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static void waits(int count, int ms) {
    int ep = epoll_create1(0);
    struct epoll_event events[4];
    for (int i = 0; i < count; i++) epoll_wait(ep, events, 4, ms);
    close(ep);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "again") == 0) {
        waits(10, 5);
        return 0;
    }
    if (argc < 3) return 2;
    int ep = epoll_create1(0);
    struct epoll_event events[4];
    for (int i = 0; i < 20; i++) epoll_wait(ep, events, 4, 5);
    usleep(200000);
    epoll_wait(ep, events, 4, 1);   // the packet switch happens at an event
    usleep(50000);                  // the writer drains every 15 ms: the packet is in the trace folder
    if (chdir("/") != 0 || setgid((gid_t)atoi(argv[2])) != 0 || setuid((uid_t)atoi(argv[1])) != 0) return 3;
    for (int i = 0; i < 20; i++) epoll_wait(ep, events, 4, 5);
    if (argc == 4 && strcmp(argv[3], "exec") == 0) {
        execl("/proc/self/exe", argv[0], "again", (char *)NULL);
        return 4;
    }
    return 0;
}

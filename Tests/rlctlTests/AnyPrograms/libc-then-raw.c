// One thread that waits through libc first (10 polls of 2 ms: the interposer records them and claims the thread),
// then with raw system calls (20 epoll_wait of 5 ms through syscall(2), as Go's runtime waits): those the kernel
// records, the thread's claim notwithstanding.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    for (int i = 0; i < 10; i++) poll(NULL, 0, 2);
    int ep = epoll_create1(0);
    struct epoll_event events[4];
    for (int i = 0; i < 20; i++) syscall(SYS_epoll_wait, ep, events, 4, 5);
    return 0;
}

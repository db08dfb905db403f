// A loop that waits the way Go's runtime does: epoll_wait through syscall(2), never through libc's wrapper, so
// the wait interposer sees nothing (`rlctl record --any` must say why instead of printing an empty report).
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    int ep = epoll_create1(0);
    struct epoll_event events[4];
    for (int i = 0; i < 20; i++) syscall(SYS_epoll_wait, ep, events, 4, 5);
    return 0;
}

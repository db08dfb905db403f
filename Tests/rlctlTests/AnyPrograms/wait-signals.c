// A signal handler that waits inside the wait it interrupted (AnyProgramTests): SIGALRM every millisecond, whose
// handler calls poll(NULL, 0, 0), while the main thread waits in epoll_pwait for 20 ms at a time, until the
// handler ran ROUNDS times. SIGALRM is blocked except inside the wait: a loaded machine could otherwise deliver
// it between two waits, and the handler's poll would then be a wait of its own, not one inside a wait. Prints "outer <waits of the main loop> handled <handler runs> ep <its epoll descriptor>".
//   wait-signals ROUNDS
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/time.h>

static volatile sig_atomic_t handled;

static void on_alarm(int signal) {
    (void)signal;
    poll(NULL, 0, 0);
    handled++;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_alarm;
    sigaction(SIGALRM, &action, NULL);
    sigset_t alarm_only, during_wait;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    sigprocmask(SIG_BLOCK, &alarm_only, &during_wait);
    sigdelset(&during_wait, SIGALRM);   // the mask before, SIGALRM open: the wait's own
    struct itimerval timer = { { 0, 1000 }, { 0, 1000 } };
    setitimer(ITIMER_REAL, &timer, NULL);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event;
    int outer = 0;
    while (handled < rounds) {
        epoll_pwait(ep, &event, 1, 20, &during_wait);
        outer++;
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    printf("outer %d handled %d ep %d\n", outer, (int)handled, ep);
    return 0;
}

#define _GNU_SOURCE
#include "CSignals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static int g_pipe[2] = {-1, -1};

static void on_signal(int signo) {
    int saved = errno;
    unsigned char byte = (unsigned char)signo;
    ssize_t ignored = write(g_pipe[1], &byte, 1);
    (void)ignored;
    errno = saved;
}

int rlsig_install(void) {
    if (g_pipe[0] >= 0) return g_pipe[0];
    if (pipe2(g_pipe, O_CLOEXEC) != 0) return -errno;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(SIGINT, &action, NULL) != 0 || sigaction(SIGTERM, &action, NULL) != 0) return -errno;
    return g_pipe[0];
}

void rlsig_reraise(int signo) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    // The calling thread may block the signal (threads inherit masks): unblock it here, and send it to the
    // whole process so any thread that accepts it delivers the default action.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    kill(getpid(), signo);
    struct timespec pause = {0, 100000000};
    nanosleep(&pause, NULL);
}

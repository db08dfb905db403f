#define _GNU_SOURCE
#include "CSignals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static int g_pipe[2] = {-1, -1};

static void on_signal(int signo) {
    int saved = errno;
    // Stamped here, not when the watcher thread gets to it: a busy watcher must not make two signals that came
    // a second apart look like one delivered twice. One write of a record under PIPE_BUF is atomic.
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    unsigned char record[RLSIG_RECORD_SIZE];
    uint64_t ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    record[0] = (unsigned char)signo;
    memcpy(record + 1, &ns, sizeof ns);
    ssize_t ignored = write(g_pipe[1], record, sizeof record);
    (void)ignored;
    errno = saved;
}

int rlsig_install(void) {
    if (g_pipe[0] >= 0) return g_pipe[0];
    // An ignored SIGCHLD, inherited from whoever started rlctl, would have the kernel reap rlctl's children
    // itself: how the recorded program ended could not be known.
    signal(SIGCHLD, SIG_DFL);
    if (pipe2(g_pipe, O_CLOEXEC) != 0) return -errno;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(SIGINT, &action, NULL) != 0 || sigaction(SIGTERM, &action, NULL) != 0) return -errno;
    // A hangup (the terminal closed, the ssh connection dropped) means the same as SIGTERM, except under nohup(1),
    // whose ignored SIGHUP asks rlctl to outlive the terminal.
    struct sigaction hangup;
    if (sigaction(SIGHUP, NULL, &hangup) != 0) return -errno;
    if (hangup.sa_handler != SIG_IGN && sigaction(SIGHUP, &action, NULL) != 0) return -errno;
    return g_pipe[0];
}

// rlctl's start-up: a Ctrl-C in the tens of milliseconds before Swift's main runs (libraries loading and
// initializing, liblttng-ust among them, on a loaded machine) would find the default action and end rlctl with
// status 130 and nothing said. Installed from the executable's preinit array, which runs before any library's
// initializer, the handler keeps such a signal in the pipe until rlctl's watcher reads it. Only in the rlctl
// executable (argv[0] names it: glibc passes argc/argv to preinit functions): a library must not take SIGINT
// away from the programs that link it.
static void rlsig_install_early_in_rlctl(int argc, char **argv, char **envp) {
    (void)envp;
    if (argc < 1 || argv == NULL || argv[0] == NULL) return;
    const char *slash = strrchr(argv[0], '/');
    if (strcmp(slash ? slash + 1 : argv[0], "rlctl") == 0) (void)rlsig_install();
}

__attribute__((section(".preinit_array"), used))
static void (*const rlsig_preinit)(int, char **, char **) = rlsig_install_early_in_rlctl;

void rlsig_reraise(int signo) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
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

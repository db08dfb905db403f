#define _GNU_SOURCE
#include "rl_child.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int rl_child_spawn_gated(const char *path, char *const argv[], char *const envp[], rl_gated_child *child) {
    int gate[2], error[2];
    if (pipe2(gate, O_CLOEXEC) != 0) return errno;
    if (pipe2(error, O_CLOEXEC) != 0) {
        int saved = errno;
        close(gate[0]);
        close(gate[1]);
        return saved;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(gate[0]); close(gate[1]); close(error[0]); close(error[1]);
        return saved;
    }
    if (pid == 0) {
        /* The parent may ignore SIGINT while it waits, and its threads may block signals: the program must
         * start as if from a shell. Ignored dispositions would survive execve, handlers would not. An ignored
         * SIGHUP is nohup(1)'s, which rlctl keeps (CSignals.c): the program is to outlive the terminal too. */
        struct sigaction hangup;
        int nohup = sigaction(SIGHUP, NULL, &hangup) == 0 && hangup.sa_handler == SIG_IGN;
        for (int signo = 1; signo < NSIG; signo++) {
            if (signo == SIGKILL || signo == SIGSTOP || (signo == SIGHUP && nohup)) continue;
            signal(signo, SIG_DFL);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* The program must not outlive rlctl: a rlctl killed by SIGKILL (or crashed) can neither pass a signal
         * on nor wait, and an orphaned program would go on running, untraced. The death signal is tied to the
         * forking thread, rlctl's main thread, which lives as long as rlctl. A parent that died before the prctl
         * took effect is seen in getppid(). Set-user-ID programs drop it at execve. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
        close(gate[1]);
        close(error[0]);
        char byte;
        ssize_t n;
        do { n = read(gate[0], &byte, 1); } while (n < 0 && errno == EINTR);
        if (n != 1) _exit(127);
        close(gate[0]);
        execve(path, argv, envp);
        int code = errno;
        ssize_t ignored = write(error[1], &code, sizeof code);
        (void)ignored;
        _exit(127);
    }
    close(gate[0]);
    close(error[1]);
    child->pid = pid;
    child->gate_fd = gate[1];
    child->error_fd = error[0];
    return 0;
}

int rl_child_release(rl_gated_child *child) {
    char byte = 1;
    ssize_t n;
    // A child that died at its gate (a terminal's Ctrl-C reaches it too) leaves no reader: the write would raise
    // SIGPIPE and end rlctl without a word. Blocked for this thread, and a SIGPIPE it caused taken back.
    sigset_t pipe_only, saved;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &saved);
    do { n = write(child->gate_fd, &byte, 1); } while (n < 0 && errno == EINTR);
    int write_error = n < 0 ? errno : 0;
    if (write_error == EPIPE) {
        struct timespec none = {0, 0};
        while (sigtimedwait(&pipe_only, NULL, &none) < 0 && errno == EINTR) {}
    }
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    close(child->gate_fd);
    child->gate_fd = -1;
    if (write_error != 0) {
        close(child->error_fd);
        child->error_fd = -1;
        return write_error;
    }
    int code = 0;
    size_t got = 0;
    while (got < sizeof code) {
        n = read(child->error_fd, (char *)&code + got, sizeof code - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(child->error_fd);
    child->error_fd = -1;
    return got == sizeof code ? code : 0;
}

void rl_child_abandon(rl_gated_child *child) {
    if (child->gate_fd >= 0) close(child->gate_fd);
    if (child->error_fd >= 0) close(child->error_fd);
    child->gate_fd = child->error_fd = -1;
}

int rl_process_exit_descriptor(int pid) {
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
    long descriptor = syscall(SYS_pidfd_open, pid, 0);
    return descriptor >= 0 ? (int)descriptor : -errno;
}

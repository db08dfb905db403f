/*
 * Starting a program that waits at a gate before it executes, so that its process id can be handed to a tracer
 * (`lttng track --vpid=PID`) before the program's first instruction runs. posix_spawn cannot do this: it has no
 * "start suspended"; fork is used instead, and the child calls only async-signal-safe functions before execve.
 */
#ifndef RL_CHILD_H
#define RL_CHILD_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A child held at its gate.
typedef struct rl_gated_child {
    pid_t pid;
    int gate_fd;   /* write end: one byte releases the child, closing it without a byte makes it exit 127 */
    int error_fd;  /* read end: empty at EOF when execve succeeded, else the child's errno */
} rl_gated_child;

/// Forks a child that restores default signal handling and an empty signal mask, is killed (SIGKILL) when the
/// calling thread ends (PR_SET_PDEATHSIG: call it from a thread that lives as long as the process), waits at the
/// gate, then execve(path, argv, envp). Returns 0, or an errno value when the pipes or fork fail.
int rl_child_spawn_gated(const char *path, char *const argv[], char *const envp[], rl_gated_child *child);

/// Opens the gate and waits until the child has executed the program. Returns 0, the errno of the failed
/// execve (the child has then exited with status 127), or EPIPE when the child had already died at its gate.
int rl_child_release(rl_gated_child *child);

/// Closes the gate without releasing the child: it exits with status 127 without running the program.
void rl_child_abandon(rl_gated_child *child);

/// A descriptor that becomes readable when process `pid` has ended (pidfd_open: immune to the pid's reuse), or
/// -errno.
int rl_process_exit_descriptor(int pid);

#ifdef __cplusplus
}
#endif

#endif

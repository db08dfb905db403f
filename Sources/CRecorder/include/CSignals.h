#ifndef CSIGNALS_H
#define CSIGNALS_H

/// Installs handlers for SIGINT and SIGTERM that write the signal number to a pipe (the only async-signal-safe
/// way to hand a signal to ordinary code). Returns the pipe's read end, or -errno. Idempotent.
int rlsig_install(void);
/// Restores the default action for SIGINT and SIGTERM and re-raises `signo` (to exit with the signal's status).
void rlsig_reraise(int signo);

#endif

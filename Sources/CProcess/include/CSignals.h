#ifndef CSIGNALS_H
#define CSIGNALS_H

/// What the handler writes per signal: the signal number (1 byte), then the CLOCK_MONOTONIC time it arrived
/// (8 bytes, native byte order).
#define RLSIG_RECORD_SIZE 9

/// Installs handlers for SIGINT, SIGTERM and SIGHUP (unless SIGHUP is ignored: nohup) that write one record per
/// signal to a pipe (the only async-signal-safe way to hand a signal to ordinary code). Returns the pipe's read
/// end, or -errno. Idempotent.
int rlsig_install(void);
/// Restores the default action for SIGINT, SIGTERM and SIGHUP and re-raises `signo` (to exit with the signal's status).
void rlsig_reraise(int signo);


#endif

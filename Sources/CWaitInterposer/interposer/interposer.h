// Shared by the interposer's files (librlctl-wait-interposer.so): nothing here is exported.
#ifndef RLI_INTERPOSER_H
#define RLI_INTERPOSER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define RLI_LIBRARY_FILE "librlctl-wait-interposer.so"

/// What this process does with its waits (g_rli.role).
enum {
    RLI_OFF = 0,        // only calls the real functions (not recording, or finished)
    RLI_RECORDING = 1,  // records every wait
    RLI_PENDING = 2,    // a follow-mode fork child: starts recording at its first wait
    RLI_BUSY = 3,       // starting or finishing (waits meanwhile are not recorded)
};

/// The hot path's view of the process, in one cache line.
struct rli_hot {
    _Atomic int role;
    int lttng;                        // 1: events go to the LTTng provider, 0: to the embedded recorder
    _Atomic uint32_t session;         // bumped by each recording start: a thread announces itself once per session
    _Atomic uint32_t names;           // bumped by each thread rename: every thread announces itself again
    _Atomic uint64_t reentered;       // waits skipped because their thread was inside the recorder (signal handler)
} __attribute__((aligned(64)));

extern struct rli_hot g_rli;

/// Starts recording in a follow-mode fork child (its first wait). Returns 1 when it records now.
int rli_start_pending(void);
/// The thread's wait_thread event (hot path's cold branch).
void rli_announce_thread(void);
/// 1 while the thread is in a real wait call whose begin was recorded (wrappers.c).
extern __thread int rli_t_waiting __attribute__((tls_model("initial-exec")));
/// The LTTng path (batches.c): a wait's begin and end into the thread's batch of the recording `session`. Begin
/// returns 1 when the wait's end is to be recorded too (0: a signal handler's wait inside the one it interrupted).
int rli_batch_begin(uint8_t call, int32_t target, uint32_t set_size, int64_t timeout_ns, uint32_t session);
void rli_batch_end(int32_t ready, int32_t error);
struct rl_provider;
/// Starts sending batches through `provider` (the flusher thread); 0, or -1 when the thread cannot start.
int rli_batches_start(const struct rl_provider *provider);
/// Sends every batch, and the waits still in progress, and stops the flusher: the recording ends. Returns how many
/// waits were left out (reported as discarded).
uint64_t rli_batches_finish(void);
/// A fork child's first step: the batches it copied are its parent's.
void rli_batches_forget_after_fork(void);
/// Completes this process's recording before it execs (reason "exec") and prepares the environment to pass:
/// returns envp, or a copy with the interposer's variables restored (rli_after_failed_exec frees it). Sets
/// *finished when it ended a recording.
char *const *rli_before_exec(char *const *envp, int *finished);
/// The exec failed: starts a fresh recording when one was finished for it, and frees the copy.
void rli_after_failed_exec(char *const *original, char *const *passed, int finished);
/// _exit: completes the recording as exit would.
void rli_before_exit(void);
/// Starts a thread of the interposer's own, with every signal blocked, named `name` (rlctl-…: top -H and the
/// program's own tools tell it from the program's threads); 0, or -1. `main` gets `name` and calls
/// rli_name_own_thread with it first.
int rli_start_thread(pthread_t *thread, void *(*main)(void *), const char *name);
void rli_name_own_thread(const void *name);
/// recorder_unit.c
void rli_recorder_forget_after_fork(void);

#endif

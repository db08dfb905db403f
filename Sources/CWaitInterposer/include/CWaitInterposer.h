// Where rlctl finds the wait interposer (librlctl-wait-interposer.so) that `rlctl record --any` preloads into
// the recorded program. The library itself is built from interposer/ by the WaitInterposerBuilder plugin into
// this target's resources; this target links none of it.
#ifndef CWAITINTERPOSER_H
#define CWAITINTERPOSER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Writes the interposer's absolute path into `buffer`: RLCTL_WAIT_INTERPOSER when set, else the library next
/// to the running executable, else the one in a `*_CWaitInterposer.resources` folder next to it (where SwiftPM
/// puts it). Returns 0, or -1 with rl_wait_interposer_error() saying why.
int rl_wait_interposer_path(char *buffer, size_t size);

/// Why the last rl_wait_interposer_path call of this thread failed (one line), or NULL after a success.
const char *rl_wait_interposer_error(void);

#ifdef __cplusplus
}
#endif

#endif

#ifndef CTESTSUPPORT_H
#define CTESTSUPPORT_H

#include <spawn.h>

/// pipe2(fds, O_CLOEXEC): the pipe is close-on-exec from its creation, so a process another test thread starts at
/// that moment cannot inherit it (and keep it open). Swift's Glibc module does not export pipe2 (a GNU extension).
int rltest_pipe_cloexec(int fds[2]);

/// posix_spawn_file_actions_addchdir_np, the GNU extension that sets the child's working directory.
int rltest_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path);

/// posix_spawn_file_actions_addclosefrom_np(actions, 3): the child gets stdin, stdout and stderr only. Descriptors
/// other code made inheritable for its own children at that moment (Swift Testing does so for an exit test's pipes)
/// must not reach ours: a program that outlives them (a daemon lttng starts) would keep those pipes open, and the
/// exit test would wait for their end forever.
int rltest_spawn_add_close_from_3(posix_spawn_file_actions_t *actions);

#endif

#define _GNU_SOURCE
#include "CTestSupport.h"

#include <fcntl.h>
#include <unistd.h>

int rltest_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int rltest_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int rltest_spawn_add_close_from_3(posix_spawn_file_actions_t *actions) {
    return posix_spawn_file_actions_addclosefrom_np(actions, 3);
}

// The lookup of librlctl-wait-interposer.so, as runloop_tracepoints.c finds the LTTng provider: an override,
// then beside the executable, then SwiftPM's resource folder for this target.
#define _GNU_SOURCE
#include "CWaitInterposer.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIBRARY_FILE "librlctl-wait-interposer.so"

static __thread char t_error[1024];
static __thread int t_failed;

static int fail(const char *format, const char *a, const char *b) {
    snprintf(t_error, sizeof t_error, format, a, b);
    t_failed = 1;
    return -1;
}

static int found(char *buffer, size_t size, const char *path) {
    if (strlen(path) + 1 > size) return fail("the path of %s is longer than the buffer (%s)", LIBRARY_FILE, path);
    memcpy(buffer, path, strlen(path) + 1);
    t_failed = 0;
    return 0;
}

int rl_wait_interposer_path(char *buffer, size_t size) {
    const char *override = getenv("RLCTL_WAIT_INTERPOSER");
    if (override && *override) {
        if (access(override, R_OK) != 0) return fail("RLCTL_WAIT_INTERPOSER=%s: no such readable file%s", override, "");
        // The dynamic loader resolves LD_PRELOAD entries against the program's working directory.
        char absolute[4096];
        if (!realpath(override, absolute)) return fail("RLCTL_WAIT_INTERPOSER=%s: cannot resolve the path%s", override, "");
        return found(buffer, size, absolute);
    }
    // /proc/self/exe, not argv[0]: that may be relative or a symlink.
    char folder[4096], path[4096 + 512];
    ssize_t length = readlink("/proc/self/exe", folder, sizeof folder - 1);
    if (length <= 0) return fail("cannot read /proc/self/exe to find %s%s", LIBRARY_FILE, "");
    folder[length] = 0;
    char *slash = strrchr(folder, '/');
    if (!slash) return fail("cannot read /proc/self/exe to find %s%s", LIBRARY_FILE, "");
    *slash = 0;
    snprintf(path, sizeof path, "%s/%s", folder, LIBRARY_FILE);
    if (access(path, R_OK) == 0) return found(buffer, size, path);
    // `<package>_CWaitInterposer.resources`: the package part is the manifest's name, which differs when this
    // package is a dependency, hence the scan.
    static const char suffix[] = "_CWaitInterposer.resources";
    DIR *directory = opendir(folder);
    for (struct dirent *entry; directory && (entry = readdir(directory));) {
        size_t name_length = strlen(entry->d_name);
        if (name_length <= sizeof suffix - 1 || strcmp(entry->d_name + name_length - (sizeof suffix - 1), suffix) != 0) continue;
        snprintf(path, sizeof path, "%s/%s/%s", folder, entry->d_name, LIBRARY_FILE);
        if (access(path, R_OK) != 0) continue;
        closedir(directory);
        return found(buffer, size, path);
    }
    if (directory) closedir(directory);
    return fail("%s is neither in %s nor in a *_CWaitInterposer.resources folder there: build rlctl with `swift "
                "build`, or set RLCTL_WAIT_INTERPOSER to its path", LIBRARY_FILE, folder);
}

const char *rl_wait_interposer_error(void) {
    return t_failed ? t_error : NULL;
}

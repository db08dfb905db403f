// exec and _exit: a recording is completed before the process image goes away (reason=exec, or exit for
// _exit, which skips atexit and destructors), and an exec'd program gets the interposer's environment back if
// the caller dropped it (clearenv, an environment of its own). A failed exec records on into new streams.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "interposer.h"

#define RLI_EXPORT __attribute__((visibility("default")))

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef void (*exit_fn)(int);

static void *next(const char *name) {
    return dlsym(RTLD_NEXT, name);
}

RLI_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    static execve_fn real;
    if (!real) real = (execve_fn)next("execve");
    int finished;
    char *const *passed = rli_before_exec(envp, &finished);
    int result = real(path, argv, passed);
    rli_after_failed_exec(envp, passed, finished);
    return result;
}

RLI_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    static execvpe_fn real;
    if (!real) real = (execvpe_fn)next("execvpe");
    int finished;
    char *const *passed = rli_before_exec(envp, &finished);
    int result = real(file, argv, passed);
    rli_after_failed_exec(envp, passed, finished);
    return result;
}

RLI_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    static fexecve_fn real;
    if (!real) real = (fexecve_fn)next("fexecve");
    int finished;
    char *const *passed = rli_before_exec(envp, &finished);
    int result = real(fd, argv, passed);
    rli_after_failed_exec(envp, passed, finished);
    return result;
}

// libc's own execv, execvp and the execl family do not call execve through the PLT: each is routed here.
RLI_EXPORT int execv(const char *path, char *const argv[]) {
    return execve(path, argv, environ);
}

RLI_EXPORT int execvp(const char *file, char *const argv[]) {
    return execvpe(file, argv, environ);
}

/// The execl family's arguments as an argv array (in a mapping: no malloc, which a vfork child must avoid);
/// *envp_out gets the environment after the NULL when wanted (execle). NULL when out of memory.
static char **collect(const char *first, va_list arguments, char *const **envp_out, size_t *mapped) {
    va_list count_pass;
    va_copy(count_pass, arguments);
    size_t count = 1;
    while (va_arg(count_pass, char *)) count++;
    va_end(count_pass);
    *mapped = (count + 1) * sizeof(char *);
    char **argv = mmap(NULL, *mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (argv == MAP_FAILED) return NULL;
    argv[0] = (char *)first;
    for (size_t i = 1; i < count; i++) argv[i] = va_arg(arguments, char *);
    argv[count] = NULL;
    (void)va_arg(arguments, char *);
    if (envp_out) *envp_out = va_arg(arguments, char *const *);
    return argv;
}

/// The execl family's call once its arguments are an array; frees the array when the exec failed.
static int exec_collected(int search_path, const char *target, char **argv, char *const *envp, size_t mapped) {
    if (!argv) {
        errno = ENOMEM;
        return -1;
    }
    int result = search_path ? execvpe(target, argv, envp) : execve(target, argv, envp);
    int saved = errno;
    munmap(argv, mapped);
    errno = saved;
    return result;
}

RLI_EXPORT int execl(const char *path, const char *arg, ...) {
    va_list arguments;
    va_start(arguments, arg);
    size_t mapped;
    char **argv = collect(arg, arguments, NULL, &mapped);
    va_end(arguments);
    return exec_collected(0, path, argv, environ, mapped);
}

RLI_EXPORT int execlp(const char *file, const char *arg, ...) {
    va_list arguments;
    va_start(arguments, arg);
    size_t mapped;
    char **argv = collect(arg, arguments, NULL, &mapped);
    va_end(arguments);
    return exec_collected(1, file, argv, environ, mapped);
}

RLI_EXPORT int execle(const char *path, const char *arg, ...) {
    va_list arguments;
    va_start(arguments, arg);
    size_t mapped;
    char *const *envp = NULL;
    char **argv = collect(arg, arguments, &envp, &mapped);
    va_end(arguments);
    return exec_collected(0, path, argv, envp, mapped);
}

RLI_EXPORT void _exit(int status) {
    static exit_fn real;
    if (!real) real = (exit_fn)next("_exit");
    rli_before_exit();
    real(status);
    __builtin_unreachable();
}

RLI_EXPORT void _Exit(int status) {
    _exit(status);
}

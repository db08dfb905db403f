#define _GNU_SOURCE
#include "CRunLoopNIO.h"

#include <pthread.h>
#include <unistd.h>
#include <sys/syscall.h>

/* initial-exec: the state is read on every tick, and this target is linked into the program itself (never
 * dlopened), so the thread pointer plus a constant offset reaches it without a call to __tls_get_addr. */
static __thread rlnio_thread_state thread_state __attribute__((tls_model("initial-exec")));

rlnio_thread_state *rlnio_current_thread_state(void) {
    return &thread_state;
}

int32_t rlnio_gettid(void) {
    return (int32_t)syscall(SYS_gettid);
}

int rlnio_thread_name(char *buffer, int capacity) {
    return pthread_getname_np(pthread_self(), buffer, (size_t)capacity);
}

#define _GNU_SOURCE
#include "crl_main_queue.h"

#include <dlfcn.h>
#include <stddef.h>

// Looked up at run time rather than linked: the hooks are libdispatch's private interface to CoreFoundation
// (swift-corelibs-libdispatch, src/queue.c, under DISPATCH_COCOA_COMPAT), and a process that never loaded
// libdispatch has no main-queue work. Set once, on the main thread, before the first drain.
static void (*crl_main_queue_callback)(void *);

int crl_main_queue_handle(void) {
    int (*handle)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "_dispatch_get_main_queue_handle_4CF");
    crl_main_queue_callback = (void (*)(void *))dlsym(RTLD_DEFAULT, "_dispatch_main_queue_callback_4CF");
    if (handle == NULL || crl_main_queue_callback == NULL) return -1;
    return handle();
}

void crl_main_queue_drain(void) {
    // CF calls it through a function of its own, __CFRUNLOOP_IS_SERVICING_THE_MAIN_DISPATCH_QUEUE__, so that
    // stacks name the servicing; ours is RunLoopCore's `servingTheMainDispatchQueue`.
    crl_main_queue_callback(NULL);
}

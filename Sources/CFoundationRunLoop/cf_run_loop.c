#define _GNU_SOURCE
#include "cf_run_loop.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

// libFoundation.so does not export the kCFRunLoopCommonModes pointer itself, only the constant string it points
// to: with the Swift runtime, CFInternal.h's CONST_STRING_DECL(S, V) defines the string as `__##S` and S as
// `(CFStringRef)&__##S`. CFRunLoopAddObserver recognises the token by pointer, so its address is the token.
extern const char __kCFRunLoopCommonModes;

rlcf_string_ref rlcf_common_modes(void) {
    return (rlcf_string_ref)&__kCFRunLoopCommonModes;
}

// A process has a handful of modes: a list searched under a mutex is enough, and it is only asked when a run
// enters a mode its loop has not resolved before.
static pthread_mutex_t interned_lock = PTHREAD_MUTEX_INITIALIZER;
static char **interned_names = NULL;
static size_t interned_count = 0;
static size_t interned_capacity = 0;

static const char *intern(const char *utf8) {
    pthread_mutex_lock(&interned_lock);
    const char *found = NULL;
    for (size_t index = 0; index < interned_count && found == NULL; index++) {
        if (strcmp(interned_names[index], utf8) == 0) found = interned_names[index];
    }
    if (found == NULL) {
        if (interned_count == interned_capacity) {
            size_t capacity = interned_capacity == 0 ? 8 : interned_capacity * 2;
            char **grown = realloc(interned_names, capacity * sizeof(char *));
            if (grown != NULL) {
                interned_names = grown;
                interned_capacity = capacity;
            }
        }
        char *copy = interned_count < interned_capacity ? strdup(utf8) : NULL;
        if (copy != NULL) interned_names[interned_count++] = copy;
        found = copy != NULL ? copy : "?";   // out of memory: a placeholder name rather than a crash
    }
    pthread_mutex_unlock(&interned_lock);
    return found;
}

const char *rlcf_intern_mode_name(rlcf_string_ref name) {
    if (name == NULL) return "?";
    char stack_buffer[256];
    long size = rlcf_string_get_maximum_size_for_encoding(rlcf_string_get_length(name), RLCF_STRING_ENCODING_UTF8) + 1;
    char *buffer = size <= (long)sizeof stack_buffer ? stack_buffer : malloc((size_t)size);
    if (buffer == NULL) return "?";
    const char *interned = rlcf_string_get_c_string(name, buffer, size, RLCF_STRING_ENCODING_UTF8) ? intern(buffer) : "?";
    if (buffer != stack_buffer) free(buffer);
    return interned;
}

int rlcf_thread_id(void) {
    return (int)syscall(SYS_gettid);
}

bool rlcf_thread_name(char *buffer, size_t size) {
    return pthread_getname_np(pthread_self(), buffer, size) == 0 && buffer[0] != 0;
}

// The loops attached now: a handful at most, like the modes.
static pthread_mutex_t claimed_lock = PTHREAD_MUTEX_INITIALIZER;
static rlcf_run_loop_ref claimed_loops[64];
static size_t claimed_count = 0;

rlcf_claim_result rlcf_claim_loop(rlcf_run_loop_ref loop) {
    pthread_mutex_lock(&claimed_lock);
    rlcf_claim_result result = RLCF_CLAIMED;
    for (size_t index = 0; index < claimed_count && result == RLCF_CLAIMED; index++) {
        if (claimed_loops[index] == loop) result = RLCF_ALREADY_CLAIMED;
    }
    if (result == RLCF_CLAIMED && claimed_count == sizeof claimed_loops / sizeof claimed_loops[0]) result = RLCF_CLAIMS_FULL;
    if (result == RLCF_CLAIMED) claimed_loops[claimed_count++] = loop;
    pthread_mutex_unlock(&claimed_lock);
    return result;
}

void rlcf_unclaim_loop(rlcf_run_loop_ref loop) {
    pthread_mutex_lock(&claimed_lock);
    for (size_t index = 0; index < claimed_count; index++) {
        if (claimed_loops[index] == loop) {
            claimed_loops[index] = claimed_loops[--claimed_count];
            break;
        }
    }
    pthread_mutex_unlock(&claimed_lock);
}

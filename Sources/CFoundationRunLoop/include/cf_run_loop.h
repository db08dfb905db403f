#ifndef RLCTL_CF_RUN_LOOP_H
#define RLCTL_CF_RUN_LOOP_H

// The few CoreFoundation run-loop functions the Foundation adapter calls. swift-corelibs-foundation builds
// CoreFoundation into libFoundation.so and exports these symbols (`nm -D --defined-only libFoundation.so`), but
// no public Swift module declares them: Foundation imports its CoreFoundation privately. The signatures are those
// of CoreFoundation/RunLoop.subproj/CFRunLoop.h and Base.subproj/CFBase.h in swift-corelibs-foundation (also
// shipped as the toolchain's usr/lib/swift/CoreFoundation/CFRunLoop.h); CFRunLoopActivity and CFOptionFlags are
// `unsigned long`, CFIndex `long`, Boolean `unsigned char`. The asm labels bind our rlcf_ names to the real
// symbols, so this module never clashes with a program that imports that CoreFoundation module itself.

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlcf_run_loop *rlcf_run_loop_ref;
typedef struct rlcf_observer *rlcf_observer_ref;
typedef const struct rlcf_string *rlcf_string_ref;
typedef const struct rlcf_array *rlcf_array_ref;

typedef void (*rlcf_observer_callback)(rlcf_observer_ref observer, unsigned long activity, void *info);

/// CFRunLoopObserverContext.
typedef struct {
    long version;
    void *info;
    const void *(*retain)(const void *info);
    void (*release)(const void *info);
    rlcf_string_ref (*copyDescription)(const void *info);
} rlcf_observer_context;

rlcf_run_loop_ref rlcf_run_loop_get_current(void) __asm__("CFRunLoopGetCurrent");
rlcf_run_loop_ref rlcf_run_loop_get_main(void) __asm__("CFRunLoopGetMain");
/// CFRunLoopWakeUp (the tests compare RunLoopCore's wake-up rules with CF's own).
void rlcf_run_loop_wake_up(rlcf_run_loop_ref loop) __asm__("CFRunLoopWakeUp");
/// The mode the loop runs in now (retained: CFRelease it), NULL when it runs in none.
rlcf_string_ref rlcf_run_loop_copy_current_mode(rlcf_run_loop_ref loop) __asm__("CFRunLoopCopyCurrentMode");
/// Every mode's name (retained array: CFRelease it); the common-modes token is not one of them.
rlcf_array_ref rlcf_run_loop_copy_all_modes(rlcf_run_loop_ref loop) __asm__("CFRunLoopCopyAllModes");

rlcf_observer_ref rlcf_observer_create(const void *allocator, unsigned long activities, unsigned char repeats,
                                       long order, rlcf_observer_callback callback,
                                       rlcf_observer_context *context) __asm__("CFRunLoopObserverCreate");
void rlcf_run_loop_add_observer(rlcf_run_loop_ref loop, rlcf_observer_ref observer, rlcf_string_ref mode)
    __asm__("CFRunLoopAddObserver");
void rlcf_observer_invalidate(rlcf_observer_ref observer) __asm__("CFRunLoopObserverInvalidate");

long rlcf_array_get_count(rlcf_array_ref array) __asm__("CFArrayGetCount");
const void *rlcf_array_get_value_at_index(rlcf_array_ref array, long index) __asm__("CFArrayGetValueAtIndex");
long rlcf_string_get_length(rlcf_string_ref string) __asm__("CFStringGetLength");
long rlcf_string_get_maximum_size_for_encoding(long length, unsigned int encoding)
    __asm__("CFStringGetMaximumSizeForEncoding");
unsigned char rlcf_string_get_c_string(rlcf_string_ref string, char *buffer, long size, unsigned int encoding)
    __asm__("CFStringGetCString");
void rlcf_release(const void *object) __asm__("CFRelease");

/// kCFStringEncodingUTF8.
#define RLCF_STRING_ENCODING_UTF8 0x08000100u

/// kCFRunLoopCommonModes: the token that adds an observer to every common mode, present and future.
rlcf_string_ref rlcf_common_modes(void);

/// The mode name's UTF-8 bytes as a NUL-terminated string interned for the life of the process: one copy per
/// distinct name, whichever loop or thread asks (thread-safe). "?" when the name cannot be converted.
const char *rlcf_intern_mode_name(rlcf_string_ref name);

/// What rlcf_claim_loop found.
typedef enum { RLCF_CLAIMED = 0, RLCF_ALREADY_CLAIMED = 1, RLCF_CLAIMS_FULL = 2 } rlcf_claim_result;

/// Marks `loop` as traced by an attachment, unless one traces it already or 64 loops are claimed (thread-safe).
rlcf_claim_result rlcf_claim_loop(rlcf_run_loop_ref loop);
/// Ends `loop`'s claim, so that it can be attached again.
void rlcf_unclaim_loop(rlcf_run_loop_ref loop);

/// The calling thread's kernel id (gettid), as traces name threads.
int rlcf_thread_id(void);
/// The calling thread's name into `buffer` (NUL-terminated); false when it has none.
bool rlcf_thread_name(char *buffer, size_t size);

#ifdef __cplusplus
}
#endif

#endif

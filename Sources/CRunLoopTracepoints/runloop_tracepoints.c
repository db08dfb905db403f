// The rl_trace_* functions Swift calls, and the loader of the `runloop` provider. This file links no LTTng
// library: the provider (probes, tracepoints, liblttng-ust) is librunloop-lttng-provider.so, built from
// provider/ by the LTTngProviderBuilder plugin, and dlopen'ed here the first time LTTngSink needs it — so
// `rlctl summarize` and every other process that never traces with LTTng never maps liblttng-ust nor runs its
// constructor's listener threads (docs/lttng.md, "Loading the provider"). Built with RLCTL_HAVE_LTTNG only when
// Package.swift found liblttng-ust-dev and RLCTL_DISABLE_LTTNG is not set (it then also builds the provider).
#include "rl_tracepoints.h"

#include <stdlib.h>

// Unused parameters are fine in the no-LTTng build: every function is then empty.
#pragma clang diagnostic ignored "-Wunused-parameter"

static const int rl_tp_never = 0;

#ifdef RLCTL_HAVE_LTTNG

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "provider/rl_provider_abi.h"

// Reads as "enabled" until the loader has run, so that an LTTngSink's first event of each kind reaches its
// rl_trace_* function, which loads the provider: a program only has to install the sink (as it did when the
// provider was linked in), and a process that never installs one never pays for the load.
static const int rl_tp_pending = 1;

#define RL_PENDING [0 ... RL_TP_COUNT - 1] = &rl_tp_pending
const int *rl_tp_state[RL_TP_COUNT] = { RL_PENDING };
// Activity bits 3, 4 and 8 have no event: they read 0 from the start.
const int *rl_tp_activity_state[9] = {
    &rl_tp_pending, &rl_tp_pending, &rl_tp_pending, &rl_tp_never, &rl_tp_never,
    &rl_tp_pending, &rl_tp_pending, &rl_tp_pending, &rl_tp_never,
};

// Every event function of the provider's table: name, parameters, arguments.
#define RL_EVENTS(X)                                                                                       \
    X(activity, (uint64_t activity, uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth),  \
      (activity, loop_id, mode, iteration, depth))                                                          \
    X(run_begin, (uint64_t loop_id, const char *mode, uint64_t timeout_ns, uint8_t return_after_source_handled), \
      (loop_id, mode, timeout_ns, return_after_source_handled))                                             \
    X(run_end, (uint64_t loop_id, const char *mode, uint8_t result), (loop_id, mode, result))              \
    X(timer_fire_begin, (uint64_t loop_id, uint64_t timer_id, uint64_t scheduled_ns, uint64_t tolerance_ns, \
                         uint64_t interval_ns, uint64_t missed),                                            \
      (loop_id, timer_id, scheduled_ns, tolerance_ns, interval_ns, missed))                                 \
    X(timer_fire_end, (uint64_t loop_id, uint64_t timer_id), (loop_id, timer_id))                          \
    X(source_signal, (uint64_t source_id), (source_id))                                                    \
    X(source_perform_begin, (uint64_t loop_id, uint64_t source_id, uint8_t kind, int64_t order,             \
                             uint64_t signaled_ns),                                                         \
      (loop_id, source_id, kind, order, signaled_ns))                                                       \
    X(source_perform_end, (uint64_t loop_id, uint64_t source_id), (loop_id, source_id))                    \
    X(block_begin, (uint64_t loop_id, uint64_t block_id, uint64_t enqueued_ns), (loop_id, block_id, enqueued_ns)) \
    X(block_end, (uint64_t loop_id, uint64_t block_id), (loop_id, block_id))                               \
    X(observer_begin, (uint64_t loop_id, uint64_t observer_id, uint8_t activity), (loop_id, observer_id, activity)) \
    X(observer_end, (uint64_t loop_id, uint64_t observer_id), (loop_id, observer_id))                      \
    X(wakeup, (uint64_t loop_id, uint8_t reason, uint64_t slept_ns), (loop_id, reason, slept_ns))          \
    X(loop_create, (uint64_t loop_id, int32_t tid, const char *name), (loop_id, tid, name))                \
    X(item_label, (uint64_t item_id, uint8_t kind, const char *label), (item_id, kind, label))

// The event functions this process calls (only their fields are used): lazy stubs, then the provider's.
#define RL_DECLARE_LAZY(name, params, args) static void rl_lazy_##name params;
RL_EVENTS(RL_DECLARE_LAZY)
#define RL_INIT_LAZY(name, params, args) .name = rl_lazy_##name,
static rl_provider rl_calls = { RL_EVENTS(RL_INIT_LAZY) };

// The provider's table once loaded; NULL before, and for ever when loading failed. Published with release
// after the state table, read with acquire.
static const rl_provider *rl_loaded;
static pthread_once_t rl_load_once = PTHREAD_ONCE_INIT;
static char rl_error[2048];
static char rl_path[4096];
static int rl_failed;

/// Opens `path` and checks its table; on failure appends why to rl_error and returns NULL.
static const rl_provider *rl_open(const char *path) {
    // RTLD_LOCAL: the provider's symbols stay its own. RTLD_NODELETE: lttng-ust(3) says a provider must never
    // be unloaded while it may trace, and nothing here ever needs it gone.
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    size_t used = strlen(rl_error);
    if (!handle) {
        const char *why = dlerror();
        snprintf(rl_error + used, sizeof rl_error - used, "%s%s", used ? "; " : "", why ? why : path);
        return NULL;
    }
    rl_provider_entry entry = (rl_provider_entry)dlsym(handle, RL_PROVIDER_SYMBOL);
    const rl_provider *table = entry ? entry() : NULL;
    if (!table || table->abi != RL_PROVIDER_ABI || table->size != sizeof(rl_provider)) {
        snprintf(rl_error + used, sizeof rl_error - used,
                 "%s%s: not a runloop provider of this build (no %s, or another version of its table)",
                 used ? "; " : "", path, RL_PROVIDER_SYMBOL);
        return NULL;
    }
    snprintf(rl_path, sizeof rl_path, "%s", path);
    return table;
}

/// The running executable's folder, from /proc/self/exe (argv[0] may be relative or a symlink).
static int rl_executable_folder(char *folder, size_t size) {
    ssize_t length = readlink("/proc/self/exe", folder, size - 1);
    if (length <= 0) return -1;
    folder[length] = 0;
    char *slash = strrchr(folder, '/');
    if (!slash) return -1;
    *slash = 0;
    return 0;
}

/// Next to the executable, as an installed rlctl would ship it, then in SwiftPM's resource folder for this
/// target, `<package>_CRunLoopTracepoints.resources` next to every built executable and test bundle (the
/// package part is the manifest's name, which differs when this package is a dependency: hence the scan).
static const rl_provider *rl_find_next_to_executable(void) {
    char folder[4096], path[4096 + 512];
    if (rl_executable_folder(folder, sizeof folder) != 0) {
        snprintf(rl_error, sizeof rl_error, "cannot read /proc/self/exe to find %s", RL_PROVIDER_FILE);
        return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", folder, RL_PROVIDER_FILE);
    if (access(path, F_OK) == 0) return rl_open(path);
    DIR *directory = opendir(folder);
    const rl_provider *table = NULL;
    int tried = 0;
    static const char suffix[] = "_CRunLoopTracepoints.resources";
    for (struct dirent *entry; directory && !table && (entry = readdir(directory));) {
        size_t length = strlen(entry->d_name);
        if (length <= sizeof suffix - 1 || strcmp(entry->d_name + length - (sizeof suffix - 1), suffix) != 0) continue;
        snprintf(path, sizeof path, "%s/%s/%s", folder, entry->d_name, RL_PROVIDER_FILE);
        if (access(path, F_OK) != 0) continue;
        tried = 1;
        table = rl_open(path);
    }
    if (directory) closedir(directory);
    if (!table && !tried) {
        snprintf(rl_error, sizeof rl_error,
                 "%s is neither in %s nor in a *_CRunLoopTracepoints.resources folder there: build it with "
                 "`swift build` (any product that links Tracing builds it), or set RLCTL_LTTNG_PROVIDER to its path",
                 RL_PROVIDER_FILE, folder);
    }
    return table;
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RL_TSAN 1
#endif
#endif

/// The provider this process should use: the RLCTL_LTTNG_PROVIDER file if set, else the one next to the
/// executable; NULL (with rl_error saying why) when there is none.
static const rl_provider *rl_locate(void) {
#ifdef RL_TSAN
    // liblttng-ust's listener threads (started by its constructor, cancelled by its destructor at exit) end with
    // ThreadSanitizer's ignores enabled, which TSan treats as fatal: the process dies at exit with "thread T…
    // finished with ignores enabled" (also when the library is opened with the C library's own dlopen, past
    // TSan's interceptor; tried). A TSan build therefore never loads the provider: it checks the package's own
    // code for races with LTTng compiled in but not running, and LTTngSink records nothing, saying why.
    snprintf(rl_error, sizeof rl_error,
             "this is a ThreadSanitizer build: liblttng-ust's threads end with TSan's ignores enabled, which TSan "
             "treats as fatal, so the provider is not loaded (trace with LTTng from a build without --sanitize=thread)");
    (void)rl_find_next_to_executable;   // the search is compiled (and checked) in this build too, just not used
    return NULL;
#else
    const char *override = getenv("RLCTL_LTTNG_PROVIDER");
    if (!override || !*override) return rl_find_next_to_executable();
    const rl_provider *table = rl_open(override);
    if (!table) {
        char why[sizeof rl_error];
        snprintf(why, sizeof why, "%s", rl_error);
        snprintf(rl_error, sizeof rl_error, "RLCTL_LTTNG_PROVIDER=%s: %s", override, why);
    }
    return table;
#endif
}

static void rl_point_calls_at(const rl_provider *table);

static void rl_load(void) {
    const rl_provider *table = rl_locate();
    // Repoint the state table before publishing: to the provider's words, or for ever to a zero word.
    for (uint32_t id = 0; id < RL_TP_COUNT; id++)
        __atomic_store_n(&rl_tp_state[id], table ? table->state[id] : &rl_tp_never, __ATOMIC_RELEASE);
    static const int8_t activity_event[9] = {
        RL_TP_ENTRY, RL_TP_BEFORE_TIMERS, RL_TP_BEFORE_SOURCES, -1, -1,
        RL_TP_BEFORE_WAITING, RL_TP_AFTER_WAITING, RL_TP_EXIT, -1,
    };
    for (int bit = 0; bit < 9; bit++) {
        if (activity_event[bit] < 0) continue;
        __atomic_store_n(&rl_tp_activity_state[bit], table ? table->state[activity_event[bit]] : &rl_tp_never,
                         __ATOMIC_RELEASE);
    }
    rl_point_calls_at(table);
    if (table) rl_error[0] = 0;
    __atomic_store_n(&rl_failed, table ? 0 : 1, __ATOMIC_RELEASE);
    __atomic_store_n(&rl_loaded, table, __ATOMIC_RELEASE);
}

int rl_trace_load(void) {
    pthread_once(&rl_load_once, rl_load);
    return __atomic_load_n(&rl_loaded, __ATOMIC_ACQUIRE) ? 0 : -1;
}

const char *rl_trace_load_error(void) {
    // rl_failed is published after rl_error is written, and rl_error never changes after that.
    return __atomic_load_n(&rl_failed, __ATOMIC_ACQUIRE) ? rl_error : NULL;
}

const char *rl_trace_provider_path(void) {
    return __atomic_load_n(&rl_loaded, __ATOMIC_ACQUIRE) ? rl_path : NULL;
}

int rl_trace_compiled_in(void) { return rl_trace_load() == 0; }
int rl_trace_provider_built(void) { return 1; }

int rl_trace_load_for_sink(void) {
    if (rl_trace_load() == 0) return 0;
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "LTTngSink: the runloop LTTng provider is not loaded, no event will be traced: %s\n",
                rl_trace_load_error());
    return -1;
}

// Until the provider is loaded, each entry of rl_calls is a lazy stub that loads it and calls again; rl_load
// then points every entry at the provider's function, or at a no-op when it cannot be loaded. So an enabled
// event costs one load and an indirect tail call on top of the provider's own work, with no test or frame.
#define RL_DEFINE_STUBS(name, params, args)                                                  \
    static void rl_noop_##name params {}                                                    \
    static void rl_lazy_##name params {                                                     \
        rl_trace_load_for_sink();                                                           \
        __atomic_load_n(&rl_calls.name, __ATOMIC_ACQUIRE) args;                             \
    }
RL_EVENTS(RL_DEFINE_STUBS)

static void rl_point_calls_at(const rl_provider *table) {
#define RL_POINT(name, params, args) \
    __atomic_store_n(&rl_calls.name, table ? table->name : rl_noop_##name, __ATOMIC_RELEASE);
    RL_EVENTS(RL_POINT)
#undef RL_POINT
}

#define RL_CALL(name, ...) __atomic_load_n(&rl_calls.name, __ATOMIC_ACQUIRE)(__VA_ARGS__)

#else /* !RLCTL_HAVE_LTTNG */

const int *rl_tp_state[RL_TP_COUNT] = { [0 ... RL_TP_COUNT - 1] = &rl_tp_never };
const int *rl_tp_activity_state[9] = { [0 ... 8] = &rl_tp_never };

int rl_trace_load(void) { return -1; }
int rl_trace_load_for_sink(void) { return -1; }   // silent: a build without LTTng records nothing, as documented
const char *rl_trace_load_error(void) {
    return "this build has no LTTng provider (built without liblttng-ust-dev, or with RLCTL_DISABLE_LTTNG)";
}
const char *rl_trace_provider_path(void) { return NULL; }
int rl_trace_compiled_in(void) { return 0; }
int rl_trace_provider_built(void) { return 0; }

#define RL_CALL(name, ...) do { } while (0)

#endif /* RLCTL_HAVE_LTTNG */

int rl_trace_enabled_count(void) {
    if (rl_trace_load() != 0) return 0;
    int count = 0;
    for (uint32_t id = 0; id < RL_TP_COUNT; id++) count += rl_tp_enabled((rl_tp_id)id) != 0;
    return count;
}

void rl_trace_entry(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_CALL(activity, 1, loop_id, mode, iteration, depth);
}
void rl_trace_before_timers(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_CALL(activity, 2, loop_id, mode, iteration, depth);
}
void rl_trace_before_sources(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_CALL(activity, 4, loop_id, mode, iteration, depth);
}
void rl_trace_before_waiting(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_CALL(activity, 32, loop_id, mode, iteration, depth);
}
void rl_trace_after_waiting(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_CALL(activity, 64, loop_id, mode, iteration, depth);
}
void rl_trace_exit(uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_CALL(activity, 128, loop_id, mode, iteration, depth);
}
void rl_trace_activity(uint64_t activity, uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    RL_CALL(activity, activity, loop_id, mode, iteration, depth);
}

void rl_trace_run_begin(uint64_t loop_id, const char *mode, uint64_t timeout_ns, uint8_t return_after_source_handled) {
    RL_CALL(run_begin, loop_id, mode, timeout_ns, return_after_source_handled);
}
void rl_trace_run_end(uint64_t loop_id, const char *mode, uint8_t result) {
    RL_CALL(run_end, loop_id, mode, result);
}

void rl_trace_timer_fire_begin(uint64_t loop_id, uint64_t timer_id, uint64_t scheduled_ns, uint64_t tolerance_ns,
                               uint64_t interval_ns, uint64_t missed) {
    RL_CALL(timer_fire_begin, loop_id, timer_id, scheduled_ns, tolerance_ns, interval_ns, missed);
}
void rl_trace_timer_fire_end(uint64_t loop_id, uint64_t timer_id) {
    RL_CALL(timer_fire_end, loop_id, timer_id);
}

void rl_trace_source_signal(uint64_t source_id) {
    RL_CALL(source_signal, source_id);
}
void rl_trace_source_perform_begin(uint64_t loop_id, uint64_t source_id, uint8_t kind, int64_t order,
                                   uint64_t signaled_ns) {
    RL_CALL(source_perform_begin, loop_id, source_id, kind, order, signaled_ns);
}
void rl_trace_source_perform_end(uint64_t loop_id, uint64_t source_id) {
    RL_CALL(source_perform_end, loop_id, source_id);
}

void rl_trace_block_begin(uint64_t loop_id, uint64_t block_id, uint64_t enqueued_ns) {
    RL_CALL(block_begin, loop_id, block_id, enqueued_ns);
}
void rl_trace_block_end(uint64_t loop_id, uint64_t block_id) {
    RL_CALL(block_end, loop_id, block_id);
}

void rl_trace_observer_begin(uint64_t loop_id, uint64_t observer_id, uint8_t activity) {
    RL_CALL(observer_begin, loop_id, observer_id, activity);
}
void rl_trace_observer_end(uint64_t loop_id, uint64_t observer_id) {
    RL_CALL(observer_end, loop_id, observer_id);
}

void rl_trace_wakeup(uint64_t loop_id, uint8_t reason, uint64_t slept_ns) {
    RL_CALL(wakeup, loop_id, reason, slept_ns);
}

void rl_trace_loop_create(uint64_t loop_id, int32_t tid, const char *name) {
    RL_CALL(loop_create, loop_id, tid, name);
}
void rl_trace_item_label(uint64_t item_id, uint8_t kind, const char *label) {
    RL_CALL(item_label, item_id, kind, label);
}

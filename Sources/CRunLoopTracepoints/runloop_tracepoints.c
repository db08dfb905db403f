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

// The activity event of each CF activity bit number (entry 1 -> bit 0 … exit 128 -> bit 7): the `activity`
// enumeration of runloop_events.def gives each event its bit; bits 3, 4 and 8 have none.
static const int8_t rl_activity_event[9] = {
    RL_EVENT_entry, RL_EVENT_before_timers, RL_EVENT_before_sources, -1, -1,
    RL_EVENT_before_waiting, RL_EVENT_after_waiting, RL_EVENT_exit, -1,
};

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

#define RL_PENDING [0 ... RL_EVENT_COUNT - 1] = &rl_tp_pending
const int *rl_tp_state[RL_EVENT_COUNT] = { RL_PENDING };
// Activity bits 3, 4 and 8 have no event: they read 0 from the start.
const int *rl_tp_activity_state[9] = {
    &rl_tp_pending, &rl_tp_pending, &rl_tp_pending, &rl_tp_never, &rl_tp_never,
    &rl_tp_pending, &rl_tp_pending, &rl_tp_pending, &rl_tp_never,
};

// The event functions this process calls (only their fields are used): lazy stubs, then the provider's.
#define X(name, params, args) static void rl_lazy_##name params;
#include "runloop_events_as_calls.def"
#undef X
#define X(name, params, args) .name = rl_lazy_##name,
static rl_provider rl_calls = {
#include "runloop_events_as_calls.def"
};
#undef X

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
    for (uint32_t id = 0; id < RL_EVENT_COUNT; id++)
        __atomic_store_n(&rl_tp_state[id], table ? table->state[id] : &rl_tp_never, __ATOMIC_RELEASE);
    for (int bit = 0; bit < 9; bit++) {
        if (rl_activity_event[bit] < 0) continue;
        __atomic_store_n(&rl_tp_activity_state[bit], table ? table->state[rl_activity_event[bit]] : &rl_tp_never,
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
#define X(name, params, args)                                                                \
    static void rl_noop_##name params {}                                                    \
    static void rl_lazy_##name params {                                                     \
        rl_trace_load_for_sink();                                                           \
        __atomic_load_n(&rl_calls.name, __ATOMIC_ACQUIRE) args;                             \
    }
#include "runloop_events_as_calls.def"
#undef X

static void rl_point_calls_at(const rl_provider *table) {
#define X(name, params, args) \
    __atomic_store_n(&rl_calls.name, table ? table->name : rl_noop_##name, __ATOMIC_RELEASE);
#include "runloop_events_as_calls.def"
#undef X
}

#define RL_CALL(name, args) __atomic_load_n(&rl_calls.name, __ATOMIC_ACQUIRE) args

#else /* !RLCTL_HAVE_LTTNG */

const int *rl_tp_state[RL_EVENT_COUNT] = { [0 ... RL_EVENT_COUNT - 1] = &rl_tp_never };
const int *rl_tp_activity_state[9] = { [0 ... 8] = &rl_tp_never };

int rl_trace_load(void) { return -1; }
int rl_trace_load_for_sink(void) { return -1; }   // silent: a build without LTTng records nothing, as documented
const char *rl_trace_load_error(void) {
    return "this build has no LTTng provider (built without liblttng-ust-dev, or with RLCTL_DISABLE_LTTNG)";
}
const char *rl_trace_provider_path(void) { return NULL; }
int rl_trace_compiled_in(void) { return 0; }
int rl_trace_provider_built(void) { return 0; }

#define RL_CALL(name, args) do { } while (0)

#endif /* RLCTL_HAVE_LTTNG */

int rl_trace_enabled_count(void) {
    if (rl_trace_load() != 0) return 0;
    int count = 0;
    for (uint32_t id = 0; id < RL_EVENT_COUNT; id++) count += rl_tp_enabled((rl_tp_id)id) != 0;
    return count;
}

#define X(name, params, args) void rl_trace_##name params { RL_CALL(name, args); }
#include "runloop_events_as_calls.def"
#undef X

void rl_trace_activity(uint64_t activity, uint64_t loop_id, const char *mode, uint64_t iteration, uint32_t depth) {
    unsigned bit = (unsigned)__builtin_ctzll(activity | 0x100);
    if (activity != (1ull << bit)) return;   // not a single activity bit
    switch (rl_activity_event[bit]) {
    case RL_EVENT_entry: rl_trace_entry(loop_id, mode, iteration, depth); break;
    case RL_EVENT_before_timers: rl_trace_before_timers(loop_id, mode, iteration, depth); break;
    case RL_EVENT_before_sources: rl_trace_before_sources(loop_id, mode, iteration, depth); break;
    case RL_EVENT_before_waiting: rl_trace_before_waiting(loop_id, mode, iteration, depth); break;
    case RL_EVENT_after_waiting: rl_trace_after_waiting(loop_id, mode, iteration, depth); break;
    case RL_EVENT_exit: rl_trace_exit(loop_id, mode, iteration, depth); break;
    default: break;
    }
}

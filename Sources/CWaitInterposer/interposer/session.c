// The interposer's process side: whether this process records (the RLCTL_ANY_* environment that `rlctl record
// --any` sets), the recording's writer thread and stream files, the per-process markers, and what fork, exec
// and exit do to a recording. None of this runs on a wait's path except a follow-mode child's first wait.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "CRecorder.h"
#include "interposer.h"
#include "provider/rl_provider_abi.h"

#define RLI_EXPORT __attribute__((visibility("default")))

struct rli_hot g_rli;

void rli_resolve_waits(void);

// ===== configuration (read once by the constructor; the exec'd image reads it again) =====

// The variables `rlctl record --any` sets, restored into an exec'd program's environment when it lost them.
static const char *const k_variables[] = {
    "RLCTL_ANY_TRACE_DIR", "RLCTL_ANY_UUID", "RLCTL_ANY_TRACER", "RLCTL_ANY_LTTNG_PROVIDER", "RLCTL_ANY_FOLLOW",
    "RLCTL_ANY_ROOT_PID", "RLCTL_ANY_SUB_BUFFER_SIZE", "RLCTL_ANY_SUB_BUFFER_COUNT", "RLCTL_ANY_SWITCHED_DIR",
    "RLCTL_ANY_KERNEL_WAITS",
};
#define SWITCHED_VARIABLE 8
#define VARIABLE_COUNT (sizeof k_variables / sizeof k_variables[0])
// "NAME=value" of each variable as this process received it ("" when absent).
static char g_assignments[VARIABLE_COUNT][PATH_MAX + 64];

static struct {
    char directory[PATH_MAX];
    uint8_t uuid[16];
    int follow;
    uint32_t kernel_waits;        // rlctl's kernel view records the waits no interposer claims: the token to claim
                                  // a thread's with (RL_KP_CLAIM), 0 when it does not
    pid_t root;
    uint32_t sub_buffer_size, sub_buffer_count;
    char self[PATH_MAX];          // this library's path, for LD_PRELOAD
    char process_comm[16];        // /proc/self/comm at load
    const rl_provider *provider;  // lttng mode
} g_config;

static const char *variable(const char *name) {
    const char *value = getenv(name);
    return value && *value ? value : NULL;
}

static int parse_uuid(const char *text, uint8_t uuid[16]) {
    if (!text || strlen(text) != 32) return -1;
    for (int i = 0; i < 16; i++) {
        unsigned byte;
        if (sscanf(text + 2 * i, "%2x", &byte) != 1) return -1;
        uuid[i] = (uint8_t)byte;
    }
    return 0;
}

static uint32_t number_or(const char *name, uint32_t fallback) {
    const char *text = variable(name);
    if (!text) return fallback;
    char *end;
    unsigned long value = strtoul(text, &end, 10);
    return *end == 0 && value > 0 && value <= UINT32_MAX ? (uint32_t)value : fallback;
}

static void remember_assignments(void) {
    for (size_t i = 0; i < VARIABLE_COUNT; i++) {
        const char *value = getenv(k_variables[i]);
        if (value) snprintf(g_assignments[i], sizeof g_assignments[i], "%s=%s", k_variables[i], value);
        else g_assignments[i][0] = 0;
    }
}

/// Whether an LD_PRELOAD element (separated by ':' or ' ') names this library.
static int names_interposer(const char *element, size_t length) {
    static const char file[] = RLI_LIBRARY_FILE;
    size_t file_length = sizeof file - 1;
    return length >= file_length && memcmp(element + length - file_length, file, file_length) == 0 &&
           (length == file_length || element[length - file_length - 1] == '/');
}

static int preload_has_interposer(const char *preload) {
    for (const char *p = preload; p && *p;) {
        size_t length = strcspn(p, ": ");
        if (length && names_interposer(p, length)) return 1;
        p += length;
        if (*p) p++;
    }
    return 0;
}

/// Takes the interposer out of this process's LD_PRELOAD (keeping the rest) so its children do not load it.
static void leave_preload(void) {
    const char *preload = getenv("LD_PRELOAD");
    if (!preload || !preload_has_interposer(preload)) return;
    char kept[8192];
    size_t used = 0;
    for (const char *p = preload; *p;) {
        size_t length = strcspn(p, ": ");
        if (length && !names_interposer(p, length) && used + length + 1 < sizeof kept) {
            if (used) kept[used++] = ':';
            memcpy(kept + used, p, length);
            used += length;
        }
        p += length;
        if (*p) p++;
    }
    kept[used] = 0;
    if (used) setenv("LD_PRELOAD", kept, 1);
    else unsetenv("LD_PRELOAD");
}

// ===== the LTTng provider (RLCTL_ANY_TRACER=lttng) =====

static const rl_provider *open_provider(const char *path) {
    if (!path) return NULL;
    // As runloop_tracepoints.c: RTLD_LOCAL keeps its symbols its own, RTLD_NODELETE because a provider must
    // never be unloaded while it may trace.
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!handle) return NULL;
    rl_provider_entry entry = (rl_provider_entry)dlsym(handle, RL_PROVIDER_SYMBOL);
    const rl_provider *table = entry ? entry() : NULL;
    if (!table || table->abi != RL_PROVIDER_ABI || table->size != sizeof(rl_provider)) return NULL;
    return table;
}

static void note_first_wait(void);

void rli_announce_thread(void) {
    note_first_wait();
    // rlctl's kernel view leaves this thread's recorded waits to us from now on, told by the flag whose address the
    // claim gives (rl_kernel_probe_record.h, RL_KP_CLAIM); its other waits (raw system calls) it records itself.
#ifdef SYS_epoll_wait
    if (g_config.kernel_waits != 0) syscall(SYS_epoll_wait, -1, &rli_t_waiting, 0, (int)g_config.kernel_waits);
#endif
    char thread[17] = {0};
    prctl(PR_GET_NAME, thread, 0, 0, 0);
    int32_t pid = (int32_t)getpid(), ppid = (int32_t)getppid();
    if (!g_rli.lttng) {
        rlrec_wait_thread(pid, ppid, thread, g_config.process_comm);
    } else if (__atomic_load_n(g_config.provider->state[RL_EVENT_wait_thread], __ATOMIC_RELAXED)) {
        g_config.provider->wait_thread(pid, ppid, thread, g_config.process_comm);
    }
}

// ===== the real process calls =====

typedef int (*setuid_fn)(uid_t);
typedef int (*setreuid_fn)(uid_t, uid_t);
typedef int (*setresuid_fn)(uid_t, uid_t, uid_t);
typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long, unsigned long);
typedef int (*setname_fn)(pthread_t, const char *);

// The real process calls, resolved by the constructor before it loads the LTTng provider: lttng-ust's listener
// threads name themselves while that dlopen holds the loader's lock, and a dlsym of theirs would wait for it
// (and lttng-ust's constructor for them, until its registration times out: the first events are lost).
static struct {
    setuid_fn setuid, seteuid;
    setreuid_fn setreuid;
    setresuid_fn setresuid;
    prctl_fn prctl;
    setname_fn setname;
} real_process;

/// `*slot`, resolved now if the constructor has not run yet (another library's constructor calls it).
static void *resolved(void *slot, const char *name) {
    void **function = slot;
    if (!*function) *function = dlsym(RTLD_NEXT, name);
    return *function;
}

static void resolve_process_calls(void) {
    resolved(&real_process.setuid, "setuid");
    resolved(&real_process.seteuid, "seteuid");
    resolved(&real_process.setreuid, "setreuid");
    resolved(&real_process.setresuid, "setresuid");
    resolved(&real_process.prctl, "prctl");
    resolved(&real_process.setname, "pthread_setname_np");
}

// ===== thread renames =====
//
// A thread's name goes into the trace with its first wait; a thread often gets its name after that (memcached's
// main thread names each worker once it has started, so the worker's first wait may come first). A rename through
// libc bumps g_rli.names, and every thread announces itself again at its next wait: the summary keeps the last
// name. A rename that writes /proc/self/task/TID/comm directly is not seen.

static void renamed(void) {
    atomic_fetch_add_explicit(&g_rli.names, 1, memory_order_relaxed);
}

RLI_EXPORT int prctl(int option, ...) {
    prctl_fn real = (prctl_fn)resolved(&real_process.prctl, "prctl");
    // As glibc's own prctl: the arguments an option does not use are passed on whatever they hold.
    va_list arguments;
    va_start(arguments, option);
    unsigned long a2 = va_arg(arguments, unsigned long), a3 = va_arg(arguments, unsigned long);
    unsigned long a4 = va_arg(arguments, unsigned long), a5 = va_arg(arguments, unsigned long);
    va_end(arguments);
    int result = real(option, a2, a3, a4, a5);
    if (option == PR_SET_NAME && result == 0) renamed();
    return result;
}

RLI_EXPORT int pthread_setname_np(pthread_t thread, const char *name) {
    int result = ((setname_fn)resolved(&real_process.setname, "pthread_setname_np"))(thread, name);
    if (result == 0) renamed();
    return result;
}

// ===== files =====

/// Writes all of `size` bytes; returns 0 or -1.
static int write_all(int fd, const void *data, size_t size) {
    const uint8_t *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

// ===== the folder this process writes into =====
//
// The trace folder is rlctl's (root's, 0755). A process that switches to another user (nginx's workers become
// www-data) could no longer create its markers and streams there, so before the switch, while it is still root,
// it makes a folder of its own inside, owned by the user it becomes and closed to everyone else (0700), and
// writes there from then on; rlctl moves what it holds into the trace (AnyProgramRecording.finish). The folder
// is reached through a descriptor opened before the switch, so no ancestor needs to be searchable by that user,
// nor does a chdir or chroot matter; its path is the fallback for a program that closed the descriptor.
static struct {
    char path[PATH_MAX];
    int fd;
    dev_t device;
    ino_t inode;
    _Atomic int ready;   // set once path, fd, device and inode are (the writer thread reads them)
} g_switched = { .fd = -1 };

/// Where `name` is to be opened now: returns the directory descriptor for the *at calls and fills `path` with
/// what to pass them.
static int folder_for(const char *name, char *path, size_t size) {
    if (atomic_load_explicit(&g_switched.ready, memory_order_acquire)) {
        struct stat folder;
        // The program may have closed the descriptor and reused its number for something else.
        if (g_switched.fd >= 0 && fstat(g_switched.fd, &folder) == 0 && folder.st_dev == g_switched.device &&
            folder.st_ino == g_switched.inode) {
            snprintf(path, size, "%s", name);
            return g_switched.fd;
        }
        snprintf(path, size, "%s/%s", g_switched.path, name);
        return AT_FDCWD;
    }
    snprintf(path, size, "%s/%s", g_config.directory, name);
    return AT_FDCWD;
}

static int open_in_folder(const char *name, int flags) {
    char path[PATH_MAX + 128];
    int folder = folder_for(name, path, sizeof path);
    return openat(folder, path, flags | O_CLOEXEC, 0644);
}

/// Writes a marker whole: into a temporary name, then renamed, so that rlctl never reads half of one.
static int write_marker(const char *name, const char *text) {
    char temporary_name[128], temporary[PATH_MAX + 128], path[PATH_MAX + 128];
    snprintf(temporary_name, sizeof temporary_name, ".tmp-%d-%s", (int)getpid(), name + 1);
    int folder = folder_for(name, path, sizeof path);
    folder_for(temporary_name, temporary, sizeof temporary);
    int fd = openat(folder, temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    int failed = write_all(fd, text, strlen(text));
    failed |= close(fd);
    if (failed || renameat(folder, temporary, folder, path) != 0) {
        unlinkat(folder, temporary, 0);
        return -1;
    }
    return 0;
}

/// Before this process's effective uid becomes `uid`: gives it a folder it can write into (see g_switched).
static void before_switch(uid_t uid) {
    if (!g_config.directory[0] || uid == (uid_t)-1 || uid == 0 || geteuid() != 0) return;
    if (atomic_load(&g_rli.role) == RLI_OFF) return;   // records nothing now, nor when it forks
    int saved = errno;
    if (atomic_load(&g_switched.ready)) {
        // Root again, becoming yet another user (seteuid back and forth): the folder follows.
        if (fchownat(g_switched.fd, "", uid, (gid_t)-1, AT_EMPTY_PATH) != 0) chown(g_switched.path, uid, (gid_t)-1);
        errno = saved;
        return;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/.switched-%d-XXXXXX", g_config.directory, (int)getpid());
    struct stat folder;
    int fd = -1;
    if (!mkdtemp(path) || chown(path, uid, (gid_t)-1) != 0 ||
        (fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 || fstat(fd, &folder) != 0) {
        if (fd >= 0) close(fd);
        rmdir(path);
        errno = saved;
        return;
    }
    snprintf(g_switched.path, sizeof g_switched.path, "%s", path);
    g_switched.fd = fd;
    g_switched.device = folder.st_dev;
    g_switched.inode = folder.st_ino;
    // A program this process execs (it keeps the uid) records into the same folder.
    snprintf(g_assignments[SWITCHED_VARIABLE], sizeof g_assignments[SWITCHED_VARIABLE], "RLCTL_ANY_SWITCHED_DIR=%s", path);
    atomic_store_explicit(&g_switched.ready, 1, memory_order_release);
    errno = saved;
}

/// An exec'd image of a process that had switched users records into its folder.
static void adopt_switched_folder(const char *path) {
    struct stat folder;
    int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &folder) != 0) {
        if (fd >= 0) close(fd);
        return;
    }
    snprintf(g_switched.path, sizeof g_switched.path, "%s", path);
    g_switched.fd = fd;
    g_switched.device = folder.st_dev;
    g_switched.inode = folder.st_ino;
    atomic_store_explicit(&g_switched.ready, 1, memory_order_release);
}

RLI_EXPORT int setuid(uid_t uid) {
    before_switch(uid);
    return ((setuid_fn)resolved(&real_process.setuid, "setuid"))(uid);
}

RLI_EXPORT int seteuid(uid_t euid) {
    before_switch(euid);
    return ((setuid_fn)resolved(&real_process.seteuid, "seteuid"))(euid);
}

RLI_EXPORT int setreuid(uid_t ruid, uid_t euid) {
    before_switch(euid);
    return ((setreuid_fn)resolved(&real_process.setreuid, "setreuid"))(ruid, euid);
}

RLI_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid) {
    before_switch(euid);
    return ((setresuid_fn)resolved(&real_process.setresuid, "setresuid"))(ruid, euid, suid);
}

// ===== the recording =====

// This process's recording (owned by whoever moved role to RLI_BUSY: the starter or the finisher).
static struct {
    pid_t pid;                  // the process that records (a fork child holds its parent's copy until reset)
    char id[48];                // "<pid>" or "<pid>.<n>": names the markers and the streams
    pthread_t writer;
    int have_writer;
    _Atomic int stop_writer;
    uint64_t write_errors;
    _Atomic int waited;          // a thread of it has waited: its .waited marker is written
    _Atomic uint64_t children;   // fork()s and vfork()+execs during the recording (not posix_spawn's)
} g_rec;

/// Once per recording, at its first wait: the `.proc-<id>.waited` marker tells rlctl that a recording which
/// never completed (a Go program leaves by the exit_group system call, past every exit hook) lost events; one
/// without it never waited through libc, so nothing of it is missing.
static void note_first_wait(void) {
    if (atomic_exchange(&g_rec.waited, 1)) return;
    char name[96];
    snprintf(name, sizeof name, ".proc-%s.waited", g_rec.id);
    int saved = errno;
    int fd = open_in_folder(name, O_WRONLY | O_CREAT);
    if (fd >= 0) close(fd);
    errno = saved;
}

/// Moves every ready packet to its thread's stream file: opened, appended to and closed per run of packets,
/// so that no descriptor stays open between batches for the program to close or dup2 over.
static void drain(int final) {
    rlrec_packet packet;
    int fd = -1;
    int32_t open_tid = 0;
    for (;;) {
        int taken = rlrec_take(&packet);
        if (!taken && final) taken = rlrec_take_final(&packet);
        if (!taken) break;
        if (fd < 0 || packet.tid != open_tid) {
            if (fd >= 0) close(fd);
            char name[96];
            snprintf(name, sizeof name, "stream-%s-%d", g_rec.id, (int)packet.tid);
            fd = open_in_folder(name, O_WRONLY | O_APPEND | O_CREAT);
            open_tid = packet.tid;
        }
        if (fd < 0 || write_all(fd, packet.data, packet.size) != 0) {
            g_rec.write_errors++;
            if (fd >= 0) close(fd);
            fd = -1;
        }
        rlrec_release(&packet);
    }
    if (fd >= 0) close(fd);
}

static void *writer_main(void *name) {
    rli_name_own_thread(name);
    struct timespec interval = { 0, 15 * 1000000 };
    while (!atomic_load_explicit(&g_rec.stop_writer, memory_order_acquire)) {
        nanosleep(&interval, NULL);
        drain(0);
    }
    return NULL;
}

static int pick_id_and_write_start(void) {
    pid_t pid = getpid();
    char exe[PATH_MAX] = "";
    ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[length > 0 ? length : 0] = 0;
    char text[PATH_MAX + 256];
    snprintf(text, sizeof text, "pid=%d\nppid=%d\nexe=%s\ncomm=%s\n", (int)pid, (int)getppid(), exe,
             g_config.process_comm);
    // A process records again after an exec (same pid): each recording of a pid gets its own name, the first
    // free one of <pid>, <pid>.1, <pid>.2, … (claimed by creating its start marker's name exclusively).
    for (int n = 0; n < 1000; n++) {
        if (n == 0) snprintf(g_rec.id, sizeof g_rec.id, "%d", (int)pid);
        else snprintf(g_rec.id, sizeof g_rec.id, "%d.%d", (int)pid, n);
        char name[96];
        snprintf(name, sizeof name, ".proc-%s.start", g_rec.id);
        int fd = open_in_folder(name, O_WRONLY | O_CREAT | O_EXCL);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) return -1;
        close(fd);
        // In a switched folder the name may be free while its end marker is there: the recording of this pid
        // that began in the trace folder and ended here by an exec.
        char end_name[96], path[PATH_MAX + 128];
        snprintf(end_name, sizeof end_name, ".proc-%s.end", g_rec.id);
        int folder = folder_for(end_name, path, sizeof path);
        if (faccessat(folder, path, F_OK, 0) == 0) {
            folder_for(name, path, sizeof path);
            unlinkat(folder, path, 0);
            continue;
        }
        return write_marker(name, text);
    }
    return -1;
}

void rli_name_own_thread(const void *name) {
    // The system call, not prctl: our rename must not make every thread of the program announce itself again.
    syscall(SYS_prctl, PR_SET_NAME, (unsigned long)name, 0ul, 0ul, 0ul);
}

int rli_start_thread(pthread_t *thread, void *(*main)(void *), const char *name) {
    // Our threads must never take a signal meant for the program (its handlers may not expect them).
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int failed = pthread_create(thread, NULL, main, (void *)name);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return failed ? -1 : 0;
}

/// Starts this process's recording (role is RLI_BUSY, held by the caller). Returns 0, or -1 with role left to
/// the caller to set to RLI_OFF.
static int start_recording(void) {
    g_rec.pid = getpid();
    g_rec.write_errors = 0;
    g_rec.have_writer = 0;
    atomic_store(&g_rec.waited, 0);
    atomic_store(&g_rec.children, 0);
    atomic_store(&g_rli.reentered, 0);
    if (pick_id_and_write_start() != 0) return -1;
    if (!g_rli.lttng) {
        rlrec_config config = {0};
        config.sub_buffer_size = g_config.sub_buffer_size;
        config.sub_buffer_count = g_config.sub_buffer_count;
        memcpy(config.uuid, g_config.uuid, 16);
        config.switch_interval_ns = 100 * 1000000ull;
        if (rlrec_start(&config) != 0) return -1;
        atomic_store(&g_rec.stop_writer, 0);
        g_rec.have_writer = rli_start_thread(&g_rec.writer, writer_main, "rlctl-writer") == 0;
        if (!g_rec.have_writer) {
            rlrec_stop();
            drain(1);
            rlrec_reset();
            return -1;
        }
    } else if (rli_batches_start(g_config.provider) != 0) {
        return -1;
    }
    atomic_fetch_add_explicit(&g_rli.session, 1, memory_order_relaxed);
    return 0;
}

/// Completes this process's recording: stops it, writes every packet, then the end marker.
static void finish_recording(const char *reason) {
    int expected = RLI_RECORDING;
    if (g_rec.pid != getpid() || !atomic_compare_exchange_strong(&g_rli.role, &expected, RLI_BUSY)) return;
    int saved = errno;
    rlrec_stats stats = {0};
    if (!g_rli.lttng) {
        rlrec_stop();
        atomic_store_explicit(&g_rec.stop_writer, 1, memory_order_release);
        if (g_rec.have_writer) pthread_join(g_rec.writer, NULL);
        g_rec.have_writer = 0;
        drain(1);
        stats = rlrec_statistics();
        rlrec_reset();
    } else {
        stats.events_discarded = rli_batches_finish();
    }
    char text[512], name[96];
    snprintf(text, sizeof text,
             "events_recorded=%llu\nevents_discarded=%llu\nthreads=%llu\nwrite_errors=%llu\n"
             "threads_without_buffer=%llu\nchildren=%llu\nreason=%s\n",
             (unsigned long long)stats.events_recorded,
             (unsigned long long)(stats.events_discarded + atomic_load(&g_rli.reentered)),
             (unsigned long long)stats.threads, (unsigned long long)g_rec.write_errors,
             (unsigned long long)stats.threads_without_buffer, (unsigned long long)atomic_load(&g_rec.children), reason);
    snprintf(name, sizeof name, ".proc-%s.end", g_rec.id);
    write_marker(name, text);
    atomic_store_explicit(&g_rli.role, RLI_OFF, memory_order_release);
    errno = saved;
}

int rli_start_pending(void) {
    int expected = RLI_PENDING;
    if (!atomic_compare_exchange_strong(&g_rli.role, &expected, RLI_BUSY)) {
        return atomic_load_explicit(&g_rli.role, memory_order_acquire) == RLI_RECORDING;
    }
    int saved = errno;
    int started = start_recording() == 0;
    atomic_store_explicit(&g_rli.role, started ? RLI_RECORDING : RLI_OFF, memory_order_release);
    errno = saved;
    return started;
}

// ===== fork =====

static void forked_parent(void) {
    atomic_fetch_add_explicit(&g_rec.children, 1, memory_order_relaxed);
}

static void forked_child(void) {
    int role = atomic_load(&g_rli.role);
    g_rec.have_writer = 0;   // the writer thread stayed in the parent
    if (role == RLI_OFF && g_rec.pid == 0) return;   // never recorded here
    if (!g_rli.lttng) rli_recorder_forget_after_fork();
    else rli_batches_forget_after_fork();
    g_rec.pid = 0;
    atomic_store(&g_rli.role, g_config.follow ? RLI_PENDING : RLI_OFF);
}

// ===== exec =====

/// Whether envp holds `assignment`'s variable.
static int has_variable(char *const *envp, const char *assignment) {
    size_t length = strcspn(assignment, "=") + 1;
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, assignment, length) == 0) return 1;
    return 0;
}

static const char *find_variable(char *const *envp, const char *name) {
    size_t length = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, name, length) == 0 && (*e)[length] == '=') return *e + length + 1;
    return NULL;
}

/// A copy of envp with LD_PRELOAD naming the interposer and every RLCTL_ANY_* variable this process got, or
/// envp itself when nothing is missing. The copy lives in one mapping (not malloc: a vfork child shares its
/// parent's heap), freed by free_environment.
static char *const *restore_environment(char *const *envp) {
    const char *preload = find_variable(envp, "LD_PRELOAD");
    int preload_ok = preload && preload_has_interposer(preload);
    size_t missing = 0;
    for (size_t i = 0; i < VARIABLE_COUNT; i++) missing += g_assignments[i][0] && !has_variable(envp, g_assignments[i]);
    if (preload_ok && missing == 0) return envp;
    size_t count = 0, bytes = 0;
    for (char *const *e = envp; e && *e; e++, count++) bytes += strlen(*e) + 1;
    bytes += VARIABLE_COUNT * sizeof g_assignments[0] + sizeof g_config.self + 32;
    size_t pointers = (count + VARIABLE_COUNT + 2) * sizeof(char *);
    size_t total = sizeof(size_t) * 2 + pointers + bytes;
    uint8_t *block = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) return envp;
    memcpy(block, &total, sizeof total);
    char **out = (char **)(block + sizeof(size_t) * 2);
    char *text = (char *)out + pointers;
    size_t n = 0;
    for (char *const *e = envp; e && *e; e++) {
        if (strncmp(*e, "LD_PRELOAD=", 11) == 0) continue;
        out[n++] = *e;
    }
    for (size_t i = 0; i < VARIABLE_COUNT; i++) {
        if (g_assignments[i][0] && !has_variable(envp, g_assignments[i])) out[n++] = g_assignments[i];
    }
    if (preload_ok) sprintf(text, "LD_PRELOAD=%s", preload);
    else sprintf(text, "LD_PRELOAD=%s%s%s", g_config.self, preload && *preload ? ":" : "", preload ? preload : "");
    out[n++] = text;
    out[n] = NULL;
    return out;
}

static void free_environment(char *const *original, char *const *passed) {
    if (passed == original) return;
    uint8_t *block = (uint8_t *)passed - sizeof(size_t) * 2;
    size_t total;
    memcpy(&total, block, sizeof total);
    munmap(block, total);
}

char *const *rli_before_exec(char *const *envp, int *finished) {
    *finished = 0;
    // A vfork child (dash starts each command so) runs no fork handler but shares its parent's memory: its
    // exec counts the child there. A fork child's g_rec.pid is 0.
    if (g_rec.pid != 0 && getpid() != g_rec.pid) atomic_fetch_add_explicit(&g_rec.children, 1, memory_order_relaxed);
    int role = atomic_load(&g_rli.role);
    if (role == RLI_RECORDING && g_rec.pid == getpid()) {
        finish_recording("exec");
        *finished = 1;
    }
    // The exec'd image keeps this pid: it records when this process would, so it gets the variables back.
    if (g_config.directory[0] && (g_config.follow || getpid() == g_config.root)) return restore_environment(envp);
    return envp;
}

void rli_after_failed_exec(char *const *original, char *const *passed, int finished) {
    int saved = errno;
    free_environment(original, passed);
    int expected = RLI_OFF;
    if (finished && atomic_compare_exchange_strong(&g_rli.role, &expected, RLI_BUSY)) {
        // Nothing is lost: later waits go into a new recording (new streams and markers).
        atomic_store(&g_rli.role, start_recording() == 0 ? RLI_RECORDING : RLI_OFF);
    }
    errno = saved;
}

void rli_before_exit(void) {
    finish_recording("exit");
}

// ===== load and unload =====

/// Reads the recording's settings (the constructor's, while the environment holds them); 0 when it cannot record.
static int configure(void) {
    if (parse_uuid(variable("RLCTL_ANY_UUID"), g_config.uuid) != 0) return 0;
    g_config.sub_buffer_size = number_or("RLCTL_ANY_SUB_BUFFER_SIZE", 256 * 1024);
    g_config.sub_buffer_count = number_or("RLCTL_ANY_SUB_BUFFER_COUNT", 16);
    g_config.kernel_waits = number_or("RLCTL_ANY_KERNEL_WAITS", 0);
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, g_config.process_comm, sizeof g_config.process_comm - 1);
        close(fd);
        g_config.process_comm[n > 0 ? n : 0] = 0;
        g_config.process_comm[strcspn(g_config.process_comm, "\n")] = 0;
    }
    const char *tracer = variable("RLCTL_ANY_TRACER");
    if (tracer && strcmp(tracer, "lttng") == 0) {
        g_config.provider = open_provider(variable("RLCTL_ANY_LTTNG_PROVIDER"));
        if (!g_config.provider) return 0;
        g_rli.lttng = 1;
    }
    return 1;
}

/// Takes the interposer and its variables out of this process's environment, so its children do not get them.
static void leave_recording_environment(void) {
    leave_preload();
    for (size_t i = 0; i < VARIABLE_COUNT; i++) unsetenv(k_variables[i]);
}

__attribute__((constructor)) static void interposer_loaded(void) {
    rli_resolve_waits();
    resolve_process_calls();
    const char *directory = variable("RLCTL_ANY_TRACE_DIR");
    if (!directory) return;   // loaded outside `rlctl record --any`: only the real calls
    Dl_info info;
    if (dladdr((void *)interposer_loaded, &info) && info.dli_fname)
        snprintf(g_config.self, sizeof g_config.self, "%s", info.dli_fname);
    // The first process to load the interposer is the recorded program itself.
    if (!variable("RLCTL_ANY_ROOT_PID")) {
        char pid[16];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        setenv("RLCTL_ANY_ROOT_PID", pid, 1);
    }
    g_config.root = (pid_t)atoi(getenv("RLCTL_ANY_ROOT_PID"));
    const char *follow = variable("RLCTL_ANY_FOLLOW");
    g_config.follow = follow && strcmp(follow, "1") == 0;
    remember_assignments();
    if (!g_config.follow && getpid() != g_config.root) {
        leave_recording_environment();
        return;
    }
    snprintf(g_config.directory, sizeof g_config.directory, "%s", directory);
    const char *switched = variable("RLCTL_ANY_SWITCHED_DIR");
    if (switched) adopt_switched_folder(switched);
    int configured = configure();
    // Not following, the programs this one starts must not see the interposer or its variables (an exec of its
    // own gets them back from g_assignments, rli_before_exec). Here, in the constructor, because unsetenv is not
    // safe against a getenv on another thread, and no thread of the program exists yet.
    if (!g_config.follow) leave_recording_environment();
    if (!configured) return;
    pthread_atfork(NULL, forked_parent, forked_child);
    atomic_store(&g_rli.role, RLI_BUSY);
    atomic_store(&g_rli.role, start_recording() == 0 ? RLI_RECORDING : RLI_OFF);
}

__attribute__((destructor)) static void interposer_unloaded(void) {
    finish_recording("exit");
}

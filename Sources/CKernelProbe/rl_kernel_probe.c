// The kernel probe's loader (rl_kernel_probe.h).
//
// How the pieces fit, and why:
// - The BPF object (bpf/runloop_kernel_probe.bpf.c) is compiled by the KernelProbeBuilder plugin with the
//   toolchain's clang (-target bpf) into `runloop-kernel-probe.bpf`, which SwiftPM copies into this target's
//   resource folder, `<package>_CKernelProbe.resources`, next to every executable and test bundle; this file
//   finds it there (or next to the executable, as an installed rlctl would ship it, or at $RLCTL_KERNEL_PROBE).
// - libbpf is optional twice. At build time: Package.swift defines RLCTL_HAVE_LIBBPF (and applies the plugin)
//   only when it finds libbpf-dev, and RLCTL_DISABLE_LIBBPF=1 forces it out; without it every function here
//   says "built without libbpf". At run time: nothing links libbpf. Its header gives the declarations, and the
//   few functions used are looked up in libbpf.so.1 with dlopen the first time the kernel view is asked for, so a
//   machine without libbpf still runs rlctl, and the kernel view says why it cannot (rather than the dynamic
//   linker refusing to start rlctl). This is simpler than the LTTng provider's second shared library: nothing
//   of ours needs to live in a library of its own, only libbpf has to be reached lazily.
// - Nothing is pinned: the programs, links and maps are owned by this process's descriptors, so they go away
//   when rl_kp_close closes them or when the process dies, SIGKILL included.
#include "rl_kernel_probe.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

// In the build without libbpf every function is a one-liner that says so; parameters are then unused.
#pragma clang diagnostic ignored "-Wunused-parameter"

static char rl_kp_path[4096];

const char *rl_kp_object_path(void) { return rl_kp_path; }

int32_t rl_kp_thread_id(void) { return (int32_t)syscall(SYS_gettid); }

#ifndef RLCTL_HAVE_LIBBPF

// (SwiftPM keeps both the manifest's evaluation and the build plan made without libbpf: a plain rebuild after
// installing it still leaves the probe out, as seen here. A fresh build folder does not.)
static const char rl_kp_not_built[] =
    "rlctl was built without libbpf: install libbpf-dev (scripts/install-deps.sh) and rebuild from a fresh build folder (rm -rf .build)";

int rl_kp_built(void) { return 0; }

int rl_kp_unavailable(int waits, char *why, size_t size) {
    snprintf(why, size, "%s", rl_kp_not_built);
    return -1;
}

rl_kp *rl_kp_open(uint32_t ring_bytes, int follow_children, int reads_preempt_count, int waits, uint32_t claim_token, char *why, size_t size) {
    snprintf(why, size, "%s", rl_kp_not_built);
    return NULL;
}

int rl_kp_follow(rl_kp *probe, int32_t tgid) { return -38; }
int rl_kp_skip(rl_kp *probe, int32_t tid) { return -38; }
int rl_kp_seed(rl_kp *probe, int32_t tid, uint64_t left_ns, uint8_t reason, int32_t syscall, uint64_t ran_ns,
               uint64_t arrivals, uint64_t queued_ns) { return -38; }
int rl_kp_consume(rl_kp *probe, rl_kp_record_fn fn, rl_kp_wait_fn wait_fn, void *context) { return -38; }

void rl_kp_take_losses(rl_kp *probe, uint64_t *dropped, uint64_t *untracked, uint64_t *rebuilt, uint64_t *misreads,
                       uint64_t *waits_dropped, uint64_t *first_ns) {
    *waits_dropped = 0;
    *dropped = 0;
    *untracked = 0;
    *rebuilt = 0;
    *misreads = 0;
    *first_ns = 0;
}

void rl_kp_detach(rl_kp *probe) {}
void rl_kp_close(rl_kp *probe) {}

#else

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define RL_KP_OBJECT_FILE "runloop-kernel-probe.bpf"

int rl_kp_built(void) { return 1; }

// ===== libbpf, looked up at run time =====

#define RL_KP_LIBBPF_FUNCTIONS(X) \
    X(bpf_object__open_mem) X(bpf_object__load) X(bpf_object__close) X(bpf_object__find_map_by_name) \
    X(bpf_object__next_program) X(bpf_program__attach) X(bpf_program__name) X(bpf_program__section_name) \
    X(bpf_program__set_autoload) \
    X(bpf_link__destroy) X(bpf_map__fd) X(bpf_map__set_max_entries) X(bpf_map_update_elem) \
    X(bpf_map_lookup_elem) X(ring_buffer__new) X(ring_buffer__consume) X(ring_buffer__free) \
    X(libbpf_set_print) X(libbpf_num_possible_cpus) X(btf__load_vmlinux_btf) X(btf__find_by_name_kind) \
    X(btf__free) X(btf__type_by_id) X(btf__name_by_offset)

static struct {
#define X(name) __typeof__(&name) name;
    RL_KP_LIBBPF_FUNCTIONS(X)
#undef X
} lib;

static pthread_once_t rl_kp_lib_once = PTHREAD_ONCE_INIT;
static char rl_kp_lib_error[512];

static void rl_kp_load_libbpf(void) {
    void *handle = dlopen("libbpf.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *error = dlerror();
        snprintf(rl_kp_lib_error, sizeof rl_kp_lib_error,
                 "libbpf is not installed (%s): install libbpf1 (apt-get install libbpf1)", error ? error : "libbpf.so.1");
        return;
    }
#define X(name)                                                                                            \
    lib.name = (__typeof__(&name))dlsym(handle, #name);                                                   \
    if (!lib.name) {                                                                                       \
        snprintf(rl_kp_lib_error, sizeof rl_kp_lib_error,                                                  \
                 "the installed libbpf.so.1 has no %s: install libbpf 1.1 or later", #name);               \
        return;                                                                                            \
    }
    RL_KP_LIBBPF_FUNCTIONS(X)
#undef X
}

static int rl_kp_have_libbpf(char *why, size_t size) {
    pthread_once(&rl_kp_lib_once, rl_kp_load_libbpf);
    if (rl_kp_lib_error[0]) {
        snprintf(why, size, "%s", rl_kp_lib_error);
        return 0;
    }
    return 1;
}

// ===== libbpf's messages: kept while loading, to say why the verifier refused =====

static pthread_mutex_t rl_kp_load_lock = PTHREAD_MUTEX_INITIALIZER;
static char rl_kp_log[65536];
static size_t rl_kp_log_used;

static int rl_kp_print(enum libbpf_print_level level, const char *format, va_list arguments) {
    if (level == LIBBPF_DEBUG || rl_kp_log_used >= sizeof rl_kp_log - 1) return 0;
    int written = vsnprintf(rl_kp_log + rl_kp_log_used, sizeof rl_kp_log - rl_kp_log_used, format, arguments);
    if (written > 0) rl_kp_log_used += (size_t)written < sizeof rl_kp_log - rl_kp_log_used ? (size_t)written : sizeof rl_kp_log - 1 - rl_kp_log_used;
    return 0;
}

/// The verifier's reason from libbpf's log: the last line of the program's load log that is not a statistic
/// (the verifier prints the instruction trace first and the error last), with the program's name.
static int rl_kp_verifier_reason(char *why, size_t size) {
    const char *begin = strstr(rl_kp_log, "-- BEGIN PROG LOAD LOG --");
    if (!begin) return 0;
    const char *end = strstr(begin, "-- END PROG LOAD LOG --");
    if (!end) end = rl_kp_log + rl_kp_log_used;
    char program[128] = "";
    const char *name = strstr(rl_kp_log, "prog '");
    if (name && name < begin) {
        const char *close = strchr(name + 6, '\'');
        if (close) snprintf(program, sizeof program, "%.*s", (int)(close - name - 6), name + 6);
    }
    const char *best = NULL;
    int best_length = 0;
    for (const char *line = strchr(begin, '\n'); line && line < end; line = strchr(line, '\n')) {
        line++;
        const char *next = strchr(line, '\n');
        int length = (int)((next && next < end ? next : end) - line);
        if (length <= 0) continue;
        if (!strncmp(line, "processed ", 10) || !strncmp(line, "verification time", 17) ||
            !strncmp(line, "stack depth", 11) || !strncmp(line, "-- END", 6))
            continue;
        best = line;
        best_length = length;
    }
    if (!best) return 0;
    snprintf(why, size, "the kernel's verifier rejected the probe (program %s): %.*s", program, best_length, best);
    return 1;
}

// ===== the BPF object =====

static void *rl_kp_read(const char *path, size_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat status;
    void *bytes = NULL;
    if (fstat(fd, &status) == 0 && status.st_size > 0 && (bytes = malloc((size_t)status.st_size))) {
        if (read(fd, bytes, (size_t)status.st_size) != status.st_size) {
            free(bytes);
            bytes = NULL;
        } else {
            *size = (size_t)status.st_size;
        }
    }
    close(fd);
    return bytes;
}

/// The BPF object's bytes: $RLCTL_KERNEL_PROBE, else next to the executable, else in a
/// `*_CKernelProbe.resources` folder there (the package part is the manifest's name, which differs when this
/// package is a dependency: hence the scan).
static void *rl_kp_find_object(size_t *size, char *why, size_t why_size) {
    const char *override = getenv("RLCTL_KERNEL_PROBE");
    if (override && *override) {
        snprintf(rl_kp_path, sizeof rl_kp_path, "%s", override);
        void *bytes = rl_kp_read(override, size);
        if (!bytes) snprintf(why, why_size, "RLCTL_KERNEL_PROBE=%s: %s", override, strerror(errno));
        return bytes;
    }
    char folder[2048];
    ssize_t length = readlink("/proc/self/exe", folder, sizeof folder - 1);
    char *slash = length > 0 ? (folder[length] = 0, strrchr(folder, '/')) : NULL;
    if (!slash) {
        snprintf(why, why_size, "cannot read /proc/self/exe to find %s", RL_KP_OBJECT_FILE);
        return NULL;
    }
    *slash = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, RL_KP_OBJECT_FILE);
    void *bytes = rl_kp_read(path, size);
    DIR *directory = bytes ? NULL : opendir(folder);
    static const char suffix[] = "_CKernelProbe.resources";
    for (struct dirent *entry; directory && !bytes && (entry = readdir(directory));) {
        size_t name_length = strlen(entry->d_name);
        if (name_length <= sizeof suffix - 1 || strcmp(entry->d_name + name_length - (sizeof suffix - 1), suffix) != 0) continue;
        snprintf(path, sizeof path, "%s/%s/%s", folder, entry->d_name, RL_KP_OBJECT_FILE);
        bytes = rl_kp_read(path, size);
    }
    if (directory) closedir(directory);
    if (bytes) snprintf(rl_kp_path, sizeof rl_kp_path, "%s", path);
    else snprintf(why, why_size,
                  "%s is neither in %s nor in a *_CKernelProbe.resources folder there: build it with `swift build`, "
                  "or set RLCTL_KERNEL_PROBE to its path", RL_KP_OBJECT_FILE, folder);
    return bytes;
}

// ===== checks that name what is missing =====

/// Root, or CAP_BPF and CAP_PERFMON (CAP_SYS_ADMIN also allows both), from the effective set.
static int rl_kp_privileged(char *why, size_t size) {
    FILE *status = fopen("/proc/self/status", "re");
    unsigned long long effective = 0;
    char line[256];
    int found = 0;
    while (status && fgets(line, sizeof line, status))
        if (sscanf(line, "CapEff: %llx", &effective) == 1) found = 1;
    if (status) fclose(status);
    if (!found) effective = geteuid() == 0 ? ~0ULL : 0;
    const unsigned long long sys_admin = 1ULL << 21, perfmon = 1ULL << 38, bpf = 1ULL << 39;
    if ((effective & sys_admin) || ((effective & bpf) && (effective & perfmon))) return 1;
    snprintf(why, size, "the kernel view needs root, or the CAP_BPF and CAP_PERFMON capabilities: run rlctl as root "
             "(sudo), or give it those capabilities");
    return 0;
}

/// The tracepoints the probe attaches to, each as the kernel's BTF names it (btf_trace_<name>), with its group.
static const char *const rl_kp_tracepoints[][2] = {
    {"sched", "sched_switch"}, {"sched", "sched_waking"}, {"sched", "sched_wakeup"},
    {"sched", "sched_migrate_task"}, {"sched", "sched_process_fork"}, {"sched", "sched_process_exit"},
    {"timer", "hrtimer_start"}, {"timer", "hrtimer_expire_entry"}, {"timer", "hrtimer_expire_exit"},
    {"timer", "hrtimer_cancel"}, {"irq", "irq_handler_entry"}, {"irq", "irq_handler_exit"},
    {"irq", "softirq_entry"}, {"irq", "softirq_exit"},
    // Only with waits (record --pid, record --any's kernel part): the last three.
    {"sched", "sched_process_exec"}, {"raw_syscalls", "sys_enter"}, {"raw_syscalls", "sys_exit"},
};
enum { RL_KP_WAIT_TRACEPOINTS = 3 };

/// Where this CPU's preempt count is, from its run queue: both are per-CPU variables of the kernel's
/// `.data..percpu` section, so their addresses on any CPU differ by the difference of their offsets there, which
/// the kernel's BTF gives. Found only where the preempt count is a per-CPU variable (x86-64); elsewhere the irq and
/// softirq programs keep the interrupt depth instead.
static void rl_kp_preempt_count_offset(const struct btf *btf, struct rl_kp_control *control) {
    int section = lib.btf__find_by_name_kind(btf, ".data..percpu", BTF_KIND_DATASEC);
    const struct btf_type *type = section > 0 ? lib.btf__type_by_id(btf, (__u32)section) : NULL;
    long long run_queues = -1, preempt_count = -1;
    const struct btf_var_secinfo *variable = type ? btf_var_secinfos(type) : NULL;
    for (int i = 0; type && i < btf_vlen(type); i++, variable++) {
        const struct btf_type *var = lib.btf__type_by_id(btf, variable->type);
        const char *name = var ? lib.btf__name_by_offset(btf, var->name_off) : NULL;
        if (!name) continue;
        if (!strcmp(name, "runqueues")) run_queues = variable->offset;
        else if (!strcmp(name, "__preempt_count") && variable->size == 4) preempt_count = variable->offset;
    }
    // The program reaches the run queue through the current task's group run queue (cfs_rq->rq).
    int has_rq = 0;
    int group = lib.btf__find_by_name_kind(btf, "cfs_rq", BTF_KIND_STRUCT);
    const struct btf_type *group_type = group > 0 ? lib.btf__type_by_id(btf, (__u32)group) : NULL;
    const struct btf_member *member = group_type ? btf_members(group_type) : NULL;
    for (int i = 0; group_type && i < btf_vlen(group_type); i++, member++) {
        const char *name = lib.btf__name_by_offset(btf, member->name_off);
        if (name && !strcmp(name, "rq")) has_rq = 1;
    }
    if (run_queues < 0 || preempt_count < 0 || !has_rq) return;
    control->reads_preempt_count = 1;
    control->preempt_count_from_rq = preempt_count - run_queues;
}

/// Whether the kernel has the BTF and tracepoints the probe needs; while its BTF is loaded (once: it is megabytes),
/// also where the preempt count is, into `percpu` (left alone where it cannot be placed).
static int rl_kp_kernel_has_what_it_needs(char *why, size_t size, struct rl_kp_control *percpu, int waits) {
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
        snprintf(why, size, "the kernel has no BTF (/sys/kernel/btf/vmlinux: %s): the kernel view needs a kernel built "
                 "with CONFIG_DEBUG_INFO_BTF", strerror(errno));
        return 0;
    }
    struct btf *btf = lib.btf__load_vmlinux_btf();
    if (!btf) {
        snprintf(why, size, "cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): %s", strerror(errno));
        return 0;
    }
    int ok = 1;
    size_t needed = sizeof rl_kp_tracepoints / sizeof rl_kp_tracepoints[0] - (waits ? 0 : RL_KP_WAIT_TRACEPOINTS);
    for (size_t i = 0; ok && i < needed; i++) {
        char name[128];
        snprintf(name, sizeof name, "btf_trace_%s", rl_kp_tracepoints[i][1]);
        if (lib.btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) < 0) {
            snprintf(why, size, "the kernel has no tracepoint %s:%s, which the kernel view needs",
                     rl_kp_tracepoints[i][0], rl_kp_tracepoints[i][1]);
            ok = 0;
        }
    }
    if (ok) rl_kp_preempt_count_offset(btf, percpu);
    lib.btf__free(btf);
    return ok;
}

// ===== the probe =====

struct rl_kp {
    struct bpf_object *object;
    struct bpf_link *links[32];
    int link_count;
    struct ring_buffer *ring;
    int follow_fd, skip_fd, control_fd, lost_fd, episodes_fd;
    int cpus;
    struct rl_kp_losses *per_cpu;       // a lookup's buffer
    struct rl_kp_losses *reported;      // per CPU: the counters as last reported (they only grow)
    rl_kp_record_fn fn;
    rl_kp_wait_fn wait_fn;
    void *context;
};

static int rl_kp_on_record(void *context, void *data, size_t size) {
    rl_kp *probe = context;
    uint32_t kind = size >= sizeof kind ? *(const uint32_t *)data : 0;
    if (kind == RL_KP_WAIT) {
        if (size >= sizeof(struct rl_kp_wait) && probe->wait_fn) probe->wait_fn(probe->context, data);
    } else if (size >= sizeof(struct rl_kp_record) && probe->fn) {
        probe->fn(probe->context, data);
    }
    return 0;
}

/// The wait calls' programs (rlctl_kp_w_*): loaded and attached only when waits are asked for.
static int rl_kp_follows_waits(const char *name) { return name && !strncmp(name, "rlctl_kp_w_", 11); }

/// The kernel addresses of the two hrtimer callbacks that wake a thread, from /proc/kallsyms (0 when hidden).
static void rl_kp_timer_functions(struct rl_kp_control *control) {
    FILE *symbols = fopen("/proc/kallsyms", "re");
    char line[512];
    while (symbols && fgets(line, sizeof line, symbols)) {
        unsigned long long address;
        char type, name[256];
        if (sscanf(line, "%llx %c %255s", &address, &type, name) != 3) continue;
        if (!strcmp(name, "hrtimer_wakeup")) control->hrtimer_wakeup = address;
        else if (!strcmp(name, "timerfd_tmrproc")) control->timerfd_tmrproc = address;
    }
    if (symbols) fclose(symbols);
}

/// The programs that end an interrupt in the depth count (a context switch sets it back to zero).
static int rl_kp_ends_interrupt(const char *name) {
    return name && (!strcmp(name, "rlctl_kp_irq_out") || !strcmp(name, "rlctl_kp_sirq_out") ||
                    !strcmp(name, "rlctl_kp_tdone") || !strcmp(name, "rlctl_kp_irq_reset"));
}

/// The programs that only keep the interrupt depth: not attached where the preempt count says it.
static int rl_kp_counts_interrupts(const char *name) {
    return name && (rl_kp_ends_interrupt(name) || !strcmp(name, "rlctl_kp_irq_in") || !strcmp(name, "rlctl_kp_sirq_in"));
}

static int rl_kp_map_fd(rl_kp *probe, const char *name) {
    struct bpf_map *map = lib.bpf_object__find_map_by_name(probe->object, name);
    return map ? lib.bpf_map__fd(map) : -1;
}

static void rl_kp_why_errno(char *why, size_t size, const char *what, int error) {
    if (error == EPERM || error == EACCES)
        snprintf(why, size, "%s: %s (BPF is not permitted: kernel lockdown, a seccomp filter, or "
                 "kernel.unprivileged_bpf_disabled for a process without CAP_BPF)", what, strerror(error));
    else if (error == ENOSYS)
        snprintf(why, size, "%s: BPF is disabled in this kernel (built without CONFIG_BPF_SYSCALL)", what);
    else
        snprintf(why, size, "%s: %s", what, strerror(error));
}

static rl_kp *rl_kp_open_locked(uint32_t ring_bytes, int follow_children, int reads_preempt_count, int waits, uint32_t claim_token,
                                 char *why, size_t size) {
    struct rl_kp_control percpu = { 0 };
    if (!rl_kp_have_libbpf(why, size) || !rl_kp_privileged(why, size) || !rl_kp_kernel_has_what_it_needs(why, size, &percpu, waits))
        return NULL;
    size_t object_size = 0;
    void *bytes = rl_kp_find_object(&object_size, why, size);
    if (!bytes) return NULL;
    rl_kp *probe = calloc(1, sizeof *probe);
    if (!probe) {
        free(bytes);
        snprintf(why, size, "out of memory");
        return NULL;
    }
    rl_kp_log_used = 0;
    rl_kp_log[0] = 0;
    libbpf_print_fn_t previous = lib.libbpf_set_print(rl_kp_print);
    LIBBPF_OPTS(bpf_object_open_opts, options, .object_name = "rlctl_kernel_probe");
    probe->object = lib.bpf_object__open_mem(bytes, object_size, &options);
    int error = probe->object ? 0 : errno;
    free(bytes);   // libbpf keeps its own copy
    if (!probe->object) {
        lib.libbpf_set_print(previous);
        snprintf(why, size, "cannot open the kernel probe %s: %s", rl_kp_path, strerror(error));
        free(probe);
        return NULL;
    }
    for (struct bpf_program *program = lib.bpf_object__next_program(probe->object, NULL); program;
         program = lib.bpf_object__next_program(probe->object, program))
        if (!waits && rl_kp_follows_waits(lib.bpf_program__name(program))) lib.bpf_program__set_autoload(program, 0);
    probe->cpus = lib.libbpf_num_possible_cpus();
    struct bpf_map *cpus = lib.bpf_object__find_map_by_name(probe->object, "rlctl_kp_cpus");
    struct bpf_map *ring = lib.bpf_object__find_map_by_name(probe->object, "rlctl_kp_ring");
    if (probe->cpus <= 0 || !cpus || !ring || lib.bpf_map__set_max_entries(cpus, (uint32_t)probe->cpus) != 0 ||
        lib.bpf_map__set_max_entries(ring, ring_bytes) != 0) {
        lib.libbpf_set_print(previous);
        snprintf(why, size, "the kernel probe %s does not match this build (maps), or the ring size %u is not a power "
                 "of two of at least a page", rl_kp_path, ring_bytes);
        rl_kp_close(probe);
        return NULL;
    }
    if (lib.bpf_object__load(probe->object) != 0) {
        error = errno;
        lib.libbpf_set_print(previous);
        if (!rl_kp_verifier_reason(why, size)) rl_kp_why_errno(why, size, "cannot load the kernel probe", error);
        rl_kp_close(probe);
        return NULL;
    }
    probe->follow_fd = rl_kp_map_fd(probe, "rlctl_kp_follow");
    probe->skip_fd = rl_kp_map_fd(probe, "rlctl_kp_skip");
    probe->control_fd = rl_kp_map_fd(probe, "rlctl_kp_ctl");
    probe->lost_fd = rl_kp_map_fd(probe, "rlctl_kp_lost");
    probe->episodes_fd = rl_kp_map_fd(probe, "rlctl_kp_eps");
    struct rl_kp_control control = { .follow_children = follow_children ? 1 : 0, .records_waits = waits ? 1 : 0 };
    control.claim_token = waits ? claim_token : 0;
    rl_kp_timer_functions(&control);
    if (reads_preempt_count) {
        control.reads_preempt_count = percpu.reads_preempt_count;
        control.preempt_count_from_rq = percpu.preempt_count_from_rq;
    }
    uint32_t zero = 0;
    probe->per_cpu = calloc((size_t)probe->cpus, sizeof *probe->per_cpu);
    probe->reported = calloc((size_t)probe->cpus, sizeof *probe->reported);
    if (probe->follow_fd < 0 || probe->skip_fd < 0 || probe->control_fd < 0 || probe->lost_fd < 0 || probe->episodes_fd < 0 ||
        !probe->per_cpu || !probe->reported || lib.bpf_map_update_elem(probe->control_fd, &zero, &control, BPF_ANY) != 0) {
        lib.libbpf_set_print(previous);
        snprintf(why, size, "cannot set up the kernel probe's maps: %s", strerror(errno));
        rl_kp_close(probe);
        return NULL;
    }
    // Two passes: the programs that end an interrupt first. An interrupt that entered between the attaching of an
    // entry program and its exit's would leave the CPU's depth one too high for good (every waker on that CPU then
    // read as an interrupt); an exit without its entry is clamped at zero.
    for (int pass = 0; pass < 2; pass++)
    for (struct bpf_program *program = lib.bpf_object__next_program(probe->object, NULL); program;
         program = lib.bpf_object__next_program(probe->object, program)) {
        const char *name = lib.bpf_program__name(program);
        if (rl_kp_ends_interrupt(name) != (pass == 0)) continue;
        // Attached or not, each was loaded: a kernel the offsets do not fit still loads them all.
        if (control.reads_preempt_count && rl_kp_counts_interrupts(name)) continue;
        if (!waits && rl_kp_follows_waits(name)) continue;
        int room = probe->link_count < (int)(sizeof probe->links / sizeof probe->links[0]);
        struct bpf_link *link = room ? lib.bpf_program__attach(program) : NULL;
        if (!link) {
            error = errno;
            lib.libbpf_set_print(previous);
            char what[256];
            const char *section = lib.bpf_program__section_name(program);
            const char *slash = section ? strchr(section, '/') : NULL;
            snprintf(what, sizeof what, "cannot attach the kernel probe to tracepoint %s", slash ? slash + 1 : "?");
            rl_kp_why_errno(why, size, what, error);
            rl_kp_close(probe);
            return NULL;
        }
        probe->links[probe->link_count++] = link;
    }
    lib.libbpf_set_print(previous);
    probe->ring = lib.ring_buffer__new(lib.bpf_map__fd(ring), rl_kp_on_record, probe, NULL);
    if (!probe->ring) {
        snprintf(why, size, "cannot map the kernel probe's ring buffer: %s", strerror(errno));
        rl_kp_close(probe);
        return NULL;
    }
    return probe;
}

rl_kp *rl_kp_open(uint32_t ring_bytes, int follow_children, int reads_preempt_count, int waits, uint32_t claim_token, char *why, size_t size) {
    why[0] = 0;
    // libbpf's print function is process-wide: one load at a time keeps each load's log its own.
    pthread_mutex_lock(&rl_kp_load_lock);
    rl_kp *probe = rl_kp_open_locked(ring_bytes, follow_children, reads_preempt_count, waits, claim_token, why, size);
    pthread_mutex_unlock(&rl_kp_load_lock);
    return probe;
}

int rl_kp_unavailable(int waits, char *why, size_t size) {
    rl_kp *probe = rl_kp_open(64 * 1024, 0, 1, waits, 0, why, size);
    if (!probe) return -1;
    rl_kp_close(probe);
    why[0] = 0;
    return 0;
}

int rl_kp_follow(rl_kp *probe, int32_t tgid) {
    uint32_t key = (uint32_t)tgid;
    uint8_t one = 1;
    return lib.bpf_map_update_elem(probe->follow_fd, &key, &one, BPF_ANY) == 0 ? 0 : -errno;
}

int rl_kp_seed(rl_kp *probe, int32_t tid, uint64_t left_ns, uint8_t reason, int32_t system_call, uint64_t ran_ns,
               uint64_t arrivals, uint64_t queued_ns) {
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
    // A task storage map is keyed by a pidfd from user space; a thread's own needs PIDFD_THREAD (Linux 6.9).
    int pidfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
    if (pidfd < 0) return errno == EINVAL ? -ENOSYS : -errno;
    struct rl_kp_episode episode = {
        .left_ns = left_ns, .ran_ns = ran_ns, .arrivals = arrivals, .queued_ns = queued_ns, .syscall = system_call,
        .wait_cpu = -1, .open = 1, .reason = reason,
    };
    // BPF_NOEXIST: a thread that left its CPU since the attach has a real one already.
    int result = lib.bpf_map_update_elem(probe->episodes_fd, &pidfd, &episode, BPF_NOEXIST) == 0 ? 0 : -errno;
    close(pidfd);
    return result;
}

int rl_kp_skip(rl_kp *probe, int32_t tid) {
    uint32_t key = (uint32_t)tid;
    uint8_t one = 1;
    return lib.bpf_map_update_elem(probe->skip_fd, &key, &one, BPF_ANY) == 0 ? 0 : -errno;
}

int rl_kp_consume(rl_kp *probe, rl_kp_record_fn fn, rl_kp_wait_fn wait_fn, void *context) {
    probe->fn = fn;
    probe->wait_fn = wait_fn;
    probe->context = context;
    int count = lib.ring_buffer__consume(probe->ring);
    probe->fn = NULL;
    probe->wait_fn = NULL;
    probe->context = NULL;
    return count;
}

void rl_kp_take_losses(rl_kp *probe, uint64_t *dropped, uint64_t *untracked, uint64_t *rebuilt, uint64_t *misreads,
                       uint64_t *waits_dropped, uint64_t *first_ns) {
    *dropped = 0;
    *untracked = 0;
    *rebuilt = 0;
    *misreads = 0;
    *waits_dropped = 0;
    *first_ns = 0;
    uint32_t zero = 0;
    if (lib.bpf_map_lookup_elem(probe->lost_fd, &zero, probe->per_cpu) != 0) return;
    for (int cpu = 0; cpu < probe->cpus; cpu++) {
        struct rl_kp_losses *losses = &probe->per_cpu[cpu];
        struct rl_kp_losses *reported = &probe->reported[cpu];
        *waits_dropped += losses->waits_dropped - reported->waits_dropped;
        *rebuilt += losses->rebuilt - reported->rebuilt;
        *misreads += losses->misreads - reported->misreads;
        int lost_more = losses->dropped != reported->dropped || losses->untracked != reported->untracked;
        *dropped += losses->dropped - reported->dropped;
        *untracked += losses->untracked - reported->untracked;
        if (lost_more && losses->first_ns && (*first_ns == 0 || losses->first_ns < *first_ns)) *first_ns = losses->first_ns;
        *reported = *losses;
    }
    if (*dropped + *untracked == 0) return;
    // A new epoch: each CPU's next loss notes its own time again.
    struct rl_kp_control control;
    if (lib.bpf_map_lookup_elem(probe->control_fd, &zero, &control) == 0) {
        control.epoch++;
        lib.bpf_map_update_elem(probe->control_fd, &zero, &control, BPF_ANY);
    }
}

void rl_kp_detach(rl_kp *probe) {
    if (!probe) return;
    for (int i = 0; i < probe->link_count; i++) lib.bpf_link__destroy(probe->links[i]);
    probe->link_count = 0;
}

void rl_kp_close(rl_kp *probe) {
    if (!probe) return;
    if (probe->ring) lib.ring_buffer__free(probe->ring);
    for (int i = 0; i < probe->link_count; i++) lib.bpf_link__destroy(probe->links[i]);
    if (probe->object) lib.bpf_object__close(probe->object);
    free(probe->per_cpu);
    free(probe->reported);
    free(probe);
}

#endif

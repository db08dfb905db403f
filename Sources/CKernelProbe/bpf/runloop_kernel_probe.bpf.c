// The kernel probe of rlctl's kernel view (KernelTracing): BPF programs on the scheduler and hrtimer tracepoints
// that follow the threads of chosen processes and send, for every time such a thread was off its CPU, one record
// (rl_kernel_probe_record.h): why it left, the system call it blocked in, who woke it and from which timer, and
// which tasks held the CPU while it waited there. Built by the KernelProbeBuilder plugin with the toolchain's
// clang (-target bpf); CO-RE: the few kernel fields read are declared below with preserve_access_index, and
// libbpf relocates them against the running kernel's BTF (no vmlinux.h is generated at build time).
//
// Only BTF tracepoints (tp_btf) are used: this kind of machine has no kprobes and refuses fentry. sched_switch
// runs on every context switch of the machine, so its path for threads nobody follows is kept short: one array
// lookup (the CPU's waiters, usually none), one hash lookup (is prev's process followed?) and one task-storage
// lookup (does next have an open episode? a pointer test for tasks that never had one).
//
// Locking: a CPU's waiter slots are written by sched_switch on that CPU, and by sched_wakeup and
// sched_migrate_task for a task queued there; the kernel holds that CPU's run-queue lock around all three, so
// the slots need no lock of their own. A thread's episode (task storage) is written under its run-queue lock too.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "rl_kernel_probe_record.h"

typedef __u8 u8;
typedef __u32 u32;
typedef __s32 s32;
typedef __s64 s64;
typedef __u64 u64;
typedef _Bool bool;

// ===== the kernel's types, as far as they are read (CO-RE: offsets come from the running kernel's BTF) =====

struct rq;

struct cfs_rq {
    int throttle_count;
    struct rq *rq;   // CONFIG_FAIR_GROUP_SCHED: the CPU's run queue (user space checks it exists before relying on it)
} __attribute__((preserve_access_index));

struct sched_entity {
    struct cfs_rq *cfs_rq;
    u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

/// The scheduler's own accounting of a task's arrivals on a CPU (CONFIG_SCHED_INFO): how many, and the time it
/// spent queued before them.
struct sched_info {
    unsigned long pcount;
    unsigned long long run_delay;
} __attribute__((preserve_access_index));

struct thread_info {
    u32 cpu;
} __attribute__((preserve_access_index));

struct task_struct {
    struct thread_info thread_info;
    unsigned int __state;
    unsigned int flags;
    struct sched_entity se;
    struct sched_info sched_info;
    bool throttled;   // Linux >= 6.18: the task was stopped by CFS bandwidth control on its way to user space
    int pid;
    int tgid;
    char comm[16];
} __attribute__((preserve_access_index));

struct pt_regs {
    unsigned long ax;
    unsigned long orig_ax;
    unsigned long di;   // a system call's arguments (x86-64), kept there for its whole length
    unsigned long si;
    unsigned long dx;
    unsigned long r10;
    unsigned long r8;
} __attribute__((preserve_access_index));

struct timerqueue_node {
    long long expires;
} __attribute__((preserve_access_index));

struct hrtimer {
    struct timerqueue_node node;   // node.expires: the hard expiry (soft expiry + slack)
    long long _softexpires;
    void *function;
} __attribute__((preserve_access_index));

#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define PF_KTHREAD 0x00200000
#define ENOSYS 38

char LICENSE[] SEC("license") = "GPL";

// ===== maps =====

/// The processes followed (tgid → 1): filled by user space, and by sched_process_fork with follow_children.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, u32);
    __type(value, u8);
} rlctl_kp_follow SEC(".maps");

/// Threads of followed processes that are not followed (tid → 1): rlctl's own consumer thread, and any user
/// space lists.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, u32);
    __type(value, u8);
} rlctl_kp_skip SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, struct rl_kp_control);
} rlctl_kp_ctl SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, struct rl_kp_losses);
} rlctl_kp_lost SEC(".maps");

/// Its size is set by user space before loading (the recorder's ring size option).
struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4 * 1024 * 1024);
} rlctl_kp_ring SEC(".maps");

/// An open time off the CPU of a followed thread (struct rl_kp_episode, in the shared header: user space seeds
/// one for a thread asleep when its process is attached to), in the thread's own storage: freed with the task, so
/// threads that come and go leave nothing behind.
#define episode rl_kp_episode

struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct episode);
} rlctl_kp_eps SEC(".maps");

/// A followed thread runnable on a CPU and waiting for it: who held the CPU meanwhile.
struct waiter {
    s32 tid;                // 0: the slot is free
    u32 culprit_count;
    u64 charged_to_ns;      // the time up to which the CPU's holders were charged
    u64 others_ns;
    struct rl_kp_culprit culprits[RL_KP_CULPRITS];
};

struct cpu_waiters {
    u32 count;
    u32 padding;
    struct waiter slots[RL_KP_WAITER_SLOTS];
};

/// One entry per possible CPU (user space sets max_entries): written for a CPU only under its run-queue lock.
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, struct cpu_waiters);
} rlctl_kp_cpus SEC(".maps");

/// Armed hrtimers of followed threads whose callback wakes a thread (a sleep, a wait's timeout, a timerfd).
struct armed {
    s32 tid;
    u32 padding;
    u64 due_ns;
    u64 latest_ns;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 4096);
    __type(key, u64);       // the hrtimer's address
    __type(value, struct armed);
} rlctl_kp_armed SEC(".maps");

/// A timer of thread tid that fired: taken by its next wake-up.
struct fired {
    u64 due_ns;
    u64 latest_ns;
    u64 fired_ns;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 4096);
    __type(key, u32);
    __type(value, struct fired);
} rlctl_kp_fired SEC(".maps");

// ===== helpers =====

static __always_inline bool followed_tgid(u32 tgid) {
    return tgid != 0 && bpf_map_lookup_elem(&rlctl_kp_follow, &tgid) != 0;
}

static __always_inline void count_loss(bool dropped, u64 now) {
    u32 zero = 0;
    struct rl_kp_losses *losses = bpf_map_lookup_elem(&rlctl_kp_lost, &zero);
    struct rl_kp_control *control = bpf_map_lookup_elem(&rlctl_kp_ctl, &zero);
    if (!losses || !control) return;
    if (losses->epoch != control->epoch || losses->first_ns == 0) {
        losses->epoch = control->epoch;
        losses->first_ns = now;
    }
    if (dropped) losses->dropped++;
    else losses->untracked++;
}

static __always_inline void count_rebuilt(void) {
    u32 zero = 0;
    struct rl_kp_losses *losses = bpf_map_lookup_elem(&rlctl_kp_lost, &zero);
    if (losses) losses->rebuilt++;
}

/// Names task `t` (its tid, its process, 0 for a kernel thread, and its command).
static __always_inline void name_task(struct rl_kp_task *out, struct task_struct *t) {
    out->tid = BPF_CORE_READ(t, pid);
    out->pid = (BPF_CORE_READ(t, flags) & PF_KTHREAD) ? 0 : BPF_CORE_READ(t, tgid);
    bpf_probe_read_kernel_str(out->comm, sizeof out->comm, &t->comm);
}

/// Whether the CFS bandwidth controller holds t: its group's run queue is throttled, or (Linux >= 6.18) the
/// task itself was stopped on its way back to user space.
static __always_inline bool throttled(struct task_struct *t) {
    if (bpf_core_field_exists(t->throttled) && BPF_CORE_READ(t, throttled)) return 1;
    struct cfs_rq *rq = BPF_CORE_READ(t, se.cfs_rq);
    return rq && BPF_CORE_READ(rq, throttle_count) > 0;
}

/// Charges `holder`, which held this CPU until `now`, to one waiter: to its culprit of that tid, else to a free
/// culprit entry, else it replaces the shortest culprit when it held longer (the replaced one goes to others).
static __always_inline void charge(struct waiter *w, struct task_struct *holder, s32 holder_tid, u64 now) {
    if (w->tid == 0 || w->tid == holder_tid) return;
    u64 ns = now > w->charged_to_ns ? now - w->charged_to_ns : 0;
    w->charged_to_ns = now;
    if (ns == 0) return;
    int shortest = 0;
    u64 shortest_ns = ~0ULL;
    #pragma unroll
    for (int i = 0; i < RL_KP_CULPRITS; i++) {
        if (i < w->culprit_count) {
            if (w->culprits[i].task.tid == holder_tid) {
                w->culprits[i].ns += ns;
                return;
            }
            if (w->culprits[i].ns < shortest_ns) {
                shortest_ns = w->culprits[i].ns;
                shortest = i;
            }
        }
    }
    u32 slot;
    if (w->culprit_count < RL_KP_CULPRITS) {
        slot = w->culprit_count++;
    } else if (ns > shortest_ns) {
        w->others_ns += shortest_ns;
        slot = shortest;
    } else {
        w->others_ns += ns;
        return;
    }
    if (slot >= RL_KP_CULPRITS) return;   // (for the verifier)
    w->culprits[slot].ns = ns;
    name_task(&w->culprits[slot].task, holder);
}

/// Starts the wait of `ep`'s thread `tid` on `cpu`'s run queue at `now`, in a free waiter slot (none free: the
/// whole wait counts as others_ns, at back).
static __always_inline void start_wait(struct episode *ep, s32 tid, u32 cpu, u64 now) {
    ep->wait_cpu = -1;
    struct cpu_waiters *cw = bpf_map_lookup_elem(&rlctl_kp_cpus, &cpu);
    if (!cw) return;
    // A slot of this thread still there (a wait whose end was missed) is taken over, never doubled.
    int free = -1;
    #pragma unroll
    for (int i = 0; i < RL_KP_WAITER_SLOTS; i++) {
        s32 owner = cw->slots[i].tid;
        if (owner == tid) {
            free = i;
            cw->count--;
            break;
        }
        if (owner == 0 && free < 0) free = i;
    }
    if (free < 0 || free >= RL_KP_WAITER_SLOTS) return;
    struct waiter *w = &cw->slots[free];
    __builtin_memset(w, 0, sizeof *w);
    w->tid = tid;
    w->charged_to_ns = now;
    cw->count++;
    ep->wait_cpu = cpu;
}

/// Ends the wait of thread `tid` on `cpu`: copies its culprits into `rec` (when rec is set) and frees the slot.
/// Returns the run-queue time the slot accounted for, culprits and others.
static __always_inline u64 end_wait(s32 tid, s32 cpu, struct rl_kp_record *rec) {
    if (cpu < 0) return 0;
    u32 key = cpu;
    struct cpu_waiters *cw = bpf_map_lookup_elem(&rlctl_kp_cpus, &key);
    if (!cw) return 0;
    u64 total = 0;
    #pragma unroll
    for (int i = 0; i < RL_KP_WAITER_SLOTS; i++) {
        struct waiter *w = &cw->slots[i];
        if (w->tid == tid) {
            total = w->others_ns;
            #pragma unroll
            for (int c = 0; c < RL_KP_CULPRITS; c++) {
                if (c < w->culprit_count) {
                    total += w->culprits[c].ns;
                    if (rec) rec->culprits[c] = w->culprits[c];
                }
            }
            if (rec) {
                rec->culprit_count = w->culprit_count > RL_KP_CULPRITS ? RL_KP_CULPRITS : w->culprit_count;
                rec->others_ns += w->others_ns;
            }
            w->tid = 0;
            if (cw->count > 0) cw->count--;
            return total;
        }
    }
    return 0;
}

// ===== interrupt context =====
//
// A wake-up from an interrupt names no waker (the task it interrupted did not wake anyone). Where the kernel's BTF
// places the per-CPU preemption count (x86-64), it says so (preempt_count below). Elsewhere the count is a per-CPU
// variable BPF can reach only through kallsyms, which this kind of kernel builds without data symbols (no
// CONFIG_KALLSYMS_ALL); so the probe counts, per CPU, the interrupt handlers it is inside: hard interrupts, soft
// interrupts and hrtimer callbacks (the timer interrupt's work, where sleeps and timerfds wake). A context switch
// never happens inside one, so a program of its own on sched_switch sets the count back to zero (attached with the
// depth programs only, off the switch path where the preempt count is read): an exit that reached no program
// (attached after its entry, or skipped as a recursion) cannot leave a CPU's wakers read as interrupts for good.

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, s32);
} rlctl_kp_irq SEC(".maps");

static __always_inline void irq_depth(s32 by) {
    u32 zero = 0;
    s32 *depth = bpf_map_lookup_elem(&rlctl_kp_irq, &zero);
    if (!depth) return;
    s32 next = *depth + by;
    *depth = next < 0 ? 0 : next;   // an exit whose entry came before the probe attached
}

// preempt_count's bits for a hard interrupt, an NMI, and a softirq being served (not merely disabled).
#define RL_KP_HARDIRQ_OR_NMI 0x00ff0000u
#define RL_KP_SERVING_SOFTIRQ 0x00000100u

/// This CPU's preempt count, or -1 when the control does not say where it is. The run queue of the CPU comes
/// from the current task, which runs on it (the idle task's points at its CPU's root group too).
static __always_inline s64 preempt_count(struct rl_kp_control *control) {
    if (!control || !control->reads_preempt_count) return -1;
    struct task_struct *current = bpf_get_current_task_btf();
    struct rq *rq = BPF_CORE_READ(current, se.cfs_rq, rq);
    if (!rq) return -1;
    u32 count = 0;
    if (bpf_probe_read_kernel(&count, sizeof count, (void *)((s64)rq + control->preempt_count_from_rq)) != 0) return -1;
    return count;
}

static __always_inline bool in_interrupt(void) {
    u32 zero = 0;
    struct rl_kp_control *control = bpf_map_lookup_elem(&rlctl_kp_ctl, &zero);
    s64 count = preempt_count(control);
    if (count >= 0) return (count & (RL_KP_HARDIRQ_OR_NMI | RL_KP_SERVING_SOFTIRQ)) != 0;
    s32 *depth = bpf_map_lookup_elem(&rlctl_kp_irq, &zero);
    return depth && *depth > 0;
}

// ===== the scheduler =====

/// Followed thread `next` got a CPU again at `now` (`cpu`): closes its episode into one record.
static __always_inline void back(struct episode *ep, struct task_struct *next, u32 cpu, u64 now) {
    s32 tid = BPF_CORE_READ(next, pid);
    ep->open = 0;
    struct rl_kp_record *rec = bpf_ringbuf_reserve(&rlctl_kp_ring, sizeof *rec, 0);
    if (!rec) {
        end_wait(tid, ep->wait_cpu, 0);
        count_loss(1, now);
        return;
    }
    __builtin_memset(rec, 0, sizeof *rec);
    rec->kind = RL_KP_EPISODE;
    rec->tid = tid;
    rec->pid = BPF_CORE_READ(next, tgid);
    bpf_probe_read_kernel_str(rec->comm, sizeof rec->comm, &next->comm);
    rec->syscall = ep->syscall;
    rec->reason = ep->reason;
    rec->left_ns = ep->left_ns;
    rec->woken_ns = ep->woken ? ep->woken_ns : now;
    rec->back_ns = now;
    rec->cpu = cpu;
    rec->queue_cpu = ep->wait_cpu;
    rec->others_ns = ep->others_ns;
    if (ep->reason == RL_KP_THROTTLED || ep->throttled_at_wake) rec->throttled_ns = now - rec->woken_ns;
    if (ep->reason != RL_KP_PREEMPTED && ep->reason != RL_KP_THROTTLED) {
        rec->has_waker = ep->woken;
        rec->waker = ep->waker;
    }
    if (ep->has_timer) {
        rec->has_timer = 1;
        rec->timer_due_ns = ep->timer_due_ns;
        rec->timer_latest_ns = ep->timer_latest_ns;
        rec->timer_fired_ns = ep->timer_fired_ns;
    }
    u64 accounted = end_wait(tid, ep->wait_cpu, rec);
    // A wait with no slot (all taken, or the episode started before a migration without one): its time, less
    // what the slot and the migrations accounted for, is others.
    u64 runnable = now - rec->woken_ns;
    if (accounted > runnable && accounted > 0) {
        // A rebuilt episode's slot went on charging the CPU's holders after the switch-in nobody saw: its
        // culprits share the wait the scheduler counted, in proportion.
        #pragma unroll
        for (int c = 0; c < RL_KP_CULPRITS; c++) rec->culprits[c].ns = rec->culprits[c].ns * runnable / accounted;
        rec->others_ns = 0;
        accounted = runnable;
    }
    u64 known = accounted + ep->others_ns;
    if (rec->reason != RL_KP_THROTTLED && runnable > known) rec->others_ns += runnable - known;
    if (rec->reason != RL_KP_THROTTLED && rec->queue_cpu < 0 && runnable > 0) rec->queue_cpu = ep->wait_cpu >= 0 ? ep->wait_cpu : (s32)cpu;
    bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
}

/// Followed thread `t` leaves its CPU at `now` with its last time off the CPU still open: the switch-in that
/// ended it reached no program here. Measured on 6.18: a few a second at 30 000 switches a second of the traced
/// threads, whatever the load; every switch-out is seen, and per thread the program saw that many fewer switch-ins
/// than switch-outs (the kernel's nvcsw + nivcsw agree with the switch-outs). Why is not known. The scheduler's
/// own counters still say what happened, so the record is rebuilt from them rather than lost: exactly one
/// arrival since it left (sched_info.pcount), the time it was queued before that arrival (sched_info.run_delay,
/// the run-queue wait), and the time it ran since (se.sum_exec_runtime). The switch-in is then the wake-up plus
/// the queued time (or, with no wake-up seen, now less the run time). Checked on the records this program does
/// see: that estimate falls 5–20 µs before the switch-in this program stamps (the scheduler reads its clock at
/// the start of the switch), a few beyond 20 µs. Anything else (more than one arrival, counters that do not
/// add up) is counted lost, as before. Rebuilt records are counted (rl_kp_losses.rebuilt).
static __always_inline void rebuild(struct episode *ep, struct task_struct *t, s32 tid, u32 cpu, u64 now,
                                    u64 ran_ns, u64 arrivals, u64 queued_ns) {
    u64 ran = ran_ns - ep->ran_ns, queued = queued_ns - ep->queued_ns;
    if (arrivals != ep->arrivals + 1 || ran_ns < ep->ran_ns || queued_ns < ep->queued_ns || now < ep->left_ns + ran) {
        end_wait(tid, ep->wait_cpu, 0);
        count_loss(0, now);
        return;
    }
    u64 back_ns;
    if (ep->woken) {
        back_ns = ep->woken_ns + queued;
    } else {
        back_ns = now - ran;
        u64 woken_ns = back_ns >= ep->left_ns + queued ? back_ns - queued : ep->left_ns;
        ep->woken = 1;
        ep->woken_ns = woken_ns;
    }
    // Within [woken, now - ran]: it ran `ran` before now.
    if (back_ns > now - ran) back_ns = now - ran;
    if (back_ns < ep->woken_ns) back_ns = ep->woken_ns;
    back(ep, t, cpu, back_ns);
    count_rebuilt();
}

/// A followed thread leaves its CPU: opens its episode.
static __always_inline void leave(struct task_struct *prev, bool preempt, unsigned int state, u32 cpu, u64 now) {
    s32 tid = BPF_CORE_READ(prev, pid);
    if (bpf_map_lookup_elem(&rlctl_kp_skip, &tid)) return;
    struct episode *ep = bpf_task_storage_get(&rlctl_kp_eps, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!ep) {
        count_loss(0, now);
        return;
    }
    u64 ran_ns = BPF_CORE_READ(prev, se.sum_exec_runtime);
    u64 arrivals = BPF_CORE_READ(prev, sched_info.pcount);
    u64 queued_ns = BPF_CORE_READ(prev, sched_info.run_delay);
    if (ep->open) rebuild(ep, prev, tid, cpu, now, ran_ns, arrivals, queued_ns);
    __builtin_memset(ep, 0, sizeof *ep);
    ep->open = 1;
    ep->left_ns = now;
    ep->ran_ns = ran_ns;
    ep->arrivals = arrivals;
    ep->queued_ns = queued_ns;
    ep->wait_cpu = -1;
    ep->syscall = -1;
    // A preempted task stays on its run queue whatever state it was setting; otherwise state 0 means it
    // yielded or was stopped while runnable (a signal cancelled its sleep, or the bandwidth controller).
    if (preempt || state == 0) {
        if (throttled(prev)) {
            // Held by its cgroup's quota, not queued for this CPU: no culprits; all of it is throttled time.
            ep->reason = RL_KP_THROTTLED;
        } else {
            ep->reason = RL_KP_PREEMPTED;
            start_wait(ep, tid, cpu, now);
        }
        ep->woken = 1;
        ep->woken_ns = now;
        return;
    }
    ep->reason = (state & TASK_INTERRUPTIBLE) ? RL_KP_SLEEPING
               : (state & TASK_UNINTERRUPTIBLE) ? RL_KP_DISK_SLEEP : RL_KP_OTHER;
    // In a system call, x86-64's entry code left -ENOSYS in ax until the call returns, and its number in orig_ax;
    // in an exception (a page fault), orig_ax is the error code and ax the user's value.
    struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
    if (regs && (long)BPF_CORE_READ(regs, ax) == -ENOSYS) ep->syscall = (s32)BPF_CORE_READ(regs, orig_ax);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(rlctl_kp_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state) {
    u64 now = bpf_ktime_get_ns();
    u32 cpu = bpf_get_smp_processor_id();
    struct cpu_waiters *cw = bpf_map_lookup_elem(&rlctl_kp_cpus, &cpu);
    if (cw && cw->count > 0) {
        // prev held this CPU until now, while the followed threads in the slots waited for it.
        s32 prev_tid = BPF_CORE_READ(prev, pid);
        #pragma unroll
        for (int i = 0; i < RL_KP_WAITER_SLOTS; i++) charge(&cw->slots[i], prev, prev_tid, now);
    }
    if (followed_tgid(BPF_CORE_READ(prev, tgid))) leave(prev, preempt, prev_state, cpu, now);
    struct episode *ep = bpf_task_storage_get(&rlctl_kp_eps, next, 0, 0);
    if (ep && ep->open) back(ep, next, cpu, now);
    return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(rlctl_kp_irq_in) { irq_depth(1); return 0; }

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(rlctl_kp_irq_out) { irq_depth(-1); return 0; }

SEC("tp_btf/softirq_entry")
int BPF_PROG(rlctl_kp_sirq_in) { irq_depth(1); return 0; }

SEC("tp_btf/softirq_exit")
int BPF_PROG(rlctl_kp_sirq_out) { irq_depth(-1); return 0; }

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(rlctl_kp_tdone) { irq_depth(-1); return 0; }

/// A context switch: this CPU is inside no interrupt handler.
SEC("tp_btf/sched_switch")
int BPF_PROG(rlctl_kp_irq_reset) {
    u32 zero = 0;
    s32 *depth = bpf_map_lookup_elem(&rlctl_kp_irq, &zero);
    if (depth && *depth != 0) *depth = 0;
    return 0;
}

/// The waker, in its own context (sched_wakeup may run later on the woken task's CPU, from an IPI).
SEC("tp_btf/sched_waking")
int BPF_PROG(rlctl_kp_waking, struct task_struct *p) {
    if (!followed_tgid(BPF_CORE_READ(p, tgid))) return 0;
    struct episode *ep = bpf_task_storage_get(&rlctl_kp_eps, p, 0, 0);
    if (!ep || !ep->open || ep->woken) return 0;
    struct task_struct *current = bpf_get_current_task_btf();
    if (!in_interrupt() && BPF_CORE_READ(current, pid) != 0) name_task(&ep->waker, current);
    else __builtin_memset(&ep->waker, 0, sizeof ep->waker);
    return 0;
}

static __always_inline void woken(struct task_struct *p) {
    if (!followed_tgid(BPF_CORE_READ(p, tgid))) return;
    struct episode *ep = bpf_task_storage_get(&rlctl_kp_eps, p, 0, 0);
    if (!ep || !ep->open || ep->woken) return;
    u64 now = bpf_ktime_get_ns();
    ep->woken = 1;
    ep->woken_ns = now;
    ep->throttled_at_wake = throttled(p);
    s32 tid = BPF_CORE_READ(p, pid);
    u32 key = tid;
    struct fired *f = bpf_map_lookup_elem(&rlctl_kp_fired, &key);
    if (f) {
        if (f->fired_ns >= ep->left_ns && f->fired_ns <= now) {
            ep->has_timer = 1;
            ep->timer_due_ns = f->due_ns;
            ep->timer_latest_ns = f->latest_ns;
            ep->timer_fired_ns = f->fired_ns;
        }
        bpf_map_delete_elem(&rlctl_kp_fired, &key);
    }
    start_wait(ep, tid, BPF_CORE_READ(p, thread_info.cpu), now);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(rlctl_kp_wakeup, struct task_struct *p) {
    woken(p);
    return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(rlctl_kp_migr, struct task_struct *p, int dest_cpu) {
    if (!followed_tgid(BPF_CORE_READ(p, tgid))) return 0;
    struct episode *ep = bpf_task_storage_get(&rlctl_kp_eps, p, 0, 0);
    if (!ep || !ep->open || ep->wait_cpu < 0) return 0;
    // A waiting thread moved to another run queue: what it waited on the old one counts as others.
    u64 now = bpf_ktime_get_ns();
    s32 tid = BPF_CORE_READ(p, pid);
    end_wait(tid, ep->wait_cpu, 0);
    u64 since = ep->woken ? ep->woken_ns : ep->left_ns;
    ep->others_ns = now > since ? now - since : 0;
    start_wait(ep, tid, dest_cpu, now);
    return 0;
}

/// Sends a record of kind `kind` (RL_KP_FORK, RL_KP_THREAD) for `child`, made now.
static __always_inline void announce(u32 kind, struct task_struct *child, u32 child_pid, u32 child_tgid) {
    struct rl_kp_record *rec = bpf_ringbuf_reserve(&rlctl_kp_ring, sizeof *rec, 0);
    u64 now = bpf_ktime_get_ns();
    if (!rec) {
        count_loss(1, now);
        return;
    }
    __builtin_memset(rec, 0, sizeof *rec);
    rec->kind = kind;
    rec->tid = child_pid;
    rec->pid = child_tgid;
    rec->left_ns = now;
    bpf_probe_read_kernel_str(rec->comm, sizeof rec->comm, &child->comm);
    bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(rlctl_kp_fork, struct task_struct *parent, struct task_struct *child) {
    u32 zero = 0;
    struct rl_kp_control *control = bpf_map_lookup_elem(&rlctl_kp_ctl, &zero);
    if (!control || !(control->follow_children || control->records_waits)) return 0;
    u32 child_pid = BPF_CORE_READ(child, pid);
    u32 child_tgid = BPF_CORE_READ(child, tgid);
    if (child_pid != child_tgid) {
        // A new thread of a followed process (followed already), announced when waits are recorded: its first wait
        // ends an iteration that began when it did.
        if (control->records_waits && followed_tgid(child_tgid)) announce(RL_KP_THREAD, child, child_pid, child_tgid);
        return 0;
    }
    // A new process of a followed one is added.
    if (!control->follow_children || !followed_tgid(BPF_CORE_READ(parent, tgid))) return 0;
    u8 one = 1;
    bpf_map_update_elem(&rlctl_kp_follow, &child_tgid, &one, BPF_NOEXIST);
    announce(RL_KP_FORK, child, child_pid, child_tgid);
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(rlctl_kp_exit, struct task_struct *p, bool group_dead) {
    // The process is gone: forget it, so that a new process that gets its pid is not followed.
    if (!group_dead) return 0;
    u32 tgid = BPF_CORE_READ(p, tgid);
    bpf_map_delete_elem(&rlctl_kp_follow, &tgid);
    return 0;
}

// ===== timers =====

SEC("tp_btf/hrtimer_start")
int BPF_PROG(rlctl_kp_tstart, struct hrtimer *timer) {
    if (!followed_tgid(bpf_get_current_pid_tgid() >> 32)) return 0;
    u32 zero = 0;
    struct rl_kp_control *control = bpf_map_lookup_elem(&rlctl_kp_ctl, &zero);
    if (!control) return 0;
    u64 function = (u64)BPF_CORE_READ(timer, function);
    if (function == 0 || (function != control->hrtimer_wakeup && function != control->timerfd_tmrproc)) return 0;
    struct armed armed = {
        .tid = (s32)bpf_get_current_pid_tgid(),
        .due_ns = BPF_CORE_READ(timer, _softexpires),
        .latest_ns = BPF_CORE_READ(timer, node.expires),
    };
    u64 key = (u64)timer;
    bpf_map_update_elem(&rlctl_kp_armed, &key, &armed, BPF_ANY);
    return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(rlctl_kp_tfire, struct hrtimer *timer, long long *now) {
    // The callback runs in interrupt context until hrtimer_expire_exit: a hard interrupt, or the HRTIMER softirq
    // for the timers made soft (TCP's pacing timer, thousands a second under loopback traffic). Where the preempt
    // count is read, this checks it says one of the two (a kernel whose layout the offsets do not fit is counted,
    // and rlctl says so).
    u32 zero = 0;
    struct rl_kp_control *control = bpf_map_lookup_elem(&rlctl_kp_ctl, &zero);
    s64 count = preempt_count(control);
    if (count < 0) {
        irq_depth(1);
    } else if ((count & (RL_KP_HARDIRQ_OR_NMI | RL_KP_SERVING_SOFTIRQ)) == 0) {
        struct rl_kp_losses *losses = bpf_map_lookup_elem(&rlctl_kp_lost, &zero);
        if (losses) losses->misreads++;
    }
    u64 key = (u64)timer;
    struct armed *armed = bpf_map_lookup_elem(&rlctl_kp_armed, &key);
    if (!armed) return 0;
    struct fired fired = { .due_ns = armed->due_ns, .latest_ns = armed->latest_ns };
    long long base_now = 0;
    bpf_probe_read_kernel(&base_now, sizeof base_now, now);
    fired.fired_ns = base_now > 0 ? (u64)base_now : bpf_ktime_get_ns();
    u32 tid = armed->tid;
    bpf_map_update_elem(&rlctl_kp_fired, &tid, &fired, BPF_ANY);
    bpf_map_delete_elem(&rlctl_kp_armed, &key);
    return 0;
}

/// Every hrtimer the machine cancels (the scheduler tick's among them, at each idle entry) comes here: a lookup
/// first, since a delete from an LRU hash takes its lock even for a key it does not hold.
SEC("tp_btf/hrtimer_cancel")
int BPF_PROG(rlctl_kp_tcanc, struct hrtimer *timer) {
    u64 key = (u64)timer;
    if (bpf_map_lookup_elem(&rlctl_kp_armed, &key)) bpf_map_delete_elem(&rlctl_kp_armed, &key);
    return 0;
}

// ===== wait calls (`rlctl record --pid`): the raw syscall tracepoints, for the wait calls =====
//
// Attached only when user space asks for waits (rl_kp_open's `waits`): enabling a syscall tracepoint sends every
// process's system calls through the kernel's slower entry path, which a recording of a RunLoopCore program has no
// reason to pay. BTF tracepoints on sys_enter and sys_exit, not the per-call classic ones
// (syscalls:sys_enter_epoll_wait…): those format a record of the call's arguments for perf before any program runs
// (measured with the same programs: +531 ns per wait against +411 ns here, Benchmarks/README.md), while these hand
// over the registers. The price is a program run on every system call of the machine, which returns at its first
// comparison unless the call is a wait: +116 ns on another process's getpid, against +62 ns. A wait's begin lives in
// the thread's own storage until it returns; then one record carries the whole call, the fields of the schema's
// wait_begin and wait_end.

/// A followed thread's wait in progress, and its waits lost since its last record.
struct open_wait {
    u64 begin_ns;
    s64 timeout_ns;
    s32 target;
    u32 set_size;
    u32 call;
    u32 open;
    u32 lost;
    u32 claimed;   // rlctl's wait interposer records this thread's waits made through libc
    /// Where the interposer says, in the thread's memory, that the wait call under way is one it records.
    u64 recorded_flag;
    /// The poll just interrupted will go on through restart_syscall (a stop and continue): its set size and when it
    /// would have timed out (U64 max: never).
    u32 restartable;
    u32 restart_set_size;
    u64 restart_deadline_ns;
};

/// `open` of a wait the interposer records: neither end is the probe's.
#define RL_KP_INTERPOSERS 2

struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct open_wait);
} rlctl_kp_wts SEC(".maps");

/// The wait call system call `id` is (x86-64's numbers), or -1.
static __always_inline int wait_call(long id) {
    switch (id) {
    case 232: return RL_KP_EPOLL_WAIT;
    case 281: return RL_KP_EPOLL_PWAIT;
    case 441: return RL_KP_EPOLL_PWAIT2;
    case 7: return RL_KP_POLL;
    case 271: return RL_KP_PPOLL;
    case 23: return RL_KP_SELECT;
    case 270: return RL_KP_PSELECT;
    default: return -1;
    }
}

/// The caller's wait state: found in its own storage, one lookup, for a thread already followed; made for a thread of a
/// followed process (not one left out) on its first wait call; NULL for every other thread, and for a followed one
/// whose state could not be made (`*followed` then says so).
static __always_inline struct open_wait *caller_wait(struct task_struct *task, bool *followed) {
    struct open_wait *w = bpf_task_storage_get(&rlctl_kp_wts, task, 0, 0);
    *followed = w != 0;
    if (w) return w;
    u64 id = bpf_get_current_pid_tgid();
    s32 tid = (s32)id;
    if (!followed_tgid(id >> 32) || bpf_map_lookup_elem(&rlctl_kp_skip, &tid)) return 0;
    *followed = 1;
    return bpf_task_storage_get(&rlctl_kp_wts, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/// rlctl's wait interposer, at a thread's first wait through libc, claims the thread's waits with a call no program
/// makes (RL_KP_CLAIM): epoll_wait(-1, &flag, 0, this probe's claim token), which fails at once (EINVAL). From then
/// on (until the thread execs) a wait call of the thread while that flag, in the thread's memory, is 1 is one the
/// interposer records, and the probe leaves it out; any other (a raw system call, syscall(2)) the probe records. So
/// `record --any` records each wait once: by the interposer where it reaches, by the kernel where it does not.
static __always_inline bool claims(struct pt_regs *regs, int call) {
    if (call != RL_KP_EPOLL_WAIT || (s32)regs->di != -1 || regs->si == 0 || (s32)regs->dx != 0) return 0;
    u32 zero = 0;
    struct rl_kp_control *control = bpf_map_lookup_elem(&rlctl_kp_ctl, &zero);
    return control && control->claim_token != 0 && (u32)regs->r10 == control->claim_token;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(rlctl_kp_w_exec, struct task_struct *p, int old_pid, struct linux_binprm *bprm) {
    // A new program: the thread's waits are the kernel's again until its own interposer, if it loads one, claims them.
    struct open_wait *w = bpf_task_storage_get(&rlctl_kp_wts, p, 0, 0);
    if (w) {
        w->claimed = 0;
        w->recorded_flag = 0;
    }
    return 0;
}

struct kernel_timespec {
    s64 sec;
    s64 nsec;
};

/// A timeout given in milliseconds (negative: none).
static __always_inline s64 milliseconds(u64 argument) {
    s32 ms = (s32)argument;
    return ms < 0 ? -1 : (s64)ms * 1000000;
}

/// A timeout given as a user pointer to a timespec (`micro`: a select timeval, whose second field is µs): NULL is
/// none; one that cannot be read (not resident) is none too, the rare case the interposer would have seen.
static __always_inline s64 pointed(u64 argument, bool micro) {
    if (argument == 0) return -1;
    struct kernel_timespec value = {};
    if (bpf_probe_read_user(&value, sizeof value, (void *)argument) != 0 || value.sec < 0 || value.nsec < 0) return -1;
    if (value.sec > 1000000000) value.sec = 1000000000;   // (about 31 years: no overflow)
    return value.sec * 1000000000 + (micro ? value.nsec * 1000 : value.nsec);
}

/// The descriptor a wait call waits on (-1 for poll and select) and its set size, from its arguments.
static __always_inline void wait_set(struct pt_regs *regs, u32 call, s32 *target, u32 *set_size) {
    // (A BTF tracepoint's registers are read directly: no helper call.)
    if (call <= RL_KP_EPOLL_PWAIT2) {
        *target = (s32)regs->di;
        *set_size = (u32)regs->dx;
    } else if (call == RL_KP_POLL || call == RL_KP_PPOLL) {
        *target = -1;
        *set_size = (u32)regs->si;
    } else {
        *target = -1;
        *set_size = (u32)regs->di;
    }
}

/// x86-64's restart_syscall: how the kernel goes on with a poll a signal without a handler interrupted (a stop, then
/// SIGCONT), with the time it had left. The interrupted part was recorded as a wait interrupted (EINTR); the rest is
/// another wait, a poll with the timeout that was left.
#define RL_KP_RESTART_SYSCALL 219

/// A followed thread's poll goes on through restart_syscall: its second part opens as a poll of its own.
static __always_inline void restart_poll(void) {
    struct open_wait *w = bpf_task_storage_get(&rlctl_kp_wts, bpf_get_current_task_btf(), 0, 0);
    if (!w || !w->restartable) return;
    w->restartable = 0;
    u64 now = bpf_ktime_get_ns();
    w->call = RL_KP_POLL;
    w->open = 1;
    w->target = -1;
    w->set_size = w->restart_set_size;
    w->timeout_ns = w->restart_deadline_ns == ~0ULL ? -1 : (s64)(w->restart_deadline_ns > now ? w->restart_deadline_ns - now : 0);
    w->begin_ns = now;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(rlctl_kp_w_in, struct pt_regs *regs, long id) {
    int call = wait_call(id);
    if (call < 0) {
        if (id == RL_KP_RESTART_SYSCALL) restart_poll();
        return 0;
    }
    bool followed;
    struct open_wait *w = caller_wait(bpf_get_current_task_btf(), &followed);
    if (!w) return 0;   // (not followed; or no memory: its return then reads as a wait begun before the recording)
    if (claims(regs, call)) {
        w->claimed = 1;
        w->recorded_flag = regs->si;
        w->open = RL_KP_INTERPOSERS;
        return 0;
    }
    w->restartable = 0;
    if (w->claimed) {
        u32 recorded = 0;
        if (bpf_probe_read_user(&recorded, sizeof recorded, (void *)w->recorded_flag) == 0 && recorded) {
            w->open = RL_KP_INTERPOSERS;
            return 0;
        }
    }
    w->call = call;
    w->open = 1;
    wait_set(regs, call, &w->target, &w->set_size);
    switch (call) {
    case RL_KP_EPOLL_WAIT:
    case RL_KP_EPOLL_PWAIT: w->timeout_ns = milliseconds(regs->r10); break;
    case RL_KP_EPOLL_PWAIT2: w->timeout_ns = pointed(regs->r10, 0); break;
    case RL_KP_POLL: w->timeout_ns = milliseconds(regs->dx); break;
    case RL_KP_PPOLL: w->timeout_ns = pointed(regs->dx, 0); break;
    default: w->timeout_ns = pointed(regs->r8, call == RL_KP_SELECT); break;   // select, pselect6
    }
    // Last: the call's own work starts after the program.
    w->begin_ns = bpf_ktime_get_ns();
    return 0;
}

#define ERESTARTSYS 512
#define ERESTART_RESTARTBLOCK 516
#define EINTR 4

SEC("tp_btf/sys_exit")
int BPF_PROG(rlctl_kp_w_out, struct pt_regs *regs, long ret) {
    long id = (long)regs->orig_ax;
    int call = wait_call(id);
    // (Every other system call of the machine returns here, before any helper call.)
    if (call < 0 && id != RL_KP_RESTART_SYSCALL) return 0;
    struct task_struct *task = bpf_get_current_task_btf();
    if (call < 0) {
        // The end of a restarted poll (restart_poll opened it); any other restart_syscall is not a wait.
        struct open_wait *open = bpf_task_storage_get(&rlctl_kp_wts, task, 0, 0);
        if (!open || open->open != 1 || open->call != RL_KP_POLL) return 0;
        call = RL_KP_POLL;
    }
    bool followed;
    struct open_wait *w = caller_wait(task, &followed);
    if (!w) {
        // Followed, with no memory for its state: that wait is lost, and counted.
        if (followed) {
            u32 zero = 0;
            struct rl_kp_losses *losses = bpf_map_lookup_elem(&rlctl_kp_lost, &zero);
            if (losses) losses->waits_dropped++;
        }
        return 0;
    }
    if (w->open == RL_KP_INTERPOSERS) {
        w->open = 0;
        return 0;
    }
    // The end, read once the lookup told a followed thread's wait from every other wait of the machine (those pay
    // no clock read).
    u64 now = bpf_ktime_get_ns();
    bool known = w->open && w->call == (u32)call;
    w->open = 0;
    if (known && call == RL_KP_POLL && ret == -ERESTART_RESTARTBLOCK) {
        w->restartable = 1;
        w->restart_set_size = w->set_size;
        w->restart_deadline_ns = w->timeout_ns < 0 ? ~0ULL : w->begin_ns + (u64)w->timeout_ns;
    }
    struct rl_kp_wait *rec = bpf_ringbuf_reserve(&rlctl_kp_ring, sizeof *rec, 0);
    if (!rec) {
        w->lost++;
        u32 zero = 0;
        struct rl_kp_losses *losses = bpf_map_lookup_elem(&rlctl_kp_lost, &zero);
        if (losses) losses->waits_dropped++;
        return 0;
    }
    // (Read from the task itself: no helper call.)
    rec->kind = RL_KP_WAIT;
    rec->tid = task->pid;
    rec->pid = task->tgid;
    rec->call = call;
    if (known) {
        rec->target = w->target;
        rec->set_size = w->set_size;
        rec->timeout_ns = w->timeout_ns;
        rec->begin_ns = w->begin_ns;
    } else {
        // Begun before the probe followed the thread: when and for how long are unknown, but which descriptor it
        // waits on is still in the registers the call was made with, so its loop is the right one.
        s32 target = -1;
        u32 set_size = 0;
        wait_set(regs, call, &target, &set_size);
        rec->target = target;
        rec->set_size = set_size;
        rec->timeout_ns = -1;
        rec->begin_ns = ~0ULL;
    }
    rec->end_ns = now;
    if (ret >= 0) {
        rec->ready = (s32)ret;
        rec->error = 0;
    } else {
        // A signal interrupted it. The kernel fails it with EINTR when the signal has a handler, and otherwise
        // restarts it (a stop and SIGCONT): then the one call shows as two waits, the first interrupted, the second
        // the call made again (select, ppoll, pselect6) or a poll gone on through restart_syscall with the time it
        // had left (restart_poll).
        long error = -ret;
        rec->ready = -1;
        rec->error = (error >= ERESTARTSYS && error <= ERESTART_RESTARTBLOCK) ? EINTR : (s32)error;
    }
    rec->lost_before = w->lost;
    rec->padding = 0;
    w->lost = 0;
    __builtin_memcpy(rec->comm, task->comm, sizeof rec->comm);
    bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
    return 0;
}

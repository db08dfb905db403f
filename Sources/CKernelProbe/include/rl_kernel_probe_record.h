// The records the kernel probe (bpf/runloop_kernel_probe.bpf.c) writes into its ring buffer, and the control
// values user space writes into its maps: one layout shared by the BPF program and the loader (rl_kernel_probe.c),
// compiled for both the bpf target and the host. Every field has a fixed width and natural alignment, so the two
// compilers lay it out identically; RL_KP_ABI changes with any change here.
#ifndef RL_KERNEL_PROBE_RECORD_H
#define RL_KERNEL_PROBE_RECORD_H

#if defined(__bpf__)
#include <linux/types.h>
typedef __u8 rl_kp_u8;
typedef __u32 rl_kp_u32;
typedef __s32 rl_kp_s32;
typedef __s64 rl_kp_s64;
typedef __u64 rl_kp_u64;
#else
#include <stdint.h>
typedef uint8_t rl_kp_u8;
typedef uint32_t rl_kp_u32;
typedef int32_t rl_kp_s32;
typedef int64_t rl_kp_s64;
typedef uint64_t rl_kp_u64;
#endif

#define RL_KP_ABI 4
#define RL_KP_COMM_SIZE 16
/// Culprits kept per wait (the longest-holding tasks, by tid); the rest of the time goes to others_ns.
#define RL_KP_CULPRITS 4
/// Followed threads that can wait on one CPU's run queue at once; one more waits without culprits (others_ns).
#define RL_KP_WAITER_SLOTS 4

/// Record kinds.
enum { RL_KP_EPISODE = 1, RL_KP_FORK = 2, RL_KP_WAIT = 3, RL_KP_THREAD = 4 };

/// The wait calls, the values of the schema's wait_call enumeration (runloop_events.def).
enum { RL_KP_EPOLL_WAIT = 0, RL_KP_EPOLL_PWAIT = 1, RL_KP_EPOLL_PWAIT2 = 2, RL_KP_POLL = 3, RL_KP_PPOLL = 4,
       RL_KP_SELECT = 5, RL_KP_PSELECT = 6 };

/// RL_KP_CLAIM: the call with which rlctl's wait interposer claims a thread's waits at its first one through libc,
/// epoll_wait(-1, &flag, 0, token) with the probe's claim token (rl_kp_control.claim_token) as its timeout: no program
/// makes it, and it fails at once (EINVAL). `flag`, an int in the thread's memory, is 1 while the thread is in a wait
/// the interposer records: the probe leaves those out and records the thread's other waits.

/// Off-CPU reasons, the values of the schema's off_cpu_reason enumeration (runloop_events.def).
enum { RL_KP_PREEMPTED = 0, RL_KP_THROTTLED = 1, RL_KP_SLEEPING = 2, RL_KP_DISK_SLEEP = 3, RL_KP_OTHER = 4 };

/// A task named by a record (a waker, a task that held the CPU): pid is its process, 0 for a kernel thread.
struct rl_kp_task {
    rl_kp_s32 tid;
    rl_kp_s32 pid;
    char comm[RL_KP_COMM_SIZE];
};

struct rl_kp_culprit {
    struct rl_kp_task task;
    rl_kp_u64 ns;
};

/// One time a followed thread was off its CPU (kind RL_KP_EPISODE), sent when it got a CPU again; or a process
/// the probe started to follow because a followed one forked it (kind RL_KP_FORK: tid and pid are the child's,
/// comm its command, left_ns the time, nothing else is set); or, when waits are recorded, a thread a followed
/// process made (kind RL_KP_THREAD, the same fields).
struct rl_kp_record {
    rl_kp_u32 kind;
    rl_kp_s32 tid;
    rl_kp_s32 pid;
    rl_kp_s32 syscall;      // -1: not in a system call, or left runnable
    rl_kp_u64 left_ns;
    rl_kp_u64 woken_ns;     // left_ns when it left runnable
    rl_kp_u64 back_ns;
    rl_kp_u64 throttled_ns;
    rl_kp_s32 cpu;          // the CPU that ran it again
    rl_kp_s32 queue_cpu;    // the CPU whose run queue it waited on last (-1: it never waited in a run queue)
    rl_kp_u8 reason;        // RL_KP_PREEMPTED…
    rl_kp_u8 has_timer;
    rl_kp_u8 has_waker;     // 0 when it left runnable (no wake-up)
    rl_kp_u8 culprit_count;
    rl_kp_u32 padding;
    rl_kp_u64 others_ns;    // run-queue time not held by the culprits (and time queued before migrating)
    rl_kp_u64 timer_due_ns;
    rl_kp_u64 timer_latest_ns;
    rl_kp_u64 timer_fired_ns;
    struct rl_kp_task waker; // tid 0: an interrupt or the idle task
    struct rl_kp_culprit culprits[RL_KP_CULPRITS];
    char comm[RL_KP_COMM_SIZE];
};

/// One wait call of a followed thread (kind RL_KP_WAIT), from the syscall tracepoints, sent when it returned: the
/// fields of the schema's wait_begin and wait_end. begin_ns is all ones (UINT64_MAX) for a wait that was already in progress when the
/// probe began to follow the thread (its start and timeout are unknown: timeout_ns is -1; call, target and set_size
/// come from the registers the call was made with).
/// lost_before counts this thread's waits before this one whose records found no room in the ring buffer.
struct rl_kp_wait {
    rl_kp_u32 kind;
    rl_kp_s32 tid;
    rl_kp_s32 pid;
    rl_kp_u32 call;          // RL_KP_EPOLL_WAIT…
    rl_kp_s32 target;        // the epoll descriptor; -1 for poll, ppoll, select, pselect6
    rl_kp_u32 set_size;      // maxevents, or the descriptor count
    rl_kp_s64 timeout_ns;    // -1: none (wait until ready)
    rl_kp_u64 begin_ns;
    rl_kp_u64 end_ns;
    rl_kp_s32 ready;         // the call's result, -1 when it failed
    rl_kp_s32 error;         // its errno when it failed (a restart after a signal reads as EINTR), else 0
    rl_kp_u32 lost_before;
    rl_kp_u32 padding;
    char comm[RL_KP_COMM_SIZE];
};

/// A followed thread's open time off the CPU, in its task storage (rlctl_kp_eps). Written by the BPF programs as
/// the thread leaves its CPU; seeded by user space (rl_kp_seed) for a thread asleep when its process is attached
/// to, as left at the attach: then its wake-up and return are seen like any other.
struct rl_kp_episode {
    rl_kp_u64 left_ns;
    rl_kp_u64 woken_ns;
    rl_kp_u64 others_ns;          // run-queue time before a migration
    rl_kp_u64 timer_due_ns, timer_latest_ns, timer_fired_ns;
    struct rl_kp_task waker;
    /// The scheduler's counters when it left: its run time, its arrivals, its time queued (see rebuild).
    rl_kp_u64 ran_ns;
    rl_kp_u64 arrivals;
    rl_kp_u64 queued_ns;
    rl_kp_s32 syscall;
    rl_kp_s32 wait_cpu;           // the CPU whose waiter slot holds its wait, -1 none
    rl_kp_u8 open;
    rl_kp_u8 reason;
    rl_kp_u8 woken;
    rl_kp_u8 throttled_at_wake;
    rl_kp_u8 has_timer;
    rl_kp_u8 padding[3];
};

/// The one entry of the control map, written by user space before the programs attach (and epoch as it reads).
struct rl_kp_control {
    rl_kp_u64 hrtimer_wakeup;   // kernel addresses of the hrtimer callbacks of sleeps/wait timeouts and timerfds
    rl_kp_u64 timerfd_tmrproc;
    rl_kp_u64 epoch;            // bumped by user space each time it reports losses (first_drop_ns per epoch)
    rl_kp_u32 follow_children;
    /// 1: interrupt context is read from this CPU's preempt count (x86-64): its address is this CPU's run queue's
    /// plus `preempt_count_from_rq` (both per-CPU variables of one section, at offsets the kernel's BTF gives), and
    /// the irq and softirq tracepoints need no program. 0: the depth those programs keep is used instead.
    rl_kp_u32 reads_preempt_count;
    rl_kp_s64 preempt_count_from_rq;
    /// 1: the wait calls are recorded (record --pid): threads a followed process makes are announced (RL_KP_THREAD).
    rl_kp_u32 records_waits;
    /// The timeout with which rlctl's wait interposer claims a thread's waits for this probe (RL_KP_CLAIM): random per
    /// probe, so that one recording's claims never hide a thread from another rlctl (a `record --pid` beside it).
    rl_kp_u32 claim_token;
};

/// Per-CPU loss counters (monotonic; user space keeps the last values it reported).
struct rl_kp_losses {
    rl_kp_u64 dropped;        // records the ring buffer had no room for
    rl_kp_u64 untracked;      // times off the CPU whose state could not be kept (no task storage)
    rl_kp_u64 first_ns;       // the first loss of epoch `epoch` on this CPU
    rl_kp_u64 epoch;
    rl_kp_u64 rebuilt;        // times off the CPU whose switch-in reached no program, rebuilt from the scheduler's counters
    rl_kp_u64 misreads;       // hrtimer callbacks (hard interrupt or HRTIMER softirq) whose preempt count read as neither
    rl_kp_u64 waits_dropped;  // wait records the ring buffer had no room for (each also counted in its thread's next)
};

#endif

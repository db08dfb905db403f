// The loader of the kernel probe (bpf/runloop_kernel_probe.bpf.c), for KernelTracing: it loads the BPF object,
// attaches its programs, fills its maps and reads its ring buffer and loss counters. See rl_kernel_probe.c for how
// libbpf stays optional at build time and at run time.
#ifndef RL_KERNEL_PROBE_H
#define RL_KERNEL_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "rl_kernel_probe_record.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rl_kp rl_kp;

/// 1 when this build has the probe (Package.swift found libbpf-dev), else 0.
int rl_kp_built(void);

/// Why the probe cannot run here, in one line, into `why` (returns 0 and leaves it empty when it can run); `waits`:
/// with its wait calls' programs too. Loads the program to let the verifier check it, then unloads it.
int rl_kp_unavailable(int waits, char *why, size_t size);

/// Loads the probe with a ring buffer of `ring_bytes` (a power of two, at least a page), attaches it, and
/// follows the children of followed processes when `follow_children`. With `reads_preempt_count`, a wake-up's
/// interrupt context is read from the CPU's preempt count where the kernel's BTF places it, and the irq and softirq
/// programs are not attached; without it (or where it cannot be placed) they keep the depth. With `waits`, the
/// followed threads' wait calls are recorded too, from the syscall tracepoints (rl_kp_wait records; every process's
/// system calls take the kernel's slower path while they are attached), and a thread that makes the call RL_KP_CLAIM
/// with `claim_token` (a positive number; 0: none) is left out from then on. NULL with the reason in `why` on failure.
rl_kp *rl_kp_open(uint32_t ring_bytes, int follow_children, int reads_preempt_count, int waits, uint32_t claim_token,
                  char *why, size_t size);

/// Follows process `tgid` (every thread of it); 0 or -errno.
int rl_kp_follow(rl_kp *probe, int32_t tgid);

/// Seeds an open time off the CPU for thread `tid` of a followed process, asleep when it was attached to: left at
/// `left_ns` (the attach) for `reason` in system call `syscall`, with the scheduler's counters then (run time,
/// arrivals, time queued: /proc/PID/task/TID/schedstat). Its wake-up and return are then seen. 0 or -errno
/// (-ENOSYS where a thread's pidfd cannot be had: Linux < 6.9).
int rl_kp_seed(rl_kp *probe, int32_t tid, uint64_t left_ns, uint8_t reason, int32_t system_call, uint64_t ran_ns,
               uint64_t arrivals, uint64_t queued_ns);

/// Leaves thread `tid` out (rlctl's own threads); 0 or -errno.
int rl_kp_skip(rl_kp *probe, int32_t tid);

typedef void (*rl_kp_record_fn)(void *context, const struct rl_kp_record *record);
typedef void (*rl_kp_wait_fn)(void *context, const struct rl_kp_wait *wait);

/// Hands every record the ring buffer holds to `fn` (a wait call's to `wait_fn`), without waiting; returns how
/// many, or -errno.
int rl_kp_consume(rl_kp *probe, rl_kp_record_fn fn, rl_kp_wait_fn wait_fn, void *context);

/// The records lost since the last call (no room in the ring buffer; a thread whose state could not be kept) and
/// the time of the first of them (0 when none), and the records rebuilt from the scheduler's counters (their
/// switch-in reached no program; not lost), and the hard interrupts whose preempt count read as none (the
/// offsets taken from the kernel's BTF do not fit it: a waker in an interrupt may be named as the task it stopped),
/// and the wait records the ring buffer had no room for (each thread's next record counts its own).
void rl_kp_take_losses(rl_kp *probe, uint64_t *dropped, uint64_t *untracked, uint64_t *rebuilt, uint64_t *misreads,
                       uint64_t *waits_dropped, uint64_t *first_ns);

/// Detaches every program, so that nothing more is recorded, and keeps the maps and the ring buffer for a last
/// rl_kp_consume and rl_kp_take_losses. NULL is fine.
void rl_kp_detach(rl_kp *probe);

/// Detaches every program and frees every map: nothing of the probe stays in the kernel. NULL is fine.
void rl_kp_close(rl_kp *probe);

/// The calling thread's kernel id (gettid), for leaving the recorder's own threads out.
int32_t rl_kp_thread_id(void);

/// The file the BPF object was read from, for messages ("" before the first open).
const char *rl_kp_object_path(void);

#ifdef __cplusplus
}
#endif

#endif

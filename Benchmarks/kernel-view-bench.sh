#!/bin/bash
# What the kernel view (KernelTracing's BPF probe) costs, side by side in one run (issue 28, "Performance"):
#   1. the machine-wide cost per context switch: `perf bench sched pipe` (two tasks on CPU 1 passing a token, two
#      context switches per op) with the probe attached and following an unrelated process, against the same
#      without it, ROUNDS times alternating: the probe's sched_switch program runs on every switch and filters;
#   2. records lost while two followed threads ping-pong over pipes (kernel_workload pingpong), paced at 50 000
#      rounds/s (100 k context switches/s of followed threads, the issue's figure), then as fast as they can go
#      (about 200-300 k/s on this kind of machine), with the switch rate each way;
#   3. a 1 kHz timerfd loop's lateness p50 (kernel_workload timerfd 1000 N), followed against not, alternating.
# Needs root, perf (linux-perf), cc, bpftool and a release build (done here). Everything it starts is killed and
# its temporary folder removed on every way out; nothing is pinned in the kernel (the recorder's programs go
# away with its process).
#   usage: Benchmarks/kernel-view-bench.sh [ROUNDS]     (default 5)
set -euo pipefail
rounds=${1:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/Benchmarks/bench-lib.sh"
bench_workspace rlctl-kernel-bench

cc -O2 -Wall -o "$work/kernel_workload" "$here/Tests/KernelTracingTests/Programs/kernel_workload.c" -lpthread
(cd "$here" && swift build -c release --product kernel-recorder-fixture >/dev/null)
fixture="$(cd "$here" && swift build -c release --show-bin-path)/kernel-recorder-fixture"
workload="$work/kernel_workload"

# (Not `| grep -q`: under pipefail, bpftool's SIGPIPE when grep stops early would read as "not loaded".)
probe_loaded() { [[ $(bpftool prog show 2>/dev/null) == *'name rlctl_kp_switch '* ]]; }
if probe_loaded; then echo "another kernel view is recording (rlctl_kp_switch is loaded): its cost would mix in" >&2; exit 1; fi

# Starts the recorder following a sleeping process (its programs then run on every switch of the machine and
# find nothing to record); sets $recorder_pid and $sleeper_pid.
attach_idle_recorder() {
    sleep 600 & sleeper_pid=$!
    pids+=("$sleeper_pid")
    "$fixture" follow "$sleeper_pid" 2>"$work/idle.err" & recorder_pid=$!
    pids+=("$recorder_pid")
    for _ in $(seq 200); do probe_loaded && break; sleep 0.05; done
    probe_loaded || { echo "the recorder did not attach: $(cat "$work/idle.err")" >&2; exit 1; }
}
detach_idle_recorder() {
    kill "$sleeper_pid"; wait "$recorder_pid" 2>/dev/null || true
    for _ in $(seq 100); do probe_loaded || break; sleep 0.02; done
}

pipe_op() { taskset -c 1 perf bench sched pipe -l "${PIPE_LOOPS:-200000}" 2>/dev/null | awk '/usecs\/op/ {print $1}'; }

echo "== 1. cost per context switch: taskset -c 1 perf bench sched pipe -l ${PIPE_LOOPS:-200000} (2 switches per op)"
plain_all=(); probed_all=()
for r in $(seq "$rounds"); do
    plain=$(pipe_op)
    attach_idle_recorder
    probed=$(pipe_op)
    detach_idle_recorder
    plain_all+=("$plain"); probed_all+=("$probed")
    printf 'round %d: plain %s us/op, probe attached %s us/op, %+.3f us per switch\n' "$r" "$plain" "$probed" \
        "$(echo "($probed - $plain) / 2" | bc -l)"
done
mp=$(median "${plain_all[@]}"); mb=$(median "${probed_all[@]}")
printf 'median: plain %s us/op, probe attached %s us/op: %+.3f us per context switch\n' "$mp" "$mb" "$(echo "($mb - $mp) / 2" | bc -l)"

for rate in "${PINGPONG_RATE:-50000}" 0; do
    label=$([ "$rate" = 0 ] && echo "unpaced" || echo "paced at $rate rounds/s")
    echo "== 2. records lost: kernel_workload pingpong ${PINGPONG_ROUNDS:-300000} $rate (two followed threads, pipes, $label)"
    for r in $(seq "$rounds"); do
        echo -n "round $r plain:    "; "$workload" pingpong "${PINGPONG_ROUNDS:-300000}" "$rate" | grep rounds
        echo -n "round $r followed: "; "$fixture" record -- "$workload" pingpong "${PINGPONG_ROUNDS:-300000}" "$rate" 2>"$work/pp.err" | grep rounds
        echo "                  $(cat "$work/pp.err")"
    done
done

echo "== 3. 1 kHz timerfd loop lateness: kernel_workload timerfd 1000 ${TIMER_TICKS:-3000}"
for r in $(seq "$rounds"); do
    echo -n "round $r plain:    "; "$workload" timerfd 1000 "${TIMER_TICKS:-3000}" | grep lateness
    echo -n "round $r followed: "; "$fixture" record -- "$workload" timerfd 1000 "${TIMER_TICKS:-3000}" 2>"$work/t.err" | grep lateness
    echo "                  $(cat "$work/t.err")"
done

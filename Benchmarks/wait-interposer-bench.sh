#!/bin/bash
# Cost of the wait interposer per wrapped wait (issue 13's goal: <= 100 ns): ns per epoll_wait(ep, ev, 1, 0)
# plain, preloaded but not recording (the root pid does not match), recording with the embedded recorder, and
# recording through LTTng (where `lttng` and a session daemon answer; a session with the runloop:* events enabled).
# Medians of RUNS runs of CALLS calls each, side by side (and the median of each round's difference from its plain
# run); the events each tracer dropped are counted.
#   Benchmarks/wait-interposer-bench.sh [RUNS=7] [CALLS=200000]
# Builds rlctl (which builds librlctl-wait-interposer.so) unless RLCTL_WAIT_INTERPOSER names the library.
set -euo pipefail
runs=${1:-7}
calls=${2:-200000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
library=${RLCTL_WAIT_INTERPOSER:-}
if [ -z "$library" ]; then
    (cd "$root" && swift build --product rlctl >/dev/null)
    library=$(cd "$root" && ls "$(swift build --show-bin-path)"/*_CWaitInterposer.resources/librlctl-wait-interposer.so | head -1)
fi
provider=${RLCTL_LTTNG_PROVIDER:-$(ls "$(dirname "$(dirname "$library")")"/*_CRunLoopTracepoints.resources/librunloop-lttng-provider.so 2>/dev/null | head -1)}
with_lttng=0
if [ -n "$provider" ] && command -v lttng >/dev/null && lttng list >/dev/null 2>&1; then with_lttng=1; fi
cc -O2 -o "$work/bench" "$root/Benchmarks/wait-interposer-bench.c"
uuid=00112233445566778899aabbccddeeff

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

plain=() idle=() recording=() lttng_runs=() discarded=0 lttng_discarded=0
for run in $(seq "$runs"); do
    # Interleaved, so that a slower stretch of the machine hits every variant alike.
    plain+=("$("$work/bench" "$calls")")
    idle+=("$(LD_PRELOAD=$library RLCTL_ANY_TRACE_DIR=$work/idle RLCTL_ANY_UUID=$uuid RLCTL_ANY_TRACER=embedded \
        RLCTL_ANY_ROOT_PID=1 "$work/bench" "$calls")")
    trace=$work/trace-$run
    mkdir -p "$trace"
    # 16 MiB per thread: a run's events (43 bytes per wait) fit without drops between the writer's passes.
    recording+=("$(LD_PRELOAD=$library RLCTL_ANY_TRACE_DIR=$trace RLCTL_ANY_UUID=$uuid RLCTL_ANY_TRACER=embedded \
        RLCTL_ANY_SUB_BUFFER_COUNT=64 "$work/bench" "$calls")")
    discarded=$((discarded + $(sed -n 's/^events_discarded=//p' "$trace"/.proc-*.end)))
    if [ "$with_lttng" = 1 ]; then
        session=waitbench-$$-$run
        mkdir -p "$work/lttng-marks-$run"
        lttng create "$session" --output="$work/lttng-$run" >/dev/null
        # Buffers that hold a whole run, as the embedded variant's do.
        lttng enable-channel -u --subbuf-size=4M --num-subbuf=8 -s "$session" bench >/dev/null
        lttng enable-event -u 'runloop:*' -c bench -s "$session" >/dev/null
        lttng start "$session" >/dev/null
        lttng_runs+=("$(LD_PRELOAD=$library RLCTL_ANY_TRACE_DIR=$work/lttng-marks-$run RLCTL_ANY_UUID=$uuid RLCTL_ANY_TRACER=lttng \
            RLCTL_ANY_LTTNG_PROVIDER=$provider "$work/bench" "$calls")")
        stopped=$(lttng stop "$session" 2>&1)
        lttng destroy "$session" >/dev/null
        lttng_discarded=$((lttng_discarded + $(sed -n 's/.* \([0-9][0-9]*\) events were discarded.*/\1/p' <<< "$stopped" | head -1 | grep . || echo 0)))
    fi
done
# Each variant's cost as the median of its per-round differences from that round's plain run: the machine's
# slower stretches move both runs of a round alike.
paired() { local -n runs=$1; for k in "${!runs[@]}"; do echo "${runs[$k]} - ${plain[$k]}" | bc -l; done | median; }
p=$(printf '%s\n' "${plain[@]}" | median)
i=$(printf '%s\n' "${idle[@]}" | median)
r=$(printf '%s\n' "${recording[@]}" | median)
echo "ns per epoll_wait(ep, ev, 1, 0), median of $runs runs of $calls calls ($(nproc) CPUs)"
printf '%-36s %8s %8s %10s %16s\n' variant ns/call ratio "+ns/call" "+ns/call paired"
printf '%-36s %8.1f %8s %10s %16s\n' plain "$p" 1.00 - -
printf '%-36s %8.1f %8.2f %+10.1f %+16.1f\n' "preloaded, not recording" "$i" "$(echo "$i / $p" | bc -l)" "$(echo "$i - $p" | bc -l)" "$(paired idle)"
printf '%-36s %8.1f %8.2f %+10.1f %+16.1f\n' "recording (embedded)" "$r" "$(echo "$r / $p" | bc -l)" "$(echo "$r - $p" | bc -l)" "$(paired recording)"
if [ "$with_lttng" = 1 ]; then
    l=$(printf '%s\n' "${lttng_runs[@]}" | median)
    printf '%-36s %8.1f %8.2f %+10.1f %+16.1f\n' "recording (LTTng session)" "$l" "$(echo "$l / $p" | bc -l)" "$(echo "$l - $p" | bc -l)" "$(paired lttng_runs)"
fi
echo "events discarded while recording: embedded $discarded$([ "$with_lttng" = 1 ] && echo ", LTTng $lttng_discarded")"
echo "runs: plain ${plain[*]} | not recording ${idle[*]} | recording ${recording[*]}$([ "$with_lttng" = 1 ] && echo " | LTTng ${lttng_runs[*]}")"
[ "$with_lttng" = 1 ] || echo "(no LTTng variant: lttng-tools, a session daemon or the provider library is missing)"

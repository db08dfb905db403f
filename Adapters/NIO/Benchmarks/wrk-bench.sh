#!/usr/bin/env bash
# Requests/s of the example server under wrk, and the server's CPU time per request: the untraced twin, the traced
# server with no sink, the traced server recording with the embedded recorder and, where `rlctl doctor` passes,
# recorded by an LTTng session (rlctl record --tracer lttng); ROUNDS interleaved rounds (default 5), the median of
# each round's ratio to that round's untraced run. Where the kernel view is available (root, BTF, libbpf), also
# `rlctl record --tracer embedded` with --kernel off and with --kernel on: the kernel view's own cost is the median
# of each round's kernel-on ÷ kernel-off (issue 28's goal: requests/s ≥ 0.97×).
#
# The server runs one event loop pinned to CPU 0 and wrk one thread pinned to CPU 1, so the server is saturated
# and requests/s is the inverse of its CPU time per request. That CPU time (user + system, from /proc, over wrk's
# run only) is the steadier figure on a shared virtual machine: time the host gives other guests (steal) is in
# neither, while it moves requests/s by tens of percent from run to run.
# Build first: swift build -c release --package-path Adapters/NIO && swift build -c release --product rlctl
# Usage: Adapters/NIO/Benchmarks/wrk-bench.sh [ROUNDS]   (needs wrk and taskset: scripts/install-deps.sh)
set -euo pipefail
rounds=${1:-5}
bin=$(swift build -c release --package-path "$(dirname "$0")/.." --show-bin-path)
rlctl=$(swift build -c release --package-path "$(dirname "$0")/../../.." --show-bin-path)/rlctl
variants=(untraced no_sink embedded)
if [ -x "$rlctl" ] && "$rlctl" doctor --start-daemon >/dev/null 2>&1; then variants+=(lttng); fi
kernel_rows=false
if [ -x "$rlctl" ] && "$rlctl" doctor 2>/dev/null | grep -Eq '^ *ok +kernel view'; then variants+=(record_off record_on); kernel_rows=true; fi
for tool in wrk taskset; do
    command -v "$tool" >/dev/null || { echo "wrk-bench: $tool is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "wrk-bench: needs 2 CPUs (the server on one, wrk on the other)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ticks=$(getconf CLK_TCK)

# CPU time of a process so far, in clock ticks (utime + stime, fields 14 and 15 of /proc/PID/stat).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# One wrk run against one server; prints "REQUESTS_PER_SECOND CPU_MICROSECONDS_PER_REQUEST".
measure() {
    local name=$1; shift
    env "$@" --port 0 --threads 1 --duration 9s > "$work/out" 2> "$work/err" &
    local launched=$!
    for _ in $(seq 400); do grep -q listening "$work/out" && break; sleep 0.05; done
    local port
    port=$(sed -n 's/^listening on 127.0.0.1://p' "$work/out")
    [ -n "$port" ] || { echo "wrk-bench: $name did not start: $(cat "$work/err")" >&2; exit 1; }
    # The server itself (also when rlctl record started it): the process listening on the port.
    local server
    server=$(ss -Hltnp "sport = :$port" | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1)
    [ -n "$server" ] || { echo "wrk-bench: no process listens on port $port" >&2; exit 1; }
    taskset -a -p -c 0 "$server" >/dev/null
    local before after
    before=$(cpu_ticks "$server")
    taskset -c 1 wrk -t1 -c32 -d5s "http://127.0.0.1:$port/" > "$work/wrk"
    after=$(cpu_ticks "$server")
    wait "$launched"
    awk -v b="$before" -v a="$after" -v hz="$ticks" '
        /^Requests\/sec/ {rps = $2}
        /requests in/ {n = $1}
        END {printf "%s %.3f\n", rps, (a - b) / hz * 1e6 / n}' "$work/wrk"
}

declare -A rps cpu
for round in $(seq "$rounds"); do
    echo "round $round/$rounds" >&2
    for variant in "${variants[@]}"; do
        case $variant in
            untraced) result=$(measure untraced "$bin/nio-http-server-untraced") ;;
            no_sink) result=$(measure no_sink "$bin/nio-http-server") ;;
            embedded)
                rm -rf "$work/trace"
                result=$(measure embedded RLCTL_TRACER=embedded RLCTL_TRACE_DIR="$work/trace" "$bin/nio-http-server") ;;
            lttng) result=$(measure lttng "$rlctl" record --tracer lttng -- "$bin/nio-http-server") ;;
            record_off) result=$(measure record_off "$rlctl" record --tracer embedded --kernel off -- "$bin/nio-http-server") ;;
            record_on) result=$(measure record_on "$rlctl" record --tracer embedded --kernel on -- "$bin/nio-http-server") ;;
        esac
        rps[$variant]+="${result% *} "
        cpu[$variant]+="${result#* } "
    done
done

median() { tr ' ' '\n' <<< "$1" | grep . | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# Median over rounds of (this variant's figure ÷ the untraced twin's in the same round).
median_ratio() {
    paste <(tr ' ' '\n' <<< "$1" | grep .) <(tr ' ' '\n' <<< "$2" | grep .) | awk '{print $1 / $2}' | tr '\n' ' '
}
printf '%-9s %12s %16s %22s %20s\n' variant requests/s 'ratio (median)' 'CPU µs per request' 'ratio (median)'
for variant in "${variants[@]}"; do
    printf '%-9s %12s %16s %22s %20s\n' "$variant" "$(median "${rps[$variant]}")" \
        "$(median "$(median_ratio "${rps[$variant]}" "${rps[untraced]}")")" \
        "$(median "${cpu[$variant]}")" "$(median "$(median_ratio "${cpu[$variant]}" "${cpu[untraced]}")")"
done
if $kernel_rows; then
    printf 'kernel view (record_on ÷ record_off, median of the rounds): requests/s %s, CPU µs per request %s\n' \
        "$(median "$(median_ratio "${rps[record_on]}" "${rps[record_off]}")")" "$(median "$(median_ratio "${cpu[record_on]}" "${cpu[record_off]}")")"
fi
echo "per round, requests/s:"
for variant in "${variants[@]}"; do echo "  $variant: ${rps[$variant]}"; done
echo "per round, CPU µs per request:"
for variant in "${variants[@]}"; do echo "  $variant: ${cpu[$variant]}"; done

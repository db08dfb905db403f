#!/usr/bin/env bash
# Requests/s of a Node.js HTTP server under wrk, run plainly, under `rlctl record --any` with the embedded recorder,
# with LTTng (where `rlctl doctor` passes), and under `strace -f -e trace=epoll_pwait -T` (the peer a user would reach
# for); ROUNDS interleaved rounds (default 3), medians and ratios to the plain run, for requests/s and for the
# server's CPU time per request. The server is
# Tests/rlctlTests/AnyPrograms/node-server.js with its CPU burner off.
# Build first: swift build -c release --product rlctl
# Usage: Benchmarks/any-node-bench.sh [ROUNDS]   (needs node, wrk and strace: scripts/install-deps.sh)
# With two or more CPUs the server (and whatever records it) runs on the last CPU and wrk on the others, so that
# the two do not take each other's time slices: the figures then move less from run to run.
set -euo pipefail
rounds=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
rlctl=$(swift build -c release --package-path "$root" --show-bin-path)/rlctl
server=$root/Tests/rlctlTests/AnyPrograms/node-server.js
for tool in node wrk strace; do
    command -v $tool >/dev/null || { echo "any-node-bench: $tool is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
[ -x "$rlctl" ] || { echo "any-node-bench: build rlctl first: swift build -c release --product rlctl" >&2; exit 1; }
variants=(plain embedded)
if "$rlctl" doctor --start-daemon >/dev/null 2>&1; then variants+=(lttng); fi
variants+=(strace)
cpus=$(nproc)
server_cpu=(env) load_cpu=(env)
if [ "$cpus" -ge 2 ] && command -v taskset >/dev/null; then
    server_cpu=(taskset -c $((cpus - 1))) load_cpu=(taskset -c 0-$((cpus - 2)))
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# CPU time of a process so far, in clock ticks (utime + stime, fields 14 and 15 of /proc/PID/stat): all its
# threads, the interposer's writer or flusher among them.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks_per_second=$(getconf CLK_TCK)

# One wrk run against one server started by "$@" (the server's own arguments follow); prints its requests/s and
# the server's CPU time per request in µs over wrk's run (wall time on this machine moves by ±10% from run to run;
# CPU per request is what the interposer adds to).
measure() {
    local name=$1; shift
    local port=$((20000 + RANDOM % 20000))
    "${server_cpu[@]}" "$@" node "$server" "$port" 7 1000000 0 "$work/report.json" > "$work/out" 2> "$work/err" &
    local pid=$!
    for _ in $(seq 400); do grep -q listening "$work/out" && break; sleep 0.05; done
    grep -q listening "$work/out" || { echo "any-node-bench: $name did not start: $(cat "$work/err")" >&2; exit 1; }
    # The server itself (under rlctl or strace too): the process listening on the port.
    local node_pid
    node_pid=$(ss -Hltnp "sport = :$port" | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1)
    local before
    before=$(cpu_ticks "$node_pid")
    "${load_cpu[@]}" wrk -t1 -c32 -d4s "http://127.0.0.1:$port/" > "$work/wrk"
    local after
    after=$(cpu_ticks "$node_pid")
    awk -v used=$((after - before)) -v hz="$ticks_per_second" '
        /requests in/ { requests = $1 } /^Requests\/sec/ { rate = $2 }
        END { printf "%s %.2f", rate, used / hz * 1e6 / requests }' "$work/wrk"
    wait "$pid" || { echo "any-node-bench: $name failed: $(tail -3 "$work/err")" >&2; exit 1; }
}

declare -A results cpu
for round in $(seq "$rounds"); do
    # The order rotates from round to round: whichever runs first after a pause runs on a machine in another state.
    count=${#variants[@]}
    for step in $(seq 0 $((count - 1))); do
        variant=${variants[$(((step + round) % count))]}
        case $variant in
            plain) figures=$(measure plain env) ;;
            embedded) figures=$(measure embedded "$rlctl" record --any --tracer embedded --) ;;
            lttng) figures=$(measure lttng "$rlctl" record --any --tracer lttng --) ;;
            strace) figures=$(measure strace strace -f -e trace=epoll_pwait -T -o /dev/null) ;;
        esac
        results[$variant]+="${figures% *} "
        cpu[$variant]+="${figures#* } "
    done
done
median() { tr ' ' '\n' <<< "$1" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
base=$(median "${results[plain]}")
read -ra plain_runs <<< "${results[plain]}"
read -ra plain_cpu <<< "${cpu[plain]}"
for variant in "${variants[@]}"; do
    m=$(median "${results[$variant]}")
    # Each round's ratio to that round's plain run, then their median: the machine's drift over the rounds cancels.
    read -ra runs <<< "${results[$variant]}"
    ratios=""
    for i in "${!runs[@]}"; do ratios+="$(awk -v a="${runs[$i]}" -v b="${plain_runs[$i]}" 'BEGIN {printf "%.3f", a / b}') "; done
    echo "$variant: runs ${results[$variant]}median $m requests/s, $(awk -v m="$m" -v b="$base" 'BEGIN {printf "%.3f", m / b}')× the plain run's median; per-round ratios ${ratios}median $(median "$ratios")"
    read -ra used <<< "${cpu[$variant]}"
    cpu_ratios=""
    for i in "${!used[@]}"; do cpu_ratios+="$(awk -v a="${used[$i]}" -v b="${plain_cpu[$i]}" 'BEGIN {printf "%.3f", a / b}') "; done
    echo "$variant: server CPU µs per request ${cpu[$variant]}median $(median "${cpu[$variant]}"); per-round ratios ${cpu_ratios}median $(median "$cpu_ratios")"
done

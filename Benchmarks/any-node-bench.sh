#!/usr/bin/env bash
# Requests/s of a Node.js HTTP server under wrk, run plainly, under `rlctl record --any` with the embedded recorder,
# with LTTng (where `rlctl doctor` passes), and under `strace -f -e trace=epoll_pwait -T` (the peer a user would reach
# for); ROUNDS interleaved rounds (default 3), medians and ratios to the plain run. The server is
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

# One wrk run against one server started by "$@" (the server's own arguments follow); prints its requests/s.
measure() {
    local name=$1; shift
    local port=$((20000 + RANDOM % 20000))
    "${server_cpu[@]}" "$@" node "$server" "$port" 7 1000000 0 "$work/report.json" > "$work/out" 2> "$work/err" &
    local pid=$!
    for _ in $(seq 400); do grep -q listening "$work/out" && break; sleep 0.05; done
    grep -q listening "$work/out" || { echo "any-node-bench: $name did not start: $(cat "$work/err")" >&2; exit 1; }
    "${load_cpu[@]}" wrk -t1 -c32 -d4s "http://127.0.0.1:$port/" | awk '/^Requests\/sec/ {print $2}'
    wait "$pid" || { echo "any-node-bench: $name failed: $(tail -3 "$work/err")" >&2; exit 1; }
}

declare -A results
for round in $(seq "$rounds"); do
    for variant in "${variants[@]}"; do
        case $variant in
            plain) results[plain]+="$(measure plain env) " ;;
            embedded) results[embedded]+="$(measure embedded "$rlctl" record --any --tracer embedded --) " ;;
            lttng) results[lttng]+="$(measure lttng "$rlctl" record --any --tracer lttng --) " ;;
            strace) results[strace]+="$(measure strace strace -f -e trace=epoll_pwait -T -o /dev/null) " ;;
        esac
    done
done
median() { tr ' ' '\n' <<< "$1" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
base=$(median "${results[plain]}")
read -ra plain_runs <<< "${results[plain]}"
for variant in "${variants[@]}"; do
    m=$(median "${results[$variant]}")
    # Each round's ratio to that round's plain run, then their median: the machine's drift over the rounds cancels.
    read -ra runs <<< "${results[$variant]}"
    ratios=""
    for i in "${!runs[@]}"; do ratios+="$(awk -v a="${runs[$i]}" -v b="${plain_runs[$i]}" 'BEGIN {printf "%.3f", a / b}') "; done
    echo "$variant: runs ${results[$variant]}median $m requests/s, $(awk -v m="$m" -v b="$base" 'BEGIN {printf "%.3f", m / b}')× the plain run's median; per-round ratios ${ratios}median $(median "$ratios")"
done

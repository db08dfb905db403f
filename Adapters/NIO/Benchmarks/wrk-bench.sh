#!/usr/bin/env bash
# Requests/s of the example server under wrk: the untraced twin, the traced server with no sink, the traced
# server recording with the embedded recorder and, where `rlctl doctor` passes, recorded by an LTTng session
# (rlctl record --tracer lttng); ROUNDS interleaved rounds (default 3), medians and ratios to the untraced twin.
# Build first: swift build -c release --package-path Adapters/NIO && swift build -c release --product rlctl
# Usage: Adapters/NIO/Benchmarks/wrk-bench.sh [ROUNDS]   (needs wrk: scripts/install-deps.sh)
set -euo pipefail
rounds=${1:-3}
bin=$(swift build -c release --package-path "$(dirname "$0")/.." --show-bin-path)
rlctl=$(swift build -c release --package-path "$(dirname "$0")/../../.." --show-bin-path)/rlctl
variants=(untraced no_sink embedded)
if [ -x "$rlctl" ] && "$rlctl" doctor --start-daemon >/dev/null 2>&1; then variants+=(lttng); fi
command -v wrk >/dev/null || { echo "wrk-bench: wrk is not installed (scripts/install-deps.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One wrk run against one server; prints its requests/s.
measure() {
    local name=$1; shift
    env "$@" --port 0 --threads 2 --duration 7s > "$work/out" 2> "$work/err" &
    local server=$!
    for _ in $(seq 400); do grep -q listening "$work/out" && break; sleep 0.05; done
    local port
    port=$(sed -n 's/^listening on 127.0.0.1://p' "$work/out")
    [ -n "$port" ] || { echo "wrk-bench: $name did not start: $(cat "$work/err")" >&2; exit 1; }
    wrk -t2 -c32 -d4s "http://127.0.0.1:$port/" | awk '/^Requests\/sec/ {print $2}'
    wait "$server"
}

declare -A results
for round in $(seq "$rounds"); do
    results[untraced]+="$(measure untraced "$bin/nio-http-server-untraced") "
    results[no_sink]+="$(measure no_sink "$bin/nio-http-server") "
    rm -rf "$work/trace"
    results[embedded]+="$(measure embedded RLCTL_TRACER=embedded RLCTL_TRACE_DIR="$work/trace" "$bin/nio-http-server") "
    if [[ " ${variants[*]} " == *" lttng "* ]]; then
        results[lttng]+="$(measure lttng "$rlctl" record --tracer lttng -- "$bin/nio-http-server") "
    fi
done
median() { tr ' ' '\n' <<< "$1" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
base=$(median "${results[untraced]}")
for variant in "${variants[@]}"; do
    m=$(median "${results[$variant]}")
    echo "$variant: runs ${results[$variant]}median $m requests/s, $(awk -v m="$m" -v b="$base" 'BEGIN {printf "%.3f", m / b}')× the untraced twin"
done

#!/usr/bin/env bash
# Requests/s of the example server under wrk: the untraced twin, the traced server with no sink, and the traced
# server recording with the embedded recorder; ROUNDS interleaved rounds (default 3), medians at the end.
# Build first: swift build -c release --package-path Adapters/NIO
# Usage: Adapters/NIO/Benchmarks/wrk-bench.sh [ROUNDS]   (needs wrk: scripts/install-deps.sh)
set -euo pipefail
rounds=${1:-3}
bin=$(swift build -c release --package-path "$(dirname "$0")/.." --show-bin-path)
command -v wrk >/dev/null || { echo "wrk-bench: wrk is not installed (scripts/install-deps.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One wrk run against one server; prints its requests/s.
measure() {
    local name=$1; shift
    env "$@" --port 0 --threads 2 --duration 7s > "$work/out" 2> "$work/err" &
    local server=$!
    for _ in $(seq 100); do grep -q listening "$work/out" && break; sleep 0.05; done
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
done
for variant in untraced no_sink embedded; do
    median=$(tr ' ' '\n' <<< "${results[$variant]}" | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    echo "$variant: runs ${results[$variant]}median $median requests/s"
done

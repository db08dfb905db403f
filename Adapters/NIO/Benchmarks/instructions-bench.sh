#!/usr/bin/env bash
# Instructions per request of the example server, which a noisy machine does not change (wrk-bench.sh's
# requests/s cannot decide a 1% goal here): each variant runs under callgrind twice, idle and loaded by
# `wrk -t1 -c4 -d10s`, and the idle run's instructions (start-up, idle ticks) are taken off the loaded run's
# before dividing by wrk's request count. Variants: the untraced twin, the traced server outside rlctl (no sink:
# the adapter steps aside), the traced server recording with the embedded recorder, and, where `rlctl doctor`
# passes, recorded by an LTTng session (`rlctl record --tracer lttng -- valgrind … server`).
# Build first: swift build -c release --package-path Adapters/NIO && swift build -c release --product rlctl
# Usage: Adapters/NIO/Benchmarks/instructions-bench.sh   (needs valgrind and wrk: scripts/install-deps.sh)
set -euo pipefail
bin=$(swift build -c release --package-path "$(dirname "$0")/.." --show-bin-path)
rlctl=$(swift build -c release --package-path "$(dirname "$0")/../../.." --show-bin-path)/rlctl
for tool in valgrind wrk strip; do
    command -v "$tool" >/dev/null || { echo "instructions-bench: $tool is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Instructions of one server run under callgrind, loaded by wrk when $load is 1; prints "INSTRUCTIONS REQUESTS".
run() {
    local load=$1; shift
    rm -f "$work/callgrind.out"
    rm -rf "$work/lttng"
    env "$@" "${launcher[@]}" valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
        "${server[@]}" --port 0 --threads 1 --duration 25s > "$work/out" 2> "$work/err" &
    local pid=$!
    for _ in $(seq 1200); do grep -q listening "$work/out" && break; sleep 0.05; done
    local port
    port=$(sed -n 's/^listening on 127.0.0.1://p' "$work/out")
    [ -n "$port" ] || { echo "instructions-bench: the server did not start: $(tail -3 "$work/err")" >&2; exit 1; }
    local requests=0
    if [ "$load" = 1 ]; then
        requests=$(wrk -t1 -c4 -d10s "http://127.0.0.1:$port/" | awk '/requests in/ {print $1}')
    fi
    wait "$pid"
    echo "$(awk '/^(summary|totals):/ {print $2; exit}' "$work/callgrind.out") $requests"
}

measure() {
    local name=$1; shift
    read -r idle _ < <(run 0 "$@")
    rm -rf "$work/trace"
    read -r loaded requests < <(run 1 "$@")
    awk -v n="$name" -v i="$idle" -v l="$loaded" -v r="$requests" \
        'BEGIN { printf "%s: %d requests, %.1f k instructions per request\n", n, r, (l - i) / r / 1000 }' | tee -a "$work/results"
}

# Stripped copies: valgrind gives up on the Swift binaries' debug information ("possibly corrupted").
for program in nio-http-server nio-http-server-untraced; do
    cp "$bin/$program" "$work/$program" && strip -g "$work/$program"
done
launcher=()
server=("$work/nio-http-server-untraced"); measure untraced PATH="$PATH"
server=("$work/nio-http-server"); measure no_sink PATH="$PATH"
server=("$work/nio-http-server"); measure embedded RLCTL_TRACER=embedded RLCTL_TRACE_DIR="$work/trace"
if [ -x "$rlctl" ] && "$rlctl" doctor --start-daemon >/dev/null 2>&1; then
    # The copy is not beside its provider library; lttng-ust under valgrind needs longer than 3 s to register.
    provider=$(find "$bin" -name librunloop-lttng-provider.so | head -1)
    launcher=("$rlctl" record --tracer lttng --output "$work/lttng" --)
    measure lttng RLCTL_LTTNG_PROVIDER="$provider" LTTNG_UST_REGISTER_TIMEOUT=-1
fi
base=$(awk -F'[ ,]+' '/^untraced:/ {print $4}' "$work/results")
awk -F'[ ,]+' -v b="$base" '{printf "%-9s %.3f× the untraced twin\n", $1, $4 / b}' "$work/results"

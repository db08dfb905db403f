#!/usr/bin/env bash
# The adapter's own cost per request of the example server, with no sink, recording with the embedded recorder
# and recorded by an LTTng session (where `rlctl doctor` passes): nio-io-bench times a request's two pipeline
# events (channelRead, channelReadComplete) with the adapter's ChannelHandler and without it, on an
# EmbeddedChannel, so neither the kernel nor the machine's noise is in the difference. Each recording must come
# back with no event lost (a dropped event costs less than a written one). Divide the "added" figure by the
# untraced server's CPU time per request (wrk-bench.sh) for the adapter's share of a request.
# Build first: swift build -c release --package-path Adapters/NIO && swift build -c release --product rlctl
# Usage: Adapters/NIO/Benchmarks/event-cost-bench.sh [ROUNDS]   (default 15)
set -euo pipefail
rounds=${1:-15}
bin=$(swift build -c release --package-path "$(dirname "$0")/.." --show-bin-path)
rlctl=$(swift build -c release --package-path "$(dirname "$0")/../../.." --show-bin-path)/rlctl
[ -x "$bin/nio-io-bench" ] || { echo "event-cost-bench: build first: swift build -c release --package-path Adapters/NIO" >&2; exit 1; }
[ -x "$rlctl" ] || { echo "event-cost-bench: build first: swift build -c release --product rlctl" >&2; exit 1; }
tracers=(embedded)
if "$rlctl" doctor --start-daemon >/dev/null 2>&1; then tracers+=(lttng); fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin/nio-io-bench" --rounds "$rounds"
for tracer in "${tracers[@]}"; do
    "$rlctl" record --tracer "$tracer" --output "$work/$tracer" -- "$bin/nio-io-bench" --rounds "$rounds" > "$work/out" 2>&1 \
        || { cat "$work/out" >&2; exit 1; }
    grep 'ns per request' "$work/out"
    grep -q 'none lost' "$work/out" || { echo "event-cost-bench: the $tracer recording lost events, its figure is too low:" >&2; grep -A1 '^trace:' "$work/out" >&2; exit 1; }
done
[ "${#tracers[@]}" -gt 1 ] || echo "(no LTTng row: rlctl doctor does not pass here)"

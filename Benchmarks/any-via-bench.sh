#!/bin/bash
# What `rlctl record --any`'s mechanisms cost a wait (--any-via): ns per epoll_wait(ep, ev, 1, 0) of
# wait-interposer-bench.c run under rlctl with --any-via preload (the interposer alone: what auto does for one
# dynamic program), --any-via auto --follow-children (the interposer, with the kernel's wait programs loaded for
# what it may not reach: this thread is claimed, so the kernel only looks at each wait and lets it go), --any-via
# kernel (the kernel alone), and built static under auto (the kernel records it). Rounds interleave; medians, and the median of each round's difference from its preload run.
#   Benchmarks/any-via-bench.sh [ROUNDS=5] [CALLS=1000000]   (root; a release rlctl: swift build -c release --product rlctl)
set -euo pipefail
source "$(dirname "$0")/bench-lib.sh"
rounds=${1:-5}
calls=${2:-1000000}
root=$(cd "$(dirname "$0")/.." && pwd)
rlctl=${RLCTL:-$root/.build/release/rlctl}
[ -x "$rlctl" ] || { echo "any-via-bench: no $rlctl (swift build -c release --product rlctl)" >&2; exit 2; }
bench_workspace any-via-bench
cc -O2 -o "$work/bench" "$root/Benchmarks/wait-interposer-bench.c"
cc -O2 -static -o "$work/bench-static" "$root/Benchmarks/wait-interposer-bench.c"

# Runs the bench under rlctl; prints its ns per call, and checks that the summary holds every wait, none lost.
run() {
    local via=$1 program=$2 extra=${3:-}
    local ns
    local tracer=(--tracer embedded)
    [ "$via" = kernel ] && tracer=()
    ns=$("$rlctl" record --any --any-via "$via" ${extra} "${tracer[@]}" --format json --summary "$work/summary.json" -- "$program" "$calls" 2>/dev/null)
    python3 - "$work/summary.json" "$calls" "$via" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
waits = sum(loop["waits"] for loop in summary["waits"]["loops"])
lost = summary["health"]["eventsLost"]
if waits < int(sys.argv[2]) or lost:
    sys.exit(f"any-via-bench: {sys.argv[3]}: {waits} waits in the summary, {lost} events lost")
PY
    echo "$ns"
}

declare -A ns
for round in $(seq "$rounds"); do
    for variant in preload auto kernel static; do
        case $variant in
            static) value=$(run auto "$work/bench-static") ;;
            auto) value=$(run auto "$work/bench" --follow-children) ;;
            *) value=$(run "$variant" "$work/bench") ;;
        esac
        ns[$variant]+="$value "
    done
done
read -ra base <<< "${ns[preload]}"
printf '%-44s %10s %16s\n' "per epoll_wait ($rounds rounds x $calls calls)" "ns/call" "+ns vs preload"
for variant in preload auto kernel static; do
    read -ra values <<< "${ns[$variant]}"
    added=()
    for k in "${!values[@]}"; do added+=("$(echo "${values[$k]} - ${base[$k]}" | bc -l)"); done
    case $variant in
        preload) label="--any-via preload (the interposer alone)" ;;
        auto) label="--any --follow-children (auto): both" ;;
        kernel) label="--any-via kernel (the kernel alone)" ;;
        static) label="--any (auto), the program built static" ;;
    esac
    printf '%-44s %10.1f %+16.1f\n' "$label" "$(median "${values[@]}")" "$(median "${added[@]}")"
done

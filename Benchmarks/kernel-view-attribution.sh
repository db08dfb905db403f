#!/usr/bin/env bash
# Is the kernel view's attribution complete, and what does it cost? Side by side in one run (issue 28, "Performance"):
#   1. attribution: the hog experiment (two CPU hogs beside `rlctl run jank` on CPU 0), the quota experiment (a cgroup
#      with 20 ms of CPU per 100 ms holding a hog on CPU 1 and jank on CPU 0), a SwiftNIO server under wrk beside a
#      hog (`rlctl record -- nio-http-server`) and a Node.js server beside a hog (`rlctl record --any -- node`); from
#      each summary's JSON: every stall's parts (on CPU + waiting for a CPU + throttled + blocked + asleep) against
#      its busy time, and every loop's late wake-up parts against their lateness, within 5%;
#   2. cost: a 1 kHz timer loop's lateness p50 (`rlctl run timers --count 1 --interval 1ms`) with `--kernel on`
#      against `--kernel off`, and a SwiftNIO server's requests/s under wrk recorded by `rlctl record` with
#      `--kernel on` against `--kernel off`; ROUNDS rounds (default 5), alternating, medians and the median ratio.
# Needs root (the kernel view), the cpu cgroup controller (v1 or v2), taskset, wrk, node, python3. Builds first
# (release, rlctl and Adapters/NIO) unless SKIP_BUILD=1. Every process it starts is killed, its cgroup removed and its
# temporary folder deleted on every way out (KEEP=DIR keeps the summaries' JSON there).
#   usage: Benchmarks/kernel-view-attribution.sh [ROUNDS]   (ONLY=attribution or ONLY=cost: one part)
set -euo pipefail
rounds=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
for tool in taskset wrk node python3 ss; do
    command -v "$tool" >/dev/null || { echo "kernel-view-attribution: $tool is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "kernel-view-attribution: needs 2 CPUs" >&2; exit 1; }
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    (cd "$root" && swift build -c release --product rlctl >/dev/null)
    swift build -c release --package-path "$root/Adapters/NIO" >/dev/null
fi
rlctl=$(swift build -c release --package-path "$root" --show-bin-path)/rlctl
nio_bin=$(swift build -c release --package-path "$root/Adapters/NIO" --show-bin-path)
nio_server=$nio_bin/nio-http-server
node_server=$root/Tests/rlctlTests/AnyPrograms/node-server.js
"$rlctl" doctor >/dev/null 2>&1 || true

work=$(mktemp -d /tmp/rlctl-kernel-attribution.XXXXXX)
cgroup=
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    # A process this script started that is still in the cgroup (a hog's child, a jank run): kill it too.
    if [ -n "$cgroup" ] && [ -f "$cgroup/cgroup.procs" ]; then
        while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done < "$cgroup/cgroup.procs"
    fi
    wait 2>/dev/null || true
    if [ -n "$cgroup" ] && [ -d "$cgroup" ]; then
        for _ in $(seq 50); do rmdir "$cgroup" 2>/dev/null && break; sleep 0.1; done
        [ -d "$cgroup" ] && echo "kernel-view-attribution: could not remove $cgroup" >&2
    fi
    if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$work"/*.json "$KEEP"/ 2>/dev/null || true; fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

hog() { # CPU [cgroup]: a CPU-bound sh pinned to CPU, in the cgroup when given; appends its pid to pids
    if [ -n "${2:-}" ]; then
        sh -c "echo \$\$ > $2/cgroup.procs && exec taskset -c $1 sh -c 'while :; do :; done'" & pids+=($!)
    else
        taskset -c "$1" sh -c 'while :; do :; done' & pids+=($!)
    fi
    disown $!   # no "Killed" notice when it is stopped
}
stop_hogs() {
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.02; done; done
    pids=()
}

check() { python3 -c "$checker" "$@"; }
checker=$(cat <<'PY'
import json
import sys

label, path = sys.argv[1], sys.argv[2]
tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05
with open(path) as f:
    text = f.read()
# A recording's stdout may hold the program's own lines before the summary: the JSON is the last top-level object.
start = text.find('\n{') + 1 if not text.lstrip().startswith('{') else text.find('{')
summary = json.loads(text[start:])


def split_sum(k):
    return (k.get('onCPUNanoseconds', 0) + k.get('runQueueNanoseconds', 0) + k.get('throttledNanoseconds', 0)
            + k.get('blockedNanoseconds', 0) + k.get('asleepNanoseconds', 0))


def late_sum(p):
    keys = ['armedLateNanoseconds', 'timerSlackNanoseconds', 'interruptDeliveryNanoseconds', 'wakePathNanoseconds',
            'runQueueNanoseconds', 'throttledNanoseconds', 'returnPathNanoseconds']
    return sum(p.get(k, 0) for k in keys) + split_sum(p.get('loopWork', {}))


def ms(ns):
    return f'{ns / 1e6:.2f}ms'


stalls, facets, bad = [], [], []


def walk(node, where):
    if isinstance(node, dict):
        k = node.get('kernel')
        if isinstance(k, dict) and 'busyNanoseconds' in node and 'onCPUNanoseconds' in k:
            stalls.append((where, node['busyNanoseconds'], k))
        if isinstance(k, dict) and 'lateWakeUps' in k and 'busy' in k and where != '$.kernel':
            facets.append((where, k, node.get('busyNanoseconds')))
        for key, value in node.items():
            walk(value, f'{where}.{key}')
    elif isinstance(node, list):
        for i, value in enumerate(node):
            walk(value, f'{where}[{i}]')


walk(summary, '$')
# A stall is listed in its loop and again in `overall`: check each once.
seen = set()
worst_error = 0.0
checked_stalls = 0
for where, busy, k in stalls:
    key = (busy, json.dumps(k, sort_keys=True))
    if key in seen:
        continue
    seen.add(key)
    checked_stalls += 1
    total = split_sum(k)
    error = abs(total - busy) / busy if busy else 0.0
    worst_error = max(worst_error, error)
    if error > tolerance:
        node_json = json.dumps({key: value for key, value in k.items() if key != 'culprits'}, sort_keys=True)
        bad.append(f'stall {where}: parts {ms(total)} vs busy {ms(busy)} ({error:+.1%}): kernel {node_json}')

checked_late = 0
late_worst = 0.0
checked_loops = 0
for where, k, loop_busy in facets:
    late = k['lateWakeUps']
    b = k['busy']
    # The loop's busy time split, against the loop's own busy time (only where the view covers the whole loop).
    if loop_busy and k.get('coversWholeLoop'):
        checked_loops += 1
        error = abs(split_sum(b) - loop_busy) / loop_busy
        worst_error = max(worst_error, error)
        if error > tolerance:
            bad.append(f'loop {where}: busy split {ms(split_sum(b))} vs busy {ms(loop_busy)} ({error:+.1%})')
    parts = late_sum(late.get('parts', {}))
    lateness = late.get('latenessNanoseconds', 0)
    error = abs(parts - lateness) / lateness if lateness else 0.0
    late_worst = max(late_worst, error)
    if late.get('explained', 0) and not where.endswith('overall'):  # `overall` is every loop's again
        checked_late += late['explained']
    if error > tolerance:
        bad.append(f'late wake-ups {where}: parts {ms(parts)} vs lateness {ms(lateness)} ({error:+.1%})')
    culprits = ', '.join(f"{c.get('command', '?')} (pid {c.get('pid', '?')}) {ms(c['nanoseconds'])}"
                         for c in (b.get('culprits') or [])[:3])
    print(f'{label}: {where}: busy split {ms(b.get("onCPUNanoseconds", 0))} on CPU, '
          f'{ms(b.get("runQueueNanoseconds", 0))} waiting for a CPU, {ms(b.get("throttledNanoseconds", 0))} throttled, '
          f'{ms(b.get("blockedNanoseconds", 0))} blocked{" (behind " + culprits + ")" if culprits else ""}; '
          f'late wake-ups {late.get("count", 0)} ({late.get("explained", 0)} explained), lateness {ms(lateness)}, '
          f'parts {ms(parts)}; lost records affecting {k.get("lostRecordsAffecting", 0)}')

for where, busy, k in stalls[:3]:
    print(f'{label}: stall {where}: busy {ms(busy)} = {ms(k.get("onCPUNanoseconds", 0))} on CPU + '
          f'{ms(k.get("runQueueNanoseconds", 0))} run queue + {ms(k.get("throttledNanoseconds", 0))} throttled + '
          f'{ms(k.get("blockedNanoseconds", 0))} blocked + {ms(k.get("asleepNanoseconds", 0))} asleep'
          f'{" (incomplete)" if k.get("incomplete") else ""}')
# Not only the sum (on CPU is the window minus its parts off the CPU, so the sum is exact unless they overrun it):
# the on-CPU part of each stall, to hold against what the workload burns (jank's --cost).
oncpu = sorted(k.get('onCPUNanoseconds', 0) for _, _, k in stalls)
if oncpu:
    print(f'{label}: on CPU per stall: min {ms(oncpu[0])}, median {ms(oncpu[len(oncpu) // 2])}, max {ms(oncpu[-1])}; '
          f'stalls whose parts off the CPU exceed their busy time: '
          f'{sum(1 for _, busy, k in stalls if split_sum(k) - k.get("onCPUNanoseconds", 0) > busy)}')
status = (summary.get('kernel') or {}).get('status', 'absent')
print(f'{label}: kernel view {status}; {checked_loops} loops\' busy time and {checked_stalls} stalls checked, worst part-sum error {worst_error:.2%}; '
      f'{checked_late} late wake-ups explained, part-sum error {late_worst:.2%} -> '
      + ('FAIL' if bad else ('NOTHING TO CHECK' if not checked_loops and not checked_stalls and not checked_late else 'PASS')))
for line in bad:
    print(f'{label}:   {line}')
sys.exit(1 if bad else (3 if not checked_loops and not checked_stalls and not checked_late else 0))
PY
)

# A server under wrk (wrk pinned to CPU 1, the server to CPU 0); "$@" starts it and prints "listening on …:PORT".
# Prints the requests/s and the server process's CPU time (user + system, /proc) per request in µs over wrk's run:
# the steadier figure on a shared machine, where time others take moves requests/s by tens of percent.
# The server's own stdout (rlctl's summary among it) is left in $work/server.out.
under_wrk() {
    local seconds=$1; shift
    "$@" > "$work/server.out" 2> "$work/server.err" &
    local launched=$! port=
    pids+=("$launched")
    for _ in $(seq 400); do
        port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p; s/^listening on port \([0-9]*\).*/\1/p' "$work/server.out" | head -1)
        [ -n "$port" ] && break; sleep 0.05
    done
    [ -n "$port" ] || { echo "kernel-view-attribution: the server did not start: $(tail -3 "$work/server.err")" >&2; exit 1; }
    local server
    server=$(ss -Hltnp "sport = :$port" | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1)
    [ -n "$server" ] || { echo "kernel-view-attribution: no process listens on port $port" >&2; exit 1; }
    taskset -a -p -c 0 "$server" >/dev/null
    local before after
    before=$(awk '{print $14 + $15}' "/proc/$server/stat")
    run taskset -c 1 wrk -t1 -c32 -d"${seconds}s" "http://127.0.0.1:$port/" > "$work/wrk"
    after=$(awk '{print $14 + $15}' "/proc/$server/stat")
    wait "$launched" || { echo "kernel-view-attribution: the server failed: $(tail -3 "$work/server.err")" >&2; exit 1; }
    awk -v b="$before" -v a="$after" -v hz="$(getconf CLK_TCK)" '
        /^Requests\/sec/ {rps = $2} /requests in/ {n = $1}
        END {printf "%s %.2f\n", rps, (a - b) / hz * 1e6 / n}' "$work/wrk"
}

# Runs a command in the background and waits for it: a signal's trap then runs at once (bash defers it until a
# foreground command ends), and the cleanup kills it.
run() {
    "$@" & local child=$! status=0
    pids+=("$child")
    wait "$child" || status=$?
    local kept=() pid
    for pid in "${pids[@]}"; do [ "$pid" = "$child" ] || kept+=("$pid"); done
    pids=("${kept[@]}")
    return "$status"
}

failures=0
attribution() { # LABEL FILE
    if check "$1" "$2"; then :; else failures=$((failures + 1)); fi
}

if [ "${ONLY:-all}" != cost ]; then
echo "== 1. attribution is complete (parts within 5% of the loop's own figure: each loop's busy time, each stall's, the late wake-ups' lateness)"

echo "-- hog: two hogs on CPU 0; taskset -c 0 rlctl run jank --every 10 --cost 5ms --duration 3s --stall 8ms --kernel on --format json"
hog 0; hog 0
run taskset -c 0 "$rlctl" run jank --every 10 --cost 5ms --duration 3s --stall 8ms --kernel on --format json > "$work/hog.json"
stop_hogs
attribution hog "$work/hog.json"

echo "-- quota: a cgroup with 20 ms per 100 ms holding a hog on CPU 1 and, on CPU 0, rlctl run jank --every 5 --cost 2ms --duration 3s --stall 8ms --kernel on --format json"
if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    cgroup=/sys/fs/cgroup/rlctl-kernel-attribution-$$; mkdir "$cgroup"; echo "20000 100000" > "$cgroup/cpu.max"
else
    cgroup=/sys/fs/cgroup/cpu/rlctl-kernel-attribution-$$; mkdir "$cgroup"; echo 100000 > "$cgroup/cpu.cfs_period_us"
    echo 20000 > "$cgroup/cpu.cfs_quota_us"
fi
hog 1 "$cgroup"
run sh -c "echo \$\$ > $cgroup/cgroup.procs && exec taskset -c 0 '$rlctl' run jank --every 5 --cost 2ms --duration 3s --stall 8ms --kernel on --format json" > "$work/quota.json"
stop_hogs
for _ in $(seq 50); do rmdir "$cgroup" 2>/dev/null && break; sleep 0.1; done
[ -d "$cgroup" ] || cgroup=
attribution quota "$work/quota.json"

echo "-- NIO: a hog on CPU 0; rlctl record --kernel on --stall 4ms --format json -- nio-http-server --port 0 --threads 1 --duration 6s, wrk -t1 -c32 -d4s on CPU 1"
hog 0
result=$(under_wrk 4 "$rlctl" record --kernel on --stall 4ms --format json --summary "$work/nio.json" -- "$nio_server" --port 0 --threads 1 --duration 6s)
stop_hogs
echo "nio: ${result% *} requests/s beside the hog, ${result#* } us of the server's CPU per request"
attribution nio "$work/nio.json"

echo "-- Node --any: a hog on CPU 0; rlctl record --any --kernel on --stall 4ms --format json --summary FILE -- node node-server.js PORT 6 100 5 REPORT (a 5 ms burn every 100 ms), wrk -t1 -c32 -d4s on CPU 1"
hog 0
port=$((20000 + RANDOM % 20000))
result=$(under_wrk 4 taskset -c 0 "$rlctl" record --any --kernel on --stall 4ms --format json --summary "$work/node.json" -- node "$node_server" "$port" 6 100 5 "$work/node-report.json")
stop_hogs
echo "node: ${result% *} requests/s beside the hog, ${result#* } us of the server's CPU per request"
attribution node "$work/node.json"

fi # part 1

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
p50_us() { # the timer lateness p50 of a `run timers` JSON summary, in µs
    python3 -c '
import json, sys
def find(node):
    if isinstance(node, dict):
        if isinstance(node.get("timerLateness"), dict) and node["timerLateness"].get("count"):
            return node["timerLateness"]["p50"]
        for value in node.values():
            found = find(value)
            if found is not None: return found
    elif isinstance(node, list):
        for value in node:
            found = find(value)
            if found is not None: return found
print("%.1f" % (find(json.load(open(sys.argv[1]))) / 1000))' "$1"
}

if [ "${ONLY:-all}" != attribution ]; then
echo
echo "== 2a. cost: a 1 kHz timer loop's lateness p50, taskset -c 0 rlctl run timers --count 1 --interval 1ms --duration 5s --kernel on|off --format json, $rounds alternating rounds"
on=(); off=(); deltas=()
for r in $(seq "$rounds"); do
    # The order alternates from round to round.
    if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
    for mode in $order; do
        run taskset -c 0 "$rlctl" run timers --count 1 --interval 1ms --duration 5s --kernel "$mode" --format json > "$work/timers-$mode.json"
        declare "p50_$mode=$(p50_us "$work/timers-$mode.json")"
    done
    on+=("$p50_on"); off+=("$p50_off"); deltas+=("$(awk -v a="$p50_on" -v b="$p50_off" 'BEGIN {printf "%.1f", a - b}')")
    echo "round $r: p50 off ${p50_off} us, on ${p50_on} us"
done
delta=$(median "${deltas[@]}")
verdict=$(awk -v d="$delta" 'BEGIN {print (d <= 5 ? "PASS" : "FAIL")}')
echo "timer lateness p50: off median $(median "${off[@]}") us, on median $(median "${on[@]}") us; median of the rounds' differences ${delta} us (target <= +5 us): $verdict"
[ "$verdict" = PASS ] || failures=$((failures + 1))

echo
echo "== 2b. cost: nio-http-server's requests/s, rlctl record --kernel on|off -- nio-http-server --port 0 --threads 1 --duration 7s (CPU 0), wrk -t1 -c32 -d5s (CPU 1), $rounds alternating rounds"
on=(); off=(); ratios=(); cpus_on=(); cpus_off=(); cpu_ratios=()
for r in $(seq "$rounds"); do
    if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
    for mode in $order; do
        result=$(under_wrk 5 "$rlctl" record --kernel "$mode" -- "$nio_server" --port 0 --threads 1 --duration 7s)
        declare "rps_$mode=${result% *}" "cpu_$mode=${result#* }"
    done
    on+=("$rps_on"); off+=("$rps_off"); ratios+=("$(awk -v a="$rps_on" -v b="$rps_off" 'BEGIN {printf "%.4f", a / b}')")
    cpus_on+=("$cpu_on"); cpus_off+=("$cpu_off"); cpu_ratios+=("$(awk -v a="$cpu_on" -v b="$cpu_off" 'BEGIN {printf "%.4f", a / b}')")
    echo "round $r: off $rps_off req/s ($cpu_off us CPU/req), on $rps_on req/s ($cpu_on us CPU/req); requests/s ratio ${ratios[-1]}, CPU per request ratio ${cpu_ratios[-1]}"
done
ratio=$(median "${ratios[@]}")
verdict=$(awk -v q="$ratio" 'BEGIN {print (q >= 0.97 ? "PASS" : "FAIL")}')
echo "requests/s: off median $(median "${off[@]}"), on median $(median "${on[@]}"); median ratio on/off ${ratio} (target >= 0.97): $verdict"
echo "server CPU per request: off median $(median "${cpus_off[@]}") us, on median $(median "${cpus_on[@]}") us; median ratio on/off $(median "${cpu_ratios[@]}") (the steadier figure; 1/0.97 = 1.031 is the target's equivalent)"
[ "$verdict" = PASS ] || failures=$((failures + 1))

fi # part 2

echo
echo "kernel-view-attribution: $failures check(s) failed"
[ "$failures" = 0 ]

#!/bin/bash
# What `rlctl record --pid` costs, side by side in one run (issue 29, "Agreement and performance"), ROUNDS times,
# alternating plain and attached, medians and the median of the pairwise ratios:
#   1. per wait call: a program making N non-blocking epoll_wait calls, timed from inside, with rlctl attached to it
#      (every call goes through the syscall tracepoints' programs and sends one record) and without;
#   2. machine-wide: N getpid calls of a process nobody follows while rlctl is attached to another one (the syscall
#      tracepoints send every process's system calls through the kernel's slower entry path) and without;
#   3. a Go HTTP server (Go's runtime waits with raw epoll_pwait calls) under wrk -t1 -c8, requests/s attached and not;
#   5. nginx (one process, master_process off, a small static page) under wrk -t1 -c8, requests/s attached and not;
#   4. attach and detach latency: a 1 ms epoll loop's longest iteration in the 100 ms windows where rlctl attached or
#      detached, against its longest in the other windows.
# Needs root, cc, go (golang-go), wrk, nginx and a release build of rlctl (done here). Everything it starts is killed and its
# temporary folder removed on every way out; nothing stays loaded in the kernel (the probe goes with rlctl's process).
#   usage: Benchmarks/attach-bench.sh [ROUNDS]     (default 5; SECTIONS=13 runs sections 1 and 3 only)
set -euo pipefail
rounds=${1:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/Benchmarks/bench-lib.sh"
bench_workspace rlctl-attach-bench

cc -O2 -Wall -o "$work/workload" "$here/Benchmarks/attach/attach-workload.c"
(cd "$here/Benchmarks/attach" && go build -o "$work/go-server" go-server.go)
(cd "$here" && swift build -c release --product rlctl >/dev/null)
rlctl="$(cd "$here" && swift build -c release --show-bin-path)/rlctl"
workload="$work/workload"
calls=${CALLS:-2000000}
sections=${SECTIONS:-12345}
section() { [[ $sections == *$1* ]]; }

# attach PID SECONDS: rlctl attached to PID in the background (its pid in $rlctl_pid) until SECONDS passed or PID
# ended; returns once it says it is attached.
attach() {
    : >"$work/attach.err"
    "$rlctl" record --pid "$1" --duration "$2" --format json --summary "$work/summary.json" 2>"$work/attach.err" &
    rlctl_pid=$!
    pids+=($rlctl_pid)
    for _ in $(seq 1 200); do grep -q "attached to" "$work/attach.err" && break; sleep 0.05; done
}

# wrk_rounds SERVER PORT: once PORT answers, ROUNDS rounds of wrk -t1 -c8 -d4s against it, plain then with rlctl
# attached to SERVER; each round's requests/s and ratio, and the medians.
wrk_rounds() {
    local server=$1 port=$2 plain attached ratio
    for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
    : >"$work/plain"; : >"$work/attached"; : >"$work/ratio"
    for round in $(seq 1 "$rounds"); do
        plain=$(wrk -t1 -c8 -d4s "http://127.0.0.1:$port/" | awk '/Requests\/sec/ {print $2}')
        attach "$server" 600s
        attached=$(wrk -t1 -c8 -d4s "http://127.0.0.1:$port/" | awk '/Requests\/sec/ {print $2}')
        kill -INT "$rlctl_pid"; wait "$rlctl_pid" || true
        ratio=$(echo "scale=4; $attached / $plain" | bc)
        echo "  round $round: plain $plain, attached $attached, ratio $ratio"
        echo "$plain" >>"$work/plain"; echo "$attached" >>"$work/attached"; echo "$ratio" >>"$work/ratio"
    done
    echo "  median: plain $(median <"$work/plain"), attached $(median <"$work/attached"), ratio (pairwise) $(median <"$work/ratio")"
}

section 1 && {
echo "== 1. per wait call: $calls non-blocking epoll_wait calls, ns per call (ROUNDS=$rounds)"
: >"$work/plain"; : >"$work/attached"; : >"$work/ratio"
for round in $(seq 1 "$rounds"); do
    plain=$("$workload" waits "$calls" 0)
    "$workload" waits "$calls" 1500 >"$work/out" & program=$!; pids+=($program)
    attach "$program" 60s
    wait "$program"; attached=$(cat "$work/out")
    wait "$rlctl_pid" || true
    recorded=$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); loops = s.get("waits", {}).get("loops", [])
print("%d waits recorded in its loop, %s events lost" % (loops[0]["waits"] if loops else 0, s["health"]["eventsLost"]))' "$work/summary.json")
    echo "  round $round: plain $plain ns, attached $attached ns (+$(echo "$attached - $plain" | bc) ns); $recorded"
    echo "$plain" >>"$work/plain"; echo "$attached" >>"$work/attached"; echo "$attached - $plain" | bc >>"$work/ratio"
done
echo "  median: plain $(median <"$work/plain") ns, attached $(median <"$work/attached") ns, added per wait (pairwise) $(median <"$work/ratio") ns"

}
section 2 && {
echo "== 2. machine-wide: $calls getpid calls of a process nobody follows, ns per call"
sleep 600 & sleeper=$!; pids+=($sleeper)
: >"$work/plain"; : >"$work/attached"; : >"$work/ratio"
for round in $(seq 1 "$rounds"); do
    plain=$("$workload" getpid "$calls" 0)
    attach "$sleeper" 600s
    attached=$("$workload" getpid "$calls" 0)
    kill -INT "$rlctl_pid"; wait "$rlctl_pid" || true
    echo "  round $round: plain $plain ns, while rlctl is attached elsewhere $attached ns"
    echo "$plain" >>"$work/plain"; echo "$attached" >>"$work/attached"; echo "$attached - $plain" | bc >>"$work/ratio"
done
echo "  median: plain $(median <"$work/plain") ns, attached elsewhere $(median <"$work/attached") ns, added (pairwise) $(median <"$work/ratio") ns"

}
section 3 && {
echo "== 3. a Go HTTP server under wrk -t1 -c8 -d4s: requests/s"
port=$((20000 + RANDOM % 20000))
"$work/go-server" "$port" 0 & server=$!; pids+=($server)
wrk_rounds "$server" "$port"

}
section 5 && {
echo "== 5. nginx (one process) under wrk -t1 -c8 -d4s: requests/s"
port=$((20000 + RANDOM % 20000))
mkdir -p "$work/nginx/html" "$work/nginx/logs"
echo "hello" >"$work/nginx/html/index.html"
cat >"$work/nginx/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
error_log $work/nginx/logs/error.log;
pid $work/nginx/logs/nginx.pid;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $work/nginx/tmp;
    server { listen 127.0.0.1:$port; root $work/nginx/html; }
}
CONF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" & server=$!; pids+=($server)
wrk_rounds "$server" "$port"

}
section 4 && {
echo "== 4. attach and detach latency: a 1 ms epoll loop's longest iteration per 100 ms window"
monotonic_ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }
"$workload" tick 12 >"$work/tick" & ticker=$!; pids+=($ticker)
sleep 2
: >"$work/marks"
for round in 1 2 3; do
    before=$(monotonic_ms)
    attach "$ticker" 1s
    wait "$rlctl_pid" || true
    echo "$before $(monotonic_ms)" >>"$work/marks"
    sleep 1
done
wait "$ticker"
# A window is the attach's or detach's when it overlaps [before, after] of a round (rlctl's whole life).
awk 'NR == FNR { lo[NR] = $1; hi[NR] = $2; n = NR; next }
    { inside = 0; for (i = 1; i <= n; i++) if ($1 >= lo[i] && $1 - 100 <= hi[i]) inside = 1
      if (inside) { if ($2 > during) during = $2; d++ } else { if ($2 > other) other = $2; o++ } }
    END { printf "  longest iteration: %.2f ms in the %d windows while rlctl attached, recorded and detached (3 times), %.2f ms in the %d others\n", during / 1e6, d, other / 1e6, o }' \
    "$work/marks" "$work/tick"
}

#!/usr/bin/env bash
# How many runloop events per second one lttng-relayd takes from N hosts here before events are lost, and how
# rlctl reports the loss. The hosts are namespaces (scripts/lib/fleet-namespaces.sh: network, UTS and mount
# namespaces, each with its own session daemon and a veth link to the relay's namespace); each runs eventpump at
# the rate asked under `rlctl record --relayd`, all at once, for SECONDS. Then `rlctl summarize` of the relay's
# folder counts, per host, the events that arrived and the events the tracer discarded (which travel in the trace),
# and `rlctl record` said what each host discarded. Needs root.
#
#   bash Benchmarks/relay-fleet-bench.sh [--hosts N] [--seconds S] [--subbuf-size SIZE] RATE…
#   bash Benchmarks/relay-fleet-bench.sh --hosts 3 --seconds 3 100000 300000 1000000 2000000 4000000
# RATE is the target of events/s per host; SIZE the hosts' LTTng sub-buffers (default 1M; small ones make loss).
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=3 seconds=3 subbuf=1M rates=()
while [ $# -gt 0 ]; do
    case $1 in
        --hosts) hosts=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --subbuf-size) subbuf=$2; shift 2 ;;
        *) rates+=("$1"); shift ;;
    esac
done
[ ${#rates[@]} -gt 0 ] || rates=(100000 300000 1000000)
swift build -c release --product rlctl >/dev/null
swift build -c release --package-path Benchmarks --product eventpump >/dev/null
rlctl="$(swift build -c release --show-bin-path)/rlctl"
pump="$(swift build -c release --package-path Benchmarks --show-bin-path)/eventpump"
source scripts/lib/fleet-namespaces.sh
work=$(mktemp -d /tmp/relay-fleet-bench.XXXXXX)
fleet_make "$hosts"
trap 'fleet_teardown; rm -rf "$work"' EXIT

printf '%-12s %-6s %-16s %-16s %-14s %-16s %s\n' "asked/host" "hosts" "arrived/s" "arrived/s/host" "lost (trace)" "lost (record)" "relayd CPU"
for rate in "${rates[@]}"; do
    fleet_start_relay "$work/$rate"
    relayd=$(ip netns pids "$fleet_relay" | head -1)
    pids=()
    for n in "${fleet_hosts[@]}"; do
        fleet_run_host "$n" "$work/$rate-h$n" 0 "$rlctl" --subbuf-size "$subbuf" -- "$pump" "$rate" "$seconds" & pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    ticks=$(awk '{print $14 + $15}' "/proc/$relayd/stat")
    fleet_stop_relay
    sleep 0.5
    "$rlctl" summarize "$work/$rate" --format json >"$work/$rate.json" || true
    python3 - "$rate" "$hosts" "$seconds" "$ticks" "$(getconf CLK_TCK)" "$work" <<'PY'
import json, re, sys
rate, hosts, seconds, ticks, hz, work = sys.argv[1:]
text = open(f"{work}/{rate}.json").read()
document = json.loads(text) if text.strip() else {}
entries = document.get("hosts") or ([{"summary": document}] if document else [])
arrived = sum((e.get("summary") or {}).get("health", {}).get("eventsRead", 0) for e in entries)
lost = sum((e.get("summary") or {}).get("health", {}).get("eventsLost", 0) for e in entries)
said = []
for n in range(1, int(hosts) + 1):
    out = open(f"{work}/{rate}-h{n}/record.out").read()
    match = re.search(r"lost on this host: (none|\d+)", out)
    said.append("0" if not match or match.group(1) == "none" else match.group(1))
per_second = arrived / float(seconds)
print(f"{int(rate):<12,} {hosts:<6} {per_second:<16,.0f} {per_second / int(hosts):<16,.0f} {lost:<14,} {'+'.join(said):<16} {int(ticks) / int(hz) / float(seconds) * 100:.0f}% of a core")
PY
done

#!/usr/bin/env bash
# Three hosts streaming to one lttng-relayd, made of namespaces by scripts/lib/fleet-namespaces.sh and torn down
# at the end; RelayFleetTests reads what they leave in WORK:
#   - WORK/relay: the relay's output folder; WORK/hN: host N's `rlctl record --relayd` output and status, and
#     WORK/hN/local, the local recording of the same events;
#   - WORK/top.json: `rlctl top --relayd --once --format json` while the three hosts record;
#   - WORK/cut, WORK/cut-relay: host 1 again, streaming to a second relay daemon killed mid-session.
# Usage: relay-fleet.sh WORK RLCTL PROGRAM
set -euo pipefail
work=$1 rlctl=$2 program=$3
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib/fleet-namespaces.sh"

fleet_make 3
fleet_start_relay "$work/relay"
# Host 3 runs longer: its figures differ from the others', which a budget can tell apart.
# Each host's program starts once $go exists, so that the three run at the same time however long each host's
# set-up takes on a loaded machine (their own session daemon, then rlctl's session on the relay).
go="$work/go"
gated=(sh -c 'until [ -e "$0" ]; do sleep 0.05; done; exec "$@"' "$go" "$program")
fleet_run_host 1 "$work/h1" 1 "$rlctl" -- "${gated[@]}" 6 & first=$!
fleet_run_host 2 "$work/h2" 1 "$rlctl" -- "${gated[@]}" 6 & second=$!
fleet_run_host 3 "$work/h3" 1 "$rlctl" -- "${gated[@]}" 9 & third=$!
# Until the relay daemon lists at least $1 sessions (its live port listens on its own loopback), for up to 30 s;
# then says so on stderr and fails.
wait_for_relay_sessions() {
    local deadline=$((SECONDS + 30))
    while [ "$SECONDS" -lt "$deadline" ]; do
        [ "$(ip netns exec "$fleet_relay" babeltrace2 --input-format=lttng-live net://127.0.0.1 2>/dev/null | grep -c '/host/rlhost')" -ge "$1" ] && return 0
        sleep 0.1
    done
    echo "relay-fleet: the relay daemon did not list $1 session(s) within 30 s" >&2
    return 1
}
# Meanwhile every host's loops, live, from the relay's side, once the three sessions are there (the test says
# what is missing if they never are) and their programs run.
wait_for_relay_sessions 3 || true
touch "$go"
# A session is listed before its first live packet: again (a few times, while the hosts run) until a row shows
# for each host.
for _ in 1 2 3 4 5; do
    ip netns exec "$fleet_relay" "$rlctl" top --relayd net://127.0.0.1 --once --format json >"$work/top.json" 2>"$work/top.err" || true
    [ "$(grep -o '"RunLoopCore"' "$work/top.json" | wc -l)" -ge 3 ] && break
done
wait $first && wait $second && wait $third
fleet_stop_relay
sleep 0.3

fleet_start_relay "$work/cut-relay"
# Killed mid-session: once host 1 streams to it (a host's set-up, its own session daemon first, can take seconds
# on a loaded machine, and a relay gone before it would be refused, not cut off).
( wait_for_relay_sessions 1 || true; sleep 0.5; fleet_stop_relay KILL ) &
fleet_run_host 1 "$work/cut" 1 "$rlctl" -- "$program" 4
wait
echo "relay-fleet: done ($fleet_tag)"

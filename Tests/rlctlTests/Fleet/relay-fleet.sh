#!/usr/bin/env bash
# Three hosts streaming to one lttng-relayd, all made here and torn down at the end (RelayFleetTests reads what
# they leave in WORK):
#   - a network namespace for the relay daemon and one per host, joined by veth pairs (10.77.N.1 on the relay's
#     side, 10.77.N.2 on host N's); no address outside these namespaces;
#   - each host is also a UTS and mount namespace: its own hostname (rlhostN, the folder the relay files it
#     under), and its own /run/lttng and /dev/shm, so it runs its own session daemon that the others never see;
#   - on each host a local session records every runloop event to WORK/hN/local while `rlctl record --relayd`
#     streams the program's events to the relay: what the relay got can be compared with what the host kept.
# Then a fourth recording, from host 1 to a second relay daemon killed mid-session (WORK/cut, WORK/cut-relay).
# Usage: relay-fleet.sh WORK RLCTL PROGRAM
set -euo pipefail
work=$1 rlctl=$2 program=$3
tag="rlf$$"
relay="${tag}r"
hosts=(1 2 3)

teardown() {
    for namespace in "${hosts[@]/#/${tag}h}" "$relay"; do
        # Daemons (relayd, each host's sessiond and consumerd) live on in their namespace until killed.
        ip netns pids "$namespace" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns del "$namespace" 2>/dev/null || true
    done
}
trap teardown EXIT

ip netns add "$relay"
ip -n "$relay" link set lo up
for n in "${hosts[@]}"; do
    ip netns add "${tag}h$n"
    ip link add "${tag}a$n" netns "$relay" type veth peer name "${tag}b$n" netns "${tag}h$n"
    ip -n "$relay" addr add "10.77.$n.1/24" dev "${tag}a$n"
    ip -n "$relay" link set "${tag}a$n" up
    ip -n "${tag}h$n" addr add "10.77.$n.2/24" dev "${tag}b$n"
    ip -n "${tag}h$n" link set "${tag}b$n" up
    ip -n "${tag}h$n" link set lo up
done

start_relay() {  # output folder
    ip netns exec "$relay" lttng-relayd --daemonize --output="$1"
    for _ in $(seq 100); do
        ip netns exec "$relay" bash -c 'exec 3<>/dev/tcp/127.0.0.1/5342' 2>/dev/null && return 0
        sleep 0.05
    done
    echo "relay-fleet: lttng-relayd did not listen on port 5342" >&2
    return 1
}

# On host N: its own session daemon, a local session of every runloop event, and the program under
# `rlctl record --relayd`; rlctl's output, error and status go to WORK/<label>/record.{out,err,status}.
run_host() {  # n label seconds
    local n=$1 folder="$work/$2" seconds=$3
    mkdir -p "$folder"
    ip netns exec "${tag}h$n" unshare --uts --mount bash -euc '
        hostname "rlhost$1"
        mkdir -p /run/lttng && mount -t tmpfs rlctl-fleet /run/lttng && mount -t tmpfs rlctl-fleet /dev/shm
        export LTTNG_HOME="$2/home" && mkdir -p "$LTTNG_HOME"
        lttng-sessiond --daemonize
        lttng create local --output="$2/local" >/dev/null
        lttng enable-event --userspace "runloop:*" --session=local >/dev/null
        lttng add-context --userspace --type=vtid --session=local >/dev/null
        lttng start local >/dev/null
        set +e
        "$3" record --relayd "net://10.77.$1.1" -- "$4" "$5" >"$2/record.out" 2>"$2/record.err"
        echo $? >"$2/record.status"
        set -e
        lttng stop local >/dev/null
        lttng destroy local >/dev/null
        kill "$(cat /run/lttng/lttng-sessiond.pid)"
    ' run-host "$n" "$folder" "$rlctl" "$program" "$seconds"
}

start_relay "$work/relay"
# Host 3 runs twice as long: its figures differ from the others', which a budget can tell apart.
run_host 1 h1 0.8 & first=$!
run_host 2 h2 0.8 & second=$!
run_host 3 h3 1.6 & third=$!
wait $first && wait $second && wait $third
ip netns pids "$relay" | xargs -r kill
sleep 0.3

# A relay daemon that dies while host 1 streams to it.
start_relay "$work/cut-relay"
( sleep 1; ip netns pids "$relay" | xargs -r kill -9 ) &
run_host 1 cut 2.5
wait
echo "relay-fleet: done ($tag)"

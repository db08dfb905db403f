# Hosts made of namespaces, streaming to one lttng-relayd: sourced by Tests/rlctlTests/Fleet/relay-fleet.sh (the
# relay test) and Benchmarks/relay-fleet-bench.sh (the relay's throughput). Needs root, iproute2 and util-linux.
#   - a network namespace for the relay daemon and one per host, joined by veth pairs (10.77.N.1 on the relay's
#     side, 10.77.N.2 on host N's); no address outside these namespaces;
#   - each host is also a UTS and mount namespace: its own hostname (rlhostN, the folder the relay files it
#     under), and its own /run/lttng and /dev/shm, so it runs its own session daemon that no other host sees.
# Everything is torn down on exit (fleet_make installs the trap).

# fleet_make COUNT: the relay's namespace and COUNT hosts'; sets fleet_tag, fleet_relay and fleet_hosts.
fleet_make() {
    fleet_tag="rlf$$"
    fleet_relay="${fleet_tag}r"
    fleet_hosts=($(seq "$1"))
    trap fleet_teardown EXIT
    ip netns add "$fleet_relay"
    ip -n "$fleet_relay" link set lo up
    local n
    for n in "${fleet_hosts[@]}"; do
        ip netns add "${fleet_tag}h$n"
        ip link add "${fleet_tag}a$n" netns "$fleet_relay" type veth peer name "${fleet_tag}b$n" netns "${fleet_tag}h$n"
        ip -n "$fleet_relay" addr add "10.77.$n.1/24" dev "${fleet_tag}a$n"
        ip -n "$fleet_relay" link set "${fleet_tag}a$n" up
        ip -n "${fleet_tag}h$n" addr add "10.77.$n.2/24" dev "${fleet_tag}b$n"
        ip -n "${fleet_tag}h$n" link set "${fleet_tag}b$n" up
        ip -n "${fleet_tag}h$n" link set lo up
    done
}

fleet_teardown() {
    local namespace
    for namespace in "${fleet_hosts[@]/#/${fleet_tag}h}" "$fleet_relay"; do
        # Daemons (relayd, each host's sessiond and consumerd) live on in their namespace until killed.
        ip netns pids "$namespace" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns del "$namespace" 2>/dev/null || true
    done
}

# fleet_start_relay OUTPUT: lttng-relayd in the relay's namespace, writing into OUTPUT; returns once it listens.
fleet_start_relay() {
    ip netns exec "$fleet_relay" lttng-relayd --daemonize --output="$1"
    local _
    for _ in $(seq 100); do
        ip netns exec "$fleet_relay" bash -c 'exec 3<>/dev/tcp/127.0.0.1/5342' 2>/dev/null && return 0
        sleep 0.05
    done
    echo "fleet: lttng-relayd did not listen on port 5342" >&2
    return 1
}

# fleet_stop_relay [SIGNAL]: every process of the relay's namespace (the relay daemon).
fleet_stop_relay() {
    ip netns pids "$fleet_relay" | xargs -r kill "-${1:-TERM}"
}

# fleet_run_host N FOLDER LOCAL RLCTL ARGS…: on host N, its own session daemon, then `RLCTL record --relayd
# net://10.77.N.1 ARGS…`, its output, errors and status in FOLDER/record.{out,err,status}. With LOCAL=1 a local
# session records every runloop event into FOLDER/local meanwhile, to compare with what the relay got.
fleet_run_host() {
    local n=$1 folder=$2 local_copy=$3
    shift 3
    mkdir -p "$folder"
    ip netns exec "${fleet_tag}h$n" unshare --uts --mount bash -euc '
        n=$1 folder=$2 local_copy=$3 rlctl=$4
        shift 4
        hostname "rlhost$n"
        mkdir -p /run/lttng && mount -t tmpfs rlctl-fleet /run/lttng && mount -t tmpfs rlctl-fleet /dev/shm
        export LTTNG_HOME="$folder/home" && mkdir -p "$LTTNG_HOME"
        lttng-sessiond --daemonize
        if [ "$local_copy" = 1 ]; then
            lttng create local --output="$folder/local" >/dev/null
            lttng enable-event --userspace "runloop:*" --session=local >/dev/null
            lttng add-context --userspace --type=vtid --session=local >/dev/null
            lttng start local >/dev/null
        fi
        set +e
        "$rlctl" record --relayd "net://10.77.$n.1" "$@" >"$folder/record.out" 2>"$folder/record.err"
        echo $? >"$folder/record.status"
        set -e
        if [ "$local_copy" = 1 ]; then lttng stop local >/dev/null && lttng destroy local >/dev/null; fi
        kill "$(cat /run/lttng/lttng-sessiond.pid)"
    ' fleet-host "$n" "$folder" "$local_copy" "$@"
}

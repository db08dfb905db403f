# Sourced by the benchmark scripts that start processes (`source "$(dirname "$0")/bench-lib.sh"`).

# bench_workspace NAME: a new temporary folder in $work and an empty list $pids of the processes the script starts;
# on every way out (an error, Ctrl-C, SIGTERM, SIGHUP) those are killed and the folder removed.
bench_workspace() {
    work=$(mktemp -d "/tmp/$1.XXXXXX")
    pids=()
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM HUP
}

bench_cleanup() {
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}

# median [VALUE…]: the median of the values given, or of the lines on stdin (the mean of the middle two for an even
# count).
median() {
    if (($#)); then printf '%s\n' "$@"; else cat; fi | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'
}

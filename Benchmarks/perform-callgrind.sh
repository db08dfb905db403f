#!/bin/bash
# Instructions per cross-thread perform and per loop iteration, under callgrind (repeatable on a loaded machine,
# unlike wall-clock figures), for RunLoopCore as it is at each given commit (issue 30, "Performance").
# For each commit: RunLoopCore's sources (with the C and schema targets it needs) are copied out of git into a
# package of their own with perform-callgrind/main.swift, built in release without debug info (valgrind 3.19
# cannot read the toolchain's DWARF 5), and run under callgrind for N and 2N blocks; the figures are the
# differences divided by N (start-up cancels out), per thread, with the call counts of the loop's iteration.
#   usage: Benchmarks/perform-callgrind.sh [-n N] [-b BURST] [-l BACKLOG] COMMIT...
#   e.g.:  Benchmarks/perform-callgrind.sh -b 8 -l 16 1da2ad2 main HEAD
# BURST and BACKLOG small (8, 16): the loop takes a few blocks per wake-up, as when it keeps up with the producer;
# the defaults (64, 65,536) let the producer run far ahead, so the figures are those of draining long batches.
# -w RUNS: the whole program's wall and CPU seconds and its voluntary context switches instead (no callgrind),
# the commits' builds run in turn RUNS times, medians printed: what callgrind cannot see (system calls, a thread
# that sleeps on a taken lock). Run it on a quiet machine, with N in the millions.
#   e.g.:  Benchmarks/perform-callgrind.sh -w 9 -n 20000000 -l 100000000 1da2ad2 main HEAD
# Needs valgrind (not with -w) and git; works in a temporary folder removed on every way out.
set -euo pipefail
n=100000; burst=64; backlog=65536; wallRuns=0
while getopts "n:b:l:w:" option; do
    case $option in n) n=$OPTARG ;; b) burst=$OPTARG ;; l) backlog=$OPTARG ;; w) wallRuns=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-w RUNS] [-n N] [-b BURST] [-l BACKLOG] COMMIT..." >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/rlctl-perform-callgrind.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP

# Calls to, and inclusive instructions of, functions whose mangled name matches $2, from callgrind file $1.
calls() {
    python3 - "$1" "$2" <<'PY'
import re, sys
names, calls, pending, callee = {}, 0, None, None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
    if m:
        if m.group(3): names[m.group(2)] = m.group(3)
        if m.group(1) == "cfn": callee = names.get(m.group(2), "")
        continue
    if line.startswith("calls="):
        pending = int(line.split("=")[1].split()[0])
    elif pending is not None:
        if re.search(sys.argv[2], callee or ""): calls += pending
        pending = None
print(calls)
PY
}

[ "$wallRuns" -gt 0 ] || printf "%-12s %14s %14s %12s %14s\n" commit "producer Ir/blk" "loop Ir/blk" "iter/1k blk" "loop Ir/iter"
built=()
for commit in "$@"; do
    sha=$(git -C "$here" rev-parse --short "$commit")
    dir="$work/$sha"
    mkdir -p "$dir/Sources/perfharness"
    targets=$(cd "$here" && for t in CRunLoopLinux RunLoopCore TraceModel CTraceSchema; do
        if git cat-file -e "$sha:Sources/$t" 2>/dev/null; then echo "Sources/$t"; fi; done)
    git -C "$here" archive "$sha" $targets | tar -x -C "$dir"
    cp "$here/Benchmarks/perform-callgrind/main.swift" "$dir/Sources/perfharness/main.swift"
    if [ -d "$dir/Sources/TraceModel" ]; then
        extra='.target(name: "CTraceSchema"), .target(name: "TraceModel", dependencies: ["CTraceSchema"]),'
        core='"CRunLoopLinux", "TraceModel"'
    else
        extra=''; core='"CRunLoopLinux"'
    fi
    cat > "$dir/Package.swift" <<PKG
// swift-tools-version:6.0
import PackageDescription
let package = Package(name: "perfharness",
    dependencies: [.package(url: "https://github.com/apple/swift-collections", from: "1.1.0")],
    targets: [.target(name: "CRunLoopLinux"), $extra
        .target(name: "RunLoopCore", dependencies: [$core, .product(name: "DequeModule", package: "swift-collections")]),
        .executableTarget(name: "perfharness", dependencies: ["RunLoopCore"])])
PKG
    (cd "$dir" && swift build -c release -Xswiftc -gnone >/dev/null 2>&1)
    strip -g -o "$dir/ph" "$dir/.build/release/perfharness"
    built+=("$sha")
    [ "$wallRuns" -eq 0 ] || continue
    for blocks in $n $((2 * n)); do
        valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/cg.$blocks" \
            "$dir/ph" "$blocks" "$burst" "$backlog" >/dev/null 2>&1
    done
    total() { grep '^summary' "$1" | awk '{print $2}'; }
    producer=$(( ($(total "$dir/cg.$((2 * n))-01") - $(total "$dir/cg.$n-01")) / n ))
    loop=$(( ($(total "$dir/cg.$((2 * n))-02") - $(total "$dir/cg.$n-02")) / n ))
    iterations=$(( $(calls "$dir/cg.$((2 * n))-02" runIteration) - $(calls "$dir/cg.$n-02" runIteration) ))
    printf "%-12s %14d %14d %12d %14d\n" "$sha" "$producer" "$loop" $(( iterations * 1000 / n )) \
        $(( ($(total "$dir/cg.$((2 * n))-02") - $(total "$dir/cg.$n-02")) / (iterations > 0 ? iterations : 1) ))
done

[ "$wallRuns" -gt 0 ] || exit 0
# In turn, so that a drift of the machine's speed falls on every commit alike.
for _ in $(seq "$wallRuns"); do
    for sha in "${built[@]}"; do
        /usr/bin/time -a -o "$work/$sha.times" -f "%e %U %S %w" "$work/$sha/ph" "$n" "$burst" "$backlog" >/dev/null
    done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
printf "%-12s %10s %10s %14s %16s   (medians of %d runs, %d blocks each)\n" commit "wall s" "cpu s" "M blocks/s" "vol. ctx sw." "$wallRuns" "$n"
for sha in "${built[@]}"; do
    times="$work/$sha.times"
    wall=$(awk '{ print $1 }' "$times" | median)
    printf "%-12s %10.3f %10.3f %14.2f %16d\n" "$sha" "$wall" "$(awk '{ print $2 + $3 }' "$times" | median)" \
        "$(awk -v n="$n" -v w="$wall" 'BEGIN { print n / w / 1e6 }')" "$(awk '{ print $4 }' "$times" | median | cut -d. -f1)"
done

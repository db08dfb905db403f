#!/bin/sh
# Regenerates the compatibility fixtures (FixtureCompatibilityTests): an embedded trace in format version 1 as
# the recorder of commit 088a5cc wrote it, an LTTng trace of runloop-demo through that commit's provider, and
# the JSONL that commit's `rlctl export` made of each. Run with the rlctl of that commit (the fixtures must come
# from the old code, not the code under test), as root with lttng-tools installed:
#
#   git worktree add /tmp/rlctl-088a5cc 088a5cc && (cd /tmp/rlctl-088a5cc && swift build -c release && swift build -c release --product runloop-demo)
#   Tests/TracingTests/Fixtures/regenerate.sh /tmp/rlctl-088a5cc/.build/release/rlctl
#
# The trace differs at each run (times, thread ids): commit the trace and its JSONL together.
set -eu
rlctl=${1:?usage: regenerate.sh /path/to/old/rlctl}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/mixed-v1.rltrace"
"$rlctl" run mixed --duration 15ms --trace "$here/mixed-v1.rltrace" > /dev/null
"$rlctl" export "$here/mixed-v1.rltrace" --format jsonl -o "$here/mixed-v1.jsonl"
rm -rf "$here/demo-lttng-v1"
"$rlctl" record --output "$here/demo-lttng-v1" --subbuf-size 4096 --num-subbuf 64 -- "$(dirname "$rlctl")/runloop-demo" 0.3 > /dev/null
"$rlctl" export "$here/demo-lttng-v1" --format jsonl -o "$here/demo-lttng-v1.jsonl"

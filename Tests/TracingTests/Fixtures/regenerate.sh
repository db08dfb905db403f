#!/bin/sh
# Regenerates the compatibility fixtures (FixtureCompatibilityTests): an embedded trace in format version 1 as
# the recorder of commit 088a5cc wrote it, and the JSONL that commit's `rlctl export` made of it. Run with the
# rlctl of that commit (the fixture must come from the old code, not the code under test):
#
#   git worktree add /tmp/rlctl-088a5cc 088a5cc && (cd /tmp/rlctl-088a5cc && swift build -c release)
#   Tests/TracingTests/Fixtures/regenerate.sh /tmp/rlctl-088a5cc/.build/release/rlctl
#
# The trace differs at each run (times, thread ids): commit the trace and its JSONL together.
set -eu
rlctl=${1:?usage: regenerate.sh /path/to/old/rlctl}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/mixed-v1.rltrace"
"$rlctl" run mixed --duration 15ms --trace "$here/mixed-v1.rltrace" > /dev/null
"$rlctl" export "$here/mixed-v1.rltrace" --format jsonl -o "$here/mixed-v1.jsonl"

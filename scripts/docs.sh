#!/usr/bin/env bash
# Reference documentation of the Swift libraries (RunLoopCore, Tracing, RunLoopFoundation, RunLoopMetrics): each library's DocC
# catalog (Sources/LIBRARY/LIBRARY.docc) with its public symbols, converted by the toolchain's docc with warnings
# as errors, so a broken symbol link or an undocumented parameter fails CI.
#   bash scripts/docs.sh [OUT=.build/docs]     one folder per library (docc's static output)
# The symbol graphs come from the debug build (swift package dump-symbol-graph builds what is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.build/docs}
command -v docc >/dev/null || { echo "docs: no docc in the toolchain" >&2; exit 1; }
swift package dump-symbol-graph --minimum-access-level public >/dev/null
graphs=$(find .build -maxdepth 3 -type d -name symbolgraph | head -n 1)
[ -n "$graphs" ] || { echo "docs: swift package dump-symbol-graph wrote no symbol graphs" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for library in RunLoopCore Tracing RunLoopFoundation RunLoopMetrics; do
    mkdir "$work/$library"
    cp "$graphs/$library".symbols.json "$work/$library/"
    cp "$graphs/$library"@*.symbols.json "$work/$library/" 2>/dev/null || true
    rm -rf "${out:?}/$library"; mkdir -p "$out"
    docc convert "Sources/$library/$library.docc" --additional-symbol-graph-dir "$work/$library" --output-path "$out/$library" \
        --fallback-display-name "$library" --fallback-bundle-identifier "org.rlctl.$library" --warnings-as-errors >"$work/$library.log" 2>&1 \
        || { cat "$work/$library.log" >&2; echo "docs: $library's documentation has errors (above)" >&2; exit 1; }
    echo "docs: $library → $out/$library"
done

#!/usr/bin/env bash
# The README's picture of a report: `rlctl run jank --report`, drawn by headless Chromium (scripts/install-deps.sh
# installs it), the top of the page, 1000 px wide; and the same page on a phone, 390 px wide (OUT with -390).
#   bash scripts/report-screenshot.sh [OUT=docs/images/report-jank.png]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/images/report-jank.png}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
command -v chromium >/dev/null || { echo "report-screenshot: no chromium (bash scripts/install-deps.sh installs it)" >&2; exit 1; }
swift run -c release rlctl run jank --duration 2s --report "$work/jank.html" >/dev/null
# Every request goes to a closed port (the page needs none); its own profile, so that no running browser interferes.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --proxy-server=127.0.0.1:9 --user-data-dir="$work/profile" \
    --window-size=1000,1180 --screenshot="$work/jank.png" "file://$work/jank.html" 2>/dev/null >/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --proxy-server=127.0.0.1:9 --user-data-dir="$work/profile" \
    --window-size=390,1400 --screenshot="$work/jank-390.png" "file://$work/jank.html" 2>/dev/null >/dev/null
mkdir -p "$(dirname "$out")"
cp "$work/jank.png" "$out"
cp "$work/jank-390.png" "${out%.png}-390.png"
echo "wrote $out and ${out%.png}-390.png"

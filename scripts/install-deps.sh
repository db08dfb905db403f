#!/usr/bin/env bash
# Installs the Debian packages rlctl uses: LTTng-UST (headers and library, for the tracepoint provider),
# lttng-tools (the session daemon and `lttng` CLI), babeltrace2 (reading LTTng's CTF traces) and wrk (the HTTP
# load generator that drives the SwiftNIO example server, Adapters/NIO).
# Idempotent and quiet when everything is there already; needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(liblttng-ust-dev lttng-tools babeltrace2 libbabeltrace2-dev pkg-config wrk)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

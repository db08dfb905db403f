#!/usr/bin/env bash
# Installs the Debian packages rlctl uses: libbpf (the kernel view's BPF loader, with bpftool to check that nothing
# is left loaded and linux-perf for the cost benchmark), LTTng-UST (headers and library, for the tracepoint provider),
# lttng-tools (the session daemon and `lttng` CLI), babeltrace2 (reading LTTng's CTF traces), wrk (the HTTP
# load generator that drives the SwiftNIO example server, Adapters/NIO, and the Node.js server of the `--any` tests),
# and the programs nobody here wrote that `rlctl record --any` is tested on: redis-server (with redis-benchmark),
# memcached (its workers are named after their first wait), nginx (a master with workers that switch to www-data),
# libuv1-dev (a libuv loop with idle-time metrics, whose zero-timeout checks are no iterations), golang-go (builds
# the Go program `--any` must explain and the Go server `record --pid` attaches to), cargo and librust-tokio-dev
# (Debian's packaged crates: a tokio multi-threaded server, two workers sharing one epoll descriptor), and
# Node.js and Python 3 when no `node` or `python3` is on PATH (a newer one installed otherwise is used as it is);
# strace is the peer the `--any` benchmark compares with; valgrind counts the NIO benchmark's instructions; time (GNU time) reads a run's context switches for perform-callgrind.sh -w; chromium (headless) loads `rlctl report` pages in the tests
# and makes the README's screenshot; iproute2 and util-linux (ip netns, unshare) make the relay test's hosts.
# Idempotent and quiet when everything is there already; needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(liblttng-ust-dev libbpf-dev bpftool linux-perf lttng-tools babeltrace2 libbabeltrace2-dev pkg-config iproute2 util-linux wrk redis-server redis-tools nginx memcached libuv1-dev golang-go cargo librust-tokio-dev prometheus strace valgrind time chromium fonts-dejavu-core)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
command -v node >/dev/null || missing+=(nodejs)
command -v python3 >/dev/null || missing+=(python3)
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

#!/usr/bin/env python3
"""What `rlctl top` costs and how late it shows things (issue 15's goals: an event on screen within 2 s; at most
5% of a core per 100k events/s).

  python3 Benchmarks/top-bench.py [--tracer lttng|embedded] [--rounds N] [--seconds S] [RATE ...]
  python3 Benchmarks/top-bench.py --serve [--tracer lttng|embedded] [--rounds N] [--seconds S] [RATE ...]

Delay: `rlctl top` (this machine's loops, 1 s interval, no terminal: a table per interval) runs while
eventpump burns 300 ms once; the delay is from the end of that burn (eventpump prints it, CLOCK_MONOTONIC) to the
first table that shows a stall of at least 250 ms (read with time.monotonic_ns, the same clock). N rounds.

CPU: `rlctl top` follows eventpump at each RATE (events/s) for S seconds; its CPU is rlctl's (which speaks the
relay's live protocol and decodes LTTng's packets itself) and its children's (utime + stime, cutime + cstime from
/proc), over the S seconds after a 2 s warm-up. The LTTng side (the consumer daemon, which every live session
costs) is measured apart.

--tracer embedded: eventpump records with the embedded recorder into a temporary folder instead, and `rlctl top`
runs without LTTng in its PATH, so that it follows that recording alone (its registry is the benchmark's own,
RLCTL_LIVE_DIR). rlctl's CPU is then all there is: no reader child, no daemon.

--serve (issue 32's goals: the exporter's CPU within 1 point of top's; a scrape of 100 loops within 50 ms): at each
RATE, `rlctl top` and `rlctl top --serve 127.0.0.1:0` follow the same eventpump in turn, N rounds, each measured
as above (rlctl and its children); the medians and the median of the pairwise differences are printed. Then
eventpump runs 100 loops (EVENTPUMP_LOOPS=100) and the exporter is scraped 50 times, 100 ms apart (one HTTP GET
of /metrics each, timed from connect to the last byte).
"""
import argparse, os, re, shutil, socket, statistics, subprocess, sys, tempfile, threading, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def bin_path(package=None):
    args = ["swift", "build", "-c", "release", "--show-bin-path"] + (["--package-path", package] if package else [])
    return subprocess.run(args, cwd=root, capture_output=True, text=True, check=True).stdout.strip()

def cpu_ticks(pids):
    """utime + stime, and for each process the children it reaped (cutime + cstime: the session listings)."""
    total = 0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += sum(int(field) for field in fields[11:15])
        except OSError:
            pass
    return total

def descendants(pid):
    children, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        try:
            for task in os.listdir(f"/proc/{parent}/task"):
                for child in open(f"/proc/{parent}/task/{task}/children").read().split():
                    children.append(int(child)); frontier.append(int(child))
        except OSError:
            pass
    return children

def pids_named(name):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if open(f"/proc/{entry}/comm").read().strip() == name: found.append(int(entry))
            except OSError:
                pass
    return found

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--tracer", choices=["lttng", "embedded"], default="lttng")
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("rates", nargs="*", type=int, default=[100_000, 1_000_000])
    options = parser.parse_args()
    if options.serve and options.rates == parser.get_default("rates"):
        options.rates = [100_000]
    subprocess.run(["swift", "build", "-c", "release", "--product", "rlctl"], cwd=root, check=True, capture_output=True)
    subprocess.run(["swift", "build", "-c", "release", "--package-path", "Benchmarks", "--product", "eventpump"], cwd=root, check=True, capture_output=True)
    rlctl = os.path.join(bin_path(), "rlctl")
    pump = os.path.join(bin_path(os.path.join(root, "Benchmarks")), "eventpump")
    scratch = tempfile.mkdtemp(prefix="top-bench-")
    registry = os.path.join(scratch, "registry")
    top_environment = dict(os.environ, RLCTL_LIVE_DIR=registry)
    if options.tracer == "embedded":
        top_environment["PATH"] = "/nonexistent-top-bench"
    recordings = iter(range(1_000_000))
    def pump_environment():
        if options.tracer == "lttng":
            return dict(os.environ, RLCTL_TRACER="lttng")
        return dict(os.environ, RLCTL_TRACER="embedded", RLCTL_LIVE_DIR=registry,
                    RLCTL_TRACE_DIR=os.path.join(scratch, f"pump-{next(recordings)}"))
    hz = os.sysconf("SC_CLK_TCK")

    if options.serve:
        serve_bench(options, rlctl, pump, top_environment, pump_environment, hz)
        shutil.rmtree(scratch, ignore_errors=True)
        return

    delays = []
    for _ in range(options.rounds):
        top = subprocess.Popen([rlctl, "top", "--stall", "250ms"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=top_environment)
        seen = {}
        def watch():
            for line in top.stdout:
                cells = line.split()
                # The worst-stall column (next to last): only the burn passes --stall 250ms.
                if "RunLoopCore" in cells and cells[-2] != "-" and "at" not in seen:
                    seen["at"] = time.monotonic_ns()
        watcher = threading.Thread(target=watch, daemon=True); watcher.start()
        time.sleep(1.5)
        pump_run = subprocess.run([pump, "2000", "5", "2"], env=pump_environment(), capture_output=True, text=True)
        time.sleep(1.5)
        top.terminate(); top.wait()
        ends = [int(l.split()[1]) for l in pump_run.stdout.splitlines() if l.startswith("burn-end ")]
        if ends and "at" in seen:
            delays.append((seen["at"] - ends[0]) / 1e9)
    print(f"delay from a stall's end to rlctl top's screen (1 s interval), {len(delays)} of {options.rounds} rounds seen: "
          + (f"median {statistics.median(delays):.2f} s, max {max(delays):.2f} s, all {', '.join(f'{d:.2f}' for d in delays)}" if delays else "none"))

    for rate in options.rates:
        top = subprocess.Popen([rlctl, "top"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=top_environment)
        time.sleep(1)
        pump_run = subprocess.Popen([pump, str(rate), str(options.seconds + 4)], env=pump_environment(), stdout=subprocess.DEVNULL)
        time.sleep(2)
        mine = [top.pid] + descendants(top.pid)
        daemons = pids_named("lttng-consumerd")
        before, before_daemons, started = cpu_ticks(mine), cpu_ticks(daemons), time.monotonic()
        swift_before = cpu_ticks([top.pid])
        time.sleep(options.seconds)
        after, after_daemons, elapsed = cpu_ticks(mine), cpu_ticks(daemons), time.monotonic() - started
        swift_side = cpu_ticks([top.pid])
        pump_run.wait(); top.terminate(); top.wait()
        share = (after - before) / hz / elapsed * 100
        swift_share = (swift_side - swift_before) / hz / elapsed * 100
        print(f"{rate:>9,} events/s: rlctl top {share:.1f}% of a core ({share / (rate / 100_000):.2f}% per 100k events/s): "
              f"rlctl itself {swift_share:.1f}%, its children (relay daemon) {share - swift_share:.1f}%; "
              f"consumer daemon {(after_daemons - before_daemons) / hz / elapsed * 100:.1f}%")
    shutil.rmtree(scratch, ignore_errors=True)

def cpu_share(command, rate, seconds, pump, top_environment, pump_environment, hz):
    """One rlctl (command) following eventpump at `rate`: its CPU, and its children's, as a share of a core."""
    top = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=top_environment)
    time.sleep(1)
    pump_run = subprocess.Popen([pump, str(rate), str(seconds + 4)], env=pump_environment(), stdout=subprocess.DEVNULL)
    time.sleep(2)
    mine = [top.pid] + descendants(top.pid)
    before, started = cpu_ticks(mine), time.monotonic()
    time.sleep(seconds)
    after, elapsed = cpu_ticks(mine), time.monotonic() - started
    pump_run.wait(); top.terminate(); top.wait()
    return (after - before) / hz / elapsed * 100

def scrape(port):
    """One GET /metrics: (seconds from connect to the last byte, bytes)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        received = 0
        while True:
            chunk = connection.recv(65536)
            if not chunk: break
            received += len(chunk)
    return time.monotonic() - started, received

def serve_bench(options, rlctl, pump, top_environment, pump_environment, hz):
    for rate in options.rates:
        plain, served = [], []
        for _ in range(options.rounds):
            plain.append(cpu_share([rlctl, "top"], rate, options.seconds, pump, top_environment, pump_environment, hz))
            served.append(cpu_share([rlctl, "top", "--serve", "127.0.0.1:0"], rate, options.seconds, pump, top_environment, pump_environment, hz))
        differences = [b - a for a, b in zip(plain, served)]
        print(f"{rate:>9,} events/s, {options.rounds} rounds in turn: rlctl top median {statistics.median(plain):.1f}% of a core, "
              f"rlctl top --serve median {statistics.median(served):.1f}%; pairwise difference median {statistics.median(differences):+.1f} points "
              f"(all: {', '.join(f'{d:+.1f}' for d in differences)})")
    top = subprocess.Popen([rlctl, "top", "--serve", "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=top_environment)
    port = None
    for line in top.stderr:
        found = re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics", line)
        if found:
            port = int(found.group(1)); break
    threading.Thread(target=lambda: top.stderr.read(), daemon=True).start()
    pump_run = subprocess.Popen([pump, "20000", "15"], env=dict(pump_environment(), EVENTPUMP_LOOPS="100"), stdout=subprocess.DEVNULL)
    time.sleep(5)
    times, sizes = [], []
    for _ in range(50):
        took, size = scrape(port)
        times.append(took); sizes.append(size)
        time.sleep(0.1)
    body = b""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while chunk := connection.recv(65536): body += chunk
    loops = len(re.findall(rb"^runloop_iterations\{", body, re.M))
    pump_run.wait(); top.terminate(); top.wait()
    times.sort()
    print(f"scrape of {loops} loops ({statistics.median(sizes) / 1024:.0f} KiB), 50 scrapes: median {statistics.median(times) * 1000:.2f} ms, "
          f"p90 {times[44] * 1000:.2f} ms, max {times[-1] * 1000:.2f} ms")

main()

#!/usr/bin/env python3
"""Structure-aware mutation fuzzing of rlctl's trace readers, through the command line a user runs.

Records small seed traces (embedded recorder, and LTTng when it is installed), then damages copies of them the
ways files get damaged — a stream deleted, emptied or cut, a packet header field or an event field set to an
extreme value, bits flipped, an event renamed in the metadata, the end file or the packet index changed — and
runs `rlctl summarize --format json` (and, for some, `export` and `report`) on each copy, every run with a memory
limit and a deadline. A run fails the fuzz when it
  - crashes (ends by a signal) or exits with a status rlctl does not document for bad input (0, 1 or 2),
  - hangs (passes the deadline),
  - exceeds the memory limit (an allocation sized by a value read from the file),
  - or reads fewer events than the undamaged trace holds while saying the trace is complete: the silent wrong
    answer this project promises never to give.
Every failing input is kept (--keep DIR) so that it becomes a regression test (Tests/TracingTests/Fixtures/fuzz).

    python3 scripts/fuzz-readers.py --rlctl .build/debug/rlctl --mutants 300 --seconds 180

Prints one line per failure, then a closing line `N passed, N failed` and the peak memory of any read; exits 1
when any run failed. Deterministic for a given --seed and seed traces.
"""
import argparse
import json
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

EMBEDDED_HEADER = {  # the embedded recorder's packet header (TraceSchema): offset, size
    "begin": (20, 8), "end": (28, 8), "content_bits": (36, 8), "packet_bits": (44, 8),
    "sequence": (52, 8), "discarded": (60, 8), "tid": (68, 4),
}
EXTREMES = [0, 1, 2, 0x7F, 0xFF, 0x7FFF, 0xFFFF, 536870913, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 32, 1 << 40,
            0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF]


def run(command, deadline, memory_limit):
    """Runs a command with an address-space limit and a deadline; returns (status, stdout, stderr, its peak RSS in
    KiB, timed out). The status is negative for a signal, as subprocess gives it."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
        os.setsid()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limit)
    output = {}
    readers = [threading.Thread(target=lambda name, pipe: output.__setitem__(name, pipe.read()), args=(name, pipe))
               for name, pipe in (("out", process.stdout), ("err", process.stderr))]
    for reader in readers:
        reader.start()
    timer = threading.Timer(deadline, lambda: os.killpg(process.pid, signal.SIGKILL))
    timer.start()
    _, status, usage = os.wait4(process.pid, 0)
    timed_out = not timer.is_alive()
    timer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    try:
        os.killpg(process.pid, signal.SIGKILL)   # a reader child left behind (babeltrace2's) ends with it
    except ProcessLookupError:
        pass
    for reader in readers:
        reader.join()
    return process.returncode, output.get("out", b""), output.get("err", b""), usage.ru_maxrss, timed_out


class Trace:
    """A seed trace: its folder, its kind, its stream files and their packets."""

    def __init__(self, path, kind):
        self.path, self.kind = path, kind
        self.folders = [root for root, _, files in os.walk(path) if "metadata" in files]
        self.streams = []
        for folder in self.folders:
            for name in sorted(os.listdir(folder)):
                full = os.path.join(folder, name)
                if name != "metadata" and not name.startswith(".") and os.path.isfile(full):
                    self.streams.append(os.path.relpath(full, path))

    def packets(self, root, stream):
        """(offset, size) of each packet of a stream file in the copy at `root`."""
        full = os.path.join(root, stream)
        data = open(full, "rb").read()
        found = []
        if self.kind == "embedded":
            offset = 0
            while offset + 72 <= len(data):
                size = struct.unpack_from("<Q", data, offset + 44)[0] // 8
                if size < 72:
                    break
                found.append((offset, min(size, len(data) - offset)))
                offset += size
        else:
            index = os.path.join(os.path.dirname(full), "index", os.path.basename(full) + ".idx")
            if os.path.exists(index):
                raw = open(index, "rb").read()
                if len(raw) >= 16:
                    entry = struct.unpack_from(">I", raw, 12)[0]
                    for position in range(16, len(raw) - entry + 1, max(entry, 1)):
                        offset, bits = struct.unpack_from(">QQ", raw, position)
                        found.append((offset, bits // 8))
        return found


def mutate(trace, root, rng):
    """Damages the copy at `root`; returns what it did and whether the damage must show (events certainly gone)."""
    streams = [s for s in trace.streams if os.path.getsize(os.path.join(root, s)) > 0] or trace.streams
    stream = rng.choice(streams)
    full = os.path.join(root, stream)
    kind = rng.choice(["delete", "empty", "truncate", "drop-last-packets", "flip", "header", "payload", "payload",
                       "metadata-rename", "metadata-bytes", "end-file", "index", "duplicate-packet", "content-size"])
    data = bytearray(open(full, "rb").read())
    packets = trace.packets(root, stream)
    if kind == "delete":
        os.remove(full)
        return kind + " " + stream, True
    if kind == "empty":
        open(full, "wb").close()
        return kind + " " + stream, True
    if kind == "truncate":
        cut = rng.randrange(0, max(1, len(data)))
        open(full, "wb").write(data[:cut])
        return "%s %s at %d of %d" % (kind, stream, cut, len(data)), True
    if kind == "drop-last-packets" and len(packets) > 1:
        keep = rng.randrange(1, len(packets))
        open(full, "wb").write(data[:packets[keep][0]])
        return "%s %s: kept %d of %d packets" % (kind, stream, keep, len(packets)), True
    if kind == "flip" and data:
        where = []
        for _ in range(rng.randint(1, 8)):
            bit = rng.randrange(len(data) * 8)
            data[bit // 8] ^= 1 << (bit % 8)
            where.append(bit // 8)
        open(full, "wb").write(data)
        return "%s %s bytes %s" % (kind, stream, where), False
    if kind == "header" and packets:
        offset, _ = rng.choice(packets)
        if trace.kind == "embedded":
            field = rng.choice(list(EMBEDDED_HEADER))
            at, size = EMBEDDED_HEADER[field]
        else:
            field, at, size = "byte", rng.randrange(0, 96), rng.choice([4, 8])
        value = rng.choice(EXTREMES + [rng.getrandbits(64)]) & ((1 << (8 * size)) - 1)
        if offset + at + size <= len(data):
            data[offset + at:offset + at + size] = value.to_bytes(size, "little")
            open(full, "wb").write(data)
        return "%s %s packet at %d: %s = %d" % (kind, stream, offset, field, value), False
    if kind == "payload" and packets:
        offset, size = rng.choice(packets)
        start = offset + (72 if trace.kind == "embedded" else 96)
        if start + 8 < offset + size and start + 8 < len(data):
            at = rng.randrange(start, min(offset + size, len(data)) - 8)
            width = rng.choice([1, 4, 8])
            value = rng.choice(EXTREMES) & ((1 << (8 * width)) - 1)
            data[at:at + width] = value.to_bytes(width, "little")
            open(full, "wb").write(data)
            return "%s %s byte %d: %d bytes = %d" % (kind, stream, at, width, value), False
    if kind == "metadata-rename":
        folder = os.path.join(root, os.path.relpath(trace.folders[0], trace.path))
        path = os.path.join(folder, "metadata")
        text = open(path, "rb").read()
        # Renamed in place, the same length: a packetized (LTTng) metadata file keeps its packet sizes.
        names = [n for n in [b"timer_fire_begin", b"block_begin", b"before_sources", b"source_perform_begin"]
                 if b":" + n + b'"' in text or b'"' + n + b'"' in text]
        if names:
            name = rng.choice(names)
            renamed = name[:-2] + name[-1:] + name[-2:-1]
            for before in (b":", b'"'):
                text = text.replace(before + name + b'"', before + renamed + b'"')
            open(path, "wb").write(text)
            return "%s %s -> %s" % (kind, name.decode(), renamed.decode()), True
    if kind == "metadata-bytes":
        folder = os.path.join(root, os.path.relpath(trace.folders[0], trace.path))
        path = os.path.join(folder, "metadata")
        text = bytearray(open(path, "rb").read())
        at = rng.randrange(len(text))
        text[at] = rng.randrange(256)
        open(path, "wb").write(text)
        return "%s byte %d" % (kind, at), False
    if kind == "end-file":
        path = os.path.join(root, ".end")
        if os.path.exists(path):
            text = open(path).read().splitlines()
            if rng.random() < 0.5 or not text:
                os.remove(path)
                return kind + " removed", False
            line = rng.randrange(len(text))
            text[line] = text[line].replace("=", "= 9" if rng.random() < 0.5 else "= -", 1)
            open(path, "w").write("\n".join(text) + "\n")
            return "%s line %d: %s" % (kind, line + 1, text[line]), False
    if kind == "index":
        index = os.path.join(os.path.dirname(full), "index", os.path.basename(full) + ".idx")
        if os.path.exists(index):
            raw = bytearray(open(index, "rb").read())
            if rng.random() < 0.3:
                os.remove(index)
                return kind + " removed for " + stream, False
            if len(raw) > 16:
                at = rng.randrange(16, len(raw) - 8)
                raw[at:at + 8] = rng.choice(EXTREMES).to_bytes(8, "big")
                open(index, "wb").write(raw)
                return "%s %s byte %d" % (kind, stream, at), False
    if kind == "duplicate-packet" and packets:
        offset, size = rng.choice(packets)
        open(full, "wb").write(data + data[offset:offset + size])
        return "%s %s packet at %d appended again" % (kind, stream, offset), False
    if kind == "content-size" and packets and trace.kind == "embedded":
        offset, _ = rng.choice(packets)
        bits = struct.unpack_from("<Q", data, offset + 36)[0]
        smaller = max(72 * 8, bits - 8 * rng.choice([9, 17, 25, 33, 64, 256]))
        struct.pack_into("<Q", data, offset + 36, smaller)
        open(full, "wb").write(data)
        return "%s %s packet at %d: content %d -> %d bits" % (kind, stream, offset, bits, smaller), False
    # A mutation that did not apply to this stream: flip one byte instead.
    if data:
        at = rng.randrange(len(data))
        data[at] ^= 0xFF
        open(full, "wb").write(data)
    return "flip %s byte (fallback)" % stream, False


def event_ids(metadata):
    """The event ids the metadata declares, by name (`runloop:` dropped)."""
    ids, name = {}, None
    for line in metadata.splitlines():
        line = line.strip()
        if line.startswith('name = "'):
            name = line.split('"')[1].split(":")[-1]
        elif line.startswith("id = ") and name:
            ids[name] = int(line[5:].rstrip(";"))
            name = None
    return ids


def adversarial_trace(seed, path, megabytes):
    """An embedded trace of `megabytes` whose every event names something new: a loop, a timer, a label of 200
    bytes, a loop name. A summary that kept everything apart would grow with the trace; rlctl's must not."""
    os.makedirs(path)
    metadata = open(os.path.join(seed, "metadata")).read()
    open(os.path.join(path, "metadata"), "w").write(metadata)
    uuid = bytes.fromhex(metadata.split('uuid = "')[1].split('"')[0].replace("-", ""))
    ids = event_ids(metadata)
    packet_size, tid, written, sequence, timestamp, serial = 1 << 20, 4242, 0, 0, 1_000_000, 0
    events = 0
    label = b"x" * 199 + b"\0"
    with open(os.path.join(path, "stream-%d" % tid), "wb") as stream:
        while written < megabytes << 20:
            body = bytearray()
            begin = timestamp
            while len(body) < packet_size - 72 - 600:
                serial += 1
                timestamp += 1000
                kind = serial % 4
                if kind == 0:
                    body += struct.pack("<BQQB", ids["item_label"], timestamp, serial, 0) + label
                elif kind == 1:
                    body += struct.pack("<BQQi", ids["loop_create"], timestamp, serial, tid) + label
                elif kind == 2:
                    body += struct.pack("<BQQ", ids["before_sources"], timestamp, serial) + b"m\0" + struct.pack("<QI", 1, 1)
                else:
                    body += struct.pack("<BQQQQQQQ", ids["timer_fire_begin"], timestamp, 1, serial, timestamp, 0, 1000, 0)
                events += 1
            content = 72 + len(body)
            header = struct.pack("<I16sQQQQQQi", 0xC1FC1FC1, uuid, begin, timestamp, content * 8, packet_size * 8,
                                 sequence, 0, tid)
            stream.write(header + body + bytes(packet_size - content))
            written += packet_size
            sequence += 1
    open(os.path.join(path, ".end"), "w").write(
        "events_recorded = %d;\nevents_lost = 0;\nstream-%d = %d events, %d bytes;\n" % (events, tid, events, written, ))
    return events


def claims_complete(health):
    return (health.get("eventsLost", 0) == 0 and health.get("packetsLost", 0) == 0
            and not health.get("recordingCutOff") and not health.get("damage"))


def record_seeds(rlctl, scratch, tracers):
    seeds = []
    for tracer in tracers:
        path = os.path.join(scratch, "seed-" + tracer)
        status, _, err, _, _ = run([rlctl, "run", "mixed", "--duration", "300ms", "--tracer", tracer, "--trace", path],
                                   120, 8 << 30)
        if status != 0:
            print("fuzz: cannot record the %s seed: %s" % (tracer, err.decode(errors="replace").strip()), file=sys.stderr)
            continue
        seeds.append(Trace(path, "embedded" if tracer == "embedded" else "ctf"))
    return seeds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rlctl", required=True)
    parser.add_argument("--mutants", type=int, default=300, help="per seed trace")
    parser.add_argument("--seconds", type=float, default=180, help="stop making mutants after this long")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memory", type=int, default=2048, help="MiB of address space per run")
    parser.add_argument("--deadline", type=float, default=60, help="seconds per run")
    parser.add_argument("--keep", help="folder to copy failing inputs into")
    parser.add_argument("--tracers", default="embedded,lttng")
    parser.add_argument("--traces", nargs="*", help="seed trace folders to use instead of recording")
    parser.add_argument("--memory-trace", type=int, default=0, metavar="MB",
                        help="also summarize an adversarial trace of this size (every event names a new loop, timer or label)")
    parser.add_argument("--memory-bound", type=int, default=512, metavar="MiB",
                        help="the peak resident memory that summarizing it must stay within")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    scratch = tempfile.mkdtemp(prefix="rlctl-fuzz-")
    passed = failed = 0
    peak_kib = 0
    started = time.monotonic()
    try:
        tracers = [t for t in args.tracers.split(",") if t and (t != "lttng" or shutil.which("lttng"))]
        seeds = [Trace(p, "embedded" if os.path.exists(os.path.join(p, ".end")) or "rlctl-recorder" in open(os.path.join(p, "metadata"), "rb").read(4096).decode(errors="replace") else "ctf") for p in args.traces] \
            if args.traces else record_seeds(args.rlctl, scratch, tracers)
        if not seeds:
            print("fuzz: no seed trace", file=sys.stderr)
            return 2
        for trace in seeds:
            status, out, err, _, _ = run([args.rlctl, "summarize", "--format", "json", trace.path], args.deadline, args.memory << 20)
            if status != 0:
                print("fuzz: the seed %s does not read: %s" % (trace.path, err.decode(errors="replace").strip()), file=sys.stderr)
                return 2
            whole = json.loads(out)["health"]["eventsRead"]
            for number in range(args.mutants):
                if time.monotonic() - started > args.seconds:
                    break
                copy = os.path.join(scratch, "mutant")
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(trace.path, copy)
                what, must_show = mutate(trace, copy, rng)
                commands = [[args.rlctl, "summarize", "--format", "json", copy]]
                if number % 10 == 0:
                    commands.append([args.rlctl, "export", copy, "--format", "chrome", "--output", os.path.join(scratch, "out.json")])
                if number % 10 == 5:
                    commands.append([args.rlctl, "report", copy, "--output", os.path.join(scratch, "out.html")])
                problem = None
                for command in commands:
                    status, out, err, peak, timed_out = run(command, args.deadline, args.memory << 20)
                    peak_kib = max(peak_kib, peak)
                    if timed_out:
                        problem = "hang (over %ds)" % args.deadline
                    elif status is None or status < 0:
                        problem = "crash (signal %d): %s" % (-status, err.decode(errors="replace").strip()[-300:])
                    elif status not in (0, 1, 2):
                        problem = "exit %d: %s" % (status, err.decode(errors="replace").strip()[-300:])
                    elif command[1] == "summarize" and status == 0:
                        health = json.loads(out)["health"]
                        if claims_complete(health) and (health["eventsRead"] < whole or must_show):
                            problem = "reads %d of %d events and says the trace is complete" % (health["eventsRead"], whole)
                    if problem:
                        break
                if problem:
                    failed += 1
                    print("FAIL %s mutant %d (%s): %s: %s" % (trace.kind, number, what, " ".join(command[1:2]), problem))
                    if args.keep:
                        kept = os.path.join(args.keep, "%s-%d-%d" % (trace.kind, args.seed, number))
                        shutil.rmtree(kept, ignore_errors=True)
                        shutil.copytree(copy, kept)
                        open(os.path.join(kept, "FUZZ-CASE"), "w").write("%s\n%s\n" % (what, problem))
                else:
                    passed += 1
        if args.memory_trace:
            embedded = [t for t in seeds if t.kind == "embedded"]
            if not embedded:
                print("fuzz: no embedded seed to build the adversarial trace from", file=sys.stderr)
                return 2
            path = os.path.join(scratch, "adversarial")
            events = adversarial_trace(embedded[0].path, path, args.memory_trace)
            status, out, err, peak, timed_out = run([args.rlctl, "summarize", "--format", "json", path], 1800, 8 << 30)
            peak_kib = max(peak_kib, peak)
            shutil.rmtree(path, ignore_errors=True)
            read = json.loads(out)["health"]["eventsRead"] if status == 0 else -1
            verdict = "within" if status == 0 and peak // 1024 <= args.memory_bound and read == events else "OVER"
            print("fuzz: an adversarial trace of %d MB (%d events, each naming something new): summarize exit %d, read %d events, peak memory %d MiB, %s the %d MiB bound"
                  % (args.memory_trace, events, status, read, peak // 1024, verdict, args.memory_bound))
            if verdict != "within":
                failed += 1
                print("FAIL memory bound: %s" % err.decode(errors="replace").strip()[-300:])
            else:
                passed += 1
        print("fuzz: %d inputs in %.0f s, peak memory of any read %d MiB" % (passed + failed, time.monotonic() - started, peak_kib // 1024))
        print("%d passed, %d failed" % (passed, failed))
        return 1 if failed else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

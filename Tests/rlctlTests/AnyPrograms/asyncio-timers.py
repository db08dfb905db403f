"""An asyncio program with a known timer schedule, for `rlctl record --any`'s tests: COUNT timers, one every
INTERVAL_MS, each scheduled by the one before (call_later). It counts the loop's iterations itself (every
_run_once is one wait in the selector) and logs, per timer, how late it ran; then writes both to REPORT (JSON).

    python3 asyncio-timers.py COUNT INTERVAL_MS REPORT
"""
import asyncio
import json
import sys

count, interval_ms, report = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
interval = interval_ms / 1000.0
iterations = 0
lateness_ms = []


class CountingLoop(asyncio.SelectorEventLoop):
    def _run_once(self):
        global iterations
        iterations += 1
        super()._run_once()


def main():
    loop = CountingLoop()
    done = loop.create_future()

    def fire(due, remaining):
        lateness_ms.append((loop.time() - due) * 1000.0)
        if remaining == 0:
            done.set_result(None)
            return
        handle_due = loop.time() + interval
        loop.call_at(handle_due, fire, handle_due, remaining - 1)

    first = loop.time() + interval
    loop.call_at(first, fire, first, count - 1)
    loop.run_until_complete(done)
    runs = iterations
    loop.close()
    with open(report, 'w') as out:
        json.dump({'iterations': runs, 'timers': len(lateness_ms), 'lateness_ms': lateness_ms}, out)


main()

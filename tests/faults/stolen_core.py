"""Steal a core from everything else on it, as a busy host or a noisy neighbour does:
`python tests/faults/stolen_core.py CORE HOLD_MS TIMES EVERY_MS` runs a SCHED_FIFO busy loop
pinned to CORE for HOLD_MS, TIMES times, EVERY_MS apart (root; exit 77 where real-time
scheduling is refused). RT throttling (950 of every 1000 ms by default) leaves such a loop
whole. Prints each hold's (start, end) in CLOCK_MONOTONIC ns, one a line."""

from __future__ import annotations

import os
import sys
import time


def main(core: int, hold_ms: float, times: int, every_ms: float) -> int:
    os.sched_setaffinity(0, {core})
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    except PermissionError:
        return 77
    first = time.monotonic_ns()
    for index in range(times):
        began = first + int(index * every_ms * 1e6)
        time.sleep(max(0.0, (began - time.monotonic_ns()) / 1e9))
        start = time.monotonic_ns()
        while time.monotonic_ns() < start + hold_ms * 1e6:
            pass
        print(start, time.monotonic_ns(), flush=True)
    return 0


if __name__ == "__main__":
    core, hold, times, every = sys.argv[1:5]
    sys.exit(main(int(core), float(hold), int(times), float(every)))

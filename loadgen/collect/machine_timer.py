"""A reference timer: a tiny process that sleeps on a grid and writes down when it overslept.

It runs beside the load generator, pinned to the same cores, and does nothing else. When the
load generator sends late and this timer overslept at the same moment, the machine stalled (a
VM stole the core, another process preempted both), not the client. `machine_watch` is the load
generator's side; this file is the child, run as

    python -I -S machine_timer.py <period_ms> <threshold_ms> <outfile>

standard library only, so it starts in ~20 ms and costs no imports of the load generator's.

It wakes at absolute deadlines start + k × period (never `sleep(period)`, which drifts). A
wake-up `threshold_ms` or more past its deadline appends one line to `outfile`:

    <deadline, CLOCK_MONOTONIC ns> <oversleep ns>\\n

CLOCK_MONOTONIC is `time.perf_counter_ns`'s clock on Linux, so a line's deadline sits on the
clock of requests.jsonl. A stall that spans several deadlines is one line (the first deadline it
missed); the timer then resumes at the next deadline still ahead. So a stall of D ms is written
as between D - period and D ms, and one shorter than a period may fall between two deadlines
and go unseen. Each line is one `write` to an O_APPEND file: a crash loses nothing written.

Its sleep is a `select` on stdin with the time left to the deadline as timeout: one syscall a
tick both sleeps and notices the parent's end of the pipe closing (the parent stopped it, or
died), which ends the timer. SIGTERM ends it too; a terminal's SIGINT, SIGHUP and SIGQUIT are
blocked, so a Ctrl-C aimed at the load generator does not end the timer first.

Period 5 ms, threshold 2 ms. Each wake-up costs ~40-50 µs of CPU on this project's 2-core
Firecracker VM (of which ~20-25 µs is the VM's own: a C loop of bare clock_nanosleep pays that),
so 5 ms measured 0.80-0.96% of one core over 10 s (/proc/PID/schedstat), 10 ms 0.35-0.68% and 2 ms
1.65%. 5 ms because the load generator's lag bound is 10 ms (p99): a 10-ms period would miss
half of the 5-ms stalls and write a 12-ms one as anything from 2 ms. The threshold sits well
above ordinary wake-up jitter (tens of µs) and below what a client's lag cares about.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

DEFAULT_PERIOD_MS = 5.0
DEFAULT_THRESHOLD_MS = 2.0
# A terminal's signals: blocked from the child's first instruction (posix_spawn's setsigmask)
# and again here, for a timer started any other way.
BLOCKED_SIGNALS = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def serve(period_ms: float, threshold_ms: float, path: str) -> None:
    """Tick until stdin reaches its end, writing one line per oversleep of `threshold_ms` or more."""
    signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED_SIGNALS)
    period = max(1, int(period_ms * 1e6))
    threshold = int(threshold_ms * 1e6)
    out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    start = time.monotonic_ns()
    tick = 1
    while True:
        deadline = start + tick * period
        now = time.monotonic_ns()
        if now < deadline:
            # select rounds its timeout up to the µs, so it does not wake early; stdin readable
            # means the parent wrote (ignored) or closed its end (read returns b"").
            readable, _, _ = select.select((0,), (), (), (deadline - now) / 1e9)
            if readable and not _read_stdin():
                return
            now = time.monotonic_ns()
            if now < deadline:
                continue
        late = now - deadline
        if late >= threshold:
            os.write(out, f"{deadline} {late}\n".encode("ascii"))
        # The next deadline still ahead: a long stall is one line, not one per missed tick.
        tick = (now - start) // period + 1


def _read_stdin() -> bool:
    """Drain what the parent wrote; False once its end is closed."""
    try:
        return bool(os.read(0, 4096))
    except OSError:
        return False


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(f"usage: {argv[0]} <period_ms> <threshold_ms> <outfile>", file=sys.stderr)
        return 2
    serve(float(argv[1]), float(argv[2]), argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Waiting for a time on the run's clock (perf_counter_ns), precisely, unless the run stops.

Lives in the gevent world.

The event loop's own timers wake up to a millisecond late (libev rounds epoll's timeout up to
whole ms). Spinning (yielding in a loop) through that last millisecond was precise but cost
~0.9 ms of CPU for every request released, a quarter of the client's work at 200 req/s. Instead
the last stretch waits on a Linux timerfd armed at the due time less SPIN_NS, with nanosecond
resolution; epoll wakes the loop when it fires, and only the last SPIN_NS are spun, which covers
the kernel's wake-up latency (0.1–0.3 ms measured on a VM). Where timerfd is missing (not Linux)
the old spin of the last SPIN_FALLBACK_S stays.
"""

from __future__ import annotations

import time

import gevent
import gevent.event

from loadgen.traffic.timer_fd import TimerFds, timer_fds

SPIN_NS = 250_000  # spun after the timerfd fired: its wake-up is ~0.1–0.3 ms late
SPIN_FALLBACK_S = 0.0015  # without timerfd: the loop's timers are up to 1 ms late
# Waits longer than this first sleep on the stop event (so a stop ends them at once).
COARSE_S = 0.02

_FDS: TimerFds | None = timer_fds()


def wait_until(due_ns: int, stop: gevent.event.Event) -> bool:
    """Sleep until `due_ns`; False if the run was stopped meanwhile. Other greenlets run
    meanwhile, and the release lands within tens of microseconds of its time."""
    fds = _FDS
    if fds is None:
        spin_ns = int(SPIN_FALLBACK_S * 1e9)
        coarse_ns = spin_ns
    else:
        spin_ns, coarse_ns = SPIN_NS, int(COARSE_S * 1e9)
    wait_s = (due_ns - time.perf_counter_ns() - coarse_ns) / 1e9
    if wait_s > 0 and stop.wait(wait_s):
        return False
    if fds is not None and due_ns - time.perf_counter_ns() > spin_ns:
        fds.sleep_until(due_ns - spin_ns)
    while time.perf_counter_ns() < due_ns:
        gevent.sleep(0)
    return not stop.is_set()

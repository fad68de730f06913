"""Waiting for a time on the run's clock (perf_counter_ns), precisely, unless the run stops.

Lives in the gevent world.
"""

from __future__ import annotations

import time

import gevent
import gevent.event

SPIN_S = 0.0015  # see wait_until


def wait_until(due_ns: int, stop: gevent.event.Event) -> bool:
    """Sleep until `due_ns`; False if the run was stopped meanwhile.

    The event loop's timers wake up to a millisecond late (timeouts are rounded up to whole
    ms), so the last stretch is spent yielding: other greenlets run, and the release lands
    within tens of microseconds of its time instead of half a millisecond on average.
    """
    wait_s = (due_ns - time.perf_counter_ns()) / 1e9 - SPIN_S
    if wait_s > 0 and stop.wait(wait_s):
        return False
    while time.perf_counter_ns() < due_ns:
        gevent.sleep(0)
    return not stop.is_set()

"""Waiting for a time on the run's clock (perf_counter_ns), precisely, unless the run stops.

Lives in the gevent world.

The event loop's own timers wake up to a millisecond late (libev rounds epoll's timeout up to
whole ms). Spinning (yielding in a loop) through that last millisecond was precise but cost
~0.9 ms of CPU for every request released, a quarter of the client's work at 200 req/s. Instead
the last stretch waits on a Linux timerfd, with nanosecond resolution, armed a margin before the
due time; epoll wakes the loop when it fires and only the margin is spun. The margin is what the
wake-ups have recently been late by (WakeMargin): on a busy client ~0.1 ms, on an idle VM core
that wakes slowly up to a few ms (measured on this VM: 0.1–0.3 ms usually, spikes of 1–3 ms), so
precision is kept where wake-ups are slow and CPU saved where they are not; and never more than
3% of the time between waits, so at high rates the spin stays a small share of the core. Where
timerfd is missing (not Linux) the old spin of the last SPIN_FALLBACK_S stays.
"""

from __future__ import annotations

import time

import gevent
import gevent.event

from loadgen.traffic.timer_fd import TimerFds, timer_fds

SPIN_FALLBACK_S = 0.0015  # without timerfd: the loop's timers are up to 1 ms late
# Waits longer than this first sleep on the stop event (so a stop ends them at once).
COARSE_S = 0.02


class WakeMargin:
    """How long before a due time to wake: the worst lateness of recent timerfd wake-ups (a
    maximum that decays by DECAY a wake-up, so one slow wake-up widens the next ~40 margins
    and is then forgotten) plus FLOOR_NS, at most CEILING_NS (the old spin's ~1.5 ms), and at
    most SPIN_SHARE of the recent time between waits: spinning never takes more than that share
    of the core. At 50 req/s the budget (0.6 ms) covers an idle core's slow wake-ups; at
    200 req/s it holds the spin to 0.15 ms, where a wake-up's lateness is mostly the loop
    finishing other work (a sweep of the streams, stream_sweeper.py) that no spin would undo."""

    FLOOR_NS = 100_000
    CEILING_NS = 2_000_000
    DECAY = 0.95
    SPIN_SHARE = 0.03
    GAP_WEIGHT = 0.1  # of the newest gap in the moving average of gaps between waits

    def __init__(self) -> None:
        self.late_ns = 150_000  # a start between a busy and an idle core's usual lateness
        self.gap_ns = 20_000_000  # 50 waits a second, until measured
        self._last_ns = 0

    @property
    def margin_ns(self) -> int:
        budget_ns = int(self.SPIN_SHARE * self.gap_ns)
        return min(self.CEILING_NS, self.FLOOR_NS + self.late_ns, budget_ns)

    def observe(self, late_ns: int) -> None:
        # A stall (the process paused) counts as the ceiling: it says nothing about wake-ups.
        self.late_ns = max(min(late_ns, self.CEILING_NS), int(self.late_ns * self.DECAY))

    def waiting(self, now_ns: int) -> None:
        """A wait begins: the gap since the last one feeds the spin budget."""
        if self._last_ns:
            gap_ns = min(now_ns - self._last_ns, 1_000_000_000)  # a pause is not a rate
            self.gap_ns += int(self.GAP_WEIGHT * (gap_ns - self.gap_ns))
        self._last_ns = now_ns


_FDS: TimerFds | None = timer_fds()
_MARGIN = WakeMargin()


def wait_until(due_ns: int, stop: gevent.event.Event) -> bool:
    """Sleep until `due_ns`; False if the run was stopped meanwhile. Other greenlets run
    meanwhile, and the release lands within tens of microseconds of its time."""
    fds = _FDS
    if fds is None:
        spin_ns = int(SPIN_FALLBACK_S * 1e9)
        coarse_ns = spin_ns
    else:
        _MARGIN.waiting(time.perf_counter_ns())
        spin_ns, coarse_ns = _MARGIN.margin_ns, int(COARSE_S * 1e9)
    wait_s = (due_ns - time.perf_counter_ns() - coarse_ns) / 1e9
    if wait_s > 0 and stop.wait(wait_s):
        return False
    if fds is not None and due_ns - time.perf_counter_ns() > spin_ns:
        wake_ns = due_ns - spin_ns
        fds.sleep_until(wake_ns)
        _MARGIN.observe(time.perf_counter_ns() - wake_ns)
    while time.perf_counter_ns() < due_ns:
        gevent.sleep(0)
    return not stop.is_set()

"""The load generator's own process: how much CPU it used, and a heap the collector leaves alone.

A client that needs most of a core is late by its own fault: the report's client trust compares
its CPU use with `client.max_cpu`. One meter for every driver, every search level and every
worker; one heap freeze before the traffic of each.
"""

from __future__ import annotations

import gc
import inspect
import sys
import time

import psutil


class CpuMeter:
    """`with CpuMeter() as meter: ...` then `meter.percent` (user + system, this process, in %
    of one core), `meter.cpu_s` and `meter.wall_s`; set also when the block raised."""

    def __init__(self) -> None:
        self._process = psutil.Process()
        self._cpu_before = 0.0
        self._wall_before = 0.0
        self.cpu_s = 0.0
        self.wall_s = 0.0
        self.percent: float | None = None

    def _cpu_now(self) -> float:
        times = self._process.cpu_times()
        return float(times.user + times.system)

    def __enter__(self) -> CpuMeter:
        self._cpu_before, self._wall_before = self._cpu_now(), time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu_s = self._cpu_now() - self._cpu_before
        self.wall_s = max(time.monotonic() - self._wall_before, 1e-9)
        self.percent = round(100 * self.cpu_s / self.wall_s, 1)


def freeze_heap() -> None:
    """Everything built before the traffic lives for the whole run: move it out of the
    collector's sight, so a full collection mid-run does not stall every stream for
    milliseconds (measured in bench/)."""
    gc.collect()
    gc.freeze()
    # inspect maps every loaded module to its file the first time it is asked what module a frame
    # is in (Locust's Runner.stop asks, to log its caller): 58-65 ms of a held loop at the first
    # level's end, measured; now, before the traffic, and only newer modules later.
    inspect.getmodule(sys._getframe())

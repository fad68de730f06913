"""Samples the counted devices' energy through Zeus into `energy.jsonl` while the server serves.

The thin layer that talks to Zeus: a `ZeusMonitor` measures back-to-back windows, one per
half second (each read ends the open window and opens the next), and each window's
`Measurement` becomes one line (loadgen.collect.energy_samples). Like the memory sampler
(loadgen.collect.resources) it is a greenlet on an absolute grid, from the server's readiness
to the end of the traffic; lines taken before the traffic's t0 wait in memory and are written,
with negative `t_s`, once t0 is known. `measure_idle` holds the run for a few seconds before
the traffic so the report can subtract idle power. Everything it decided (devices, why nothing
is measured, the idle span) is `describe()`d into run.json's `energy`.
"""

from __future__ import annotations

import contextlib
import json
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import gevent
import gevent.event

from loadgen.collect.energy_devices import EnergyPlan, ZeusDevices, plan_energy, setting_name
from loadgen.collect.energy_samples import ZeusMeasurement, device_joules, from_measurement
from loadgen.collect.resources import next_tick
from loadgen.rundir.disk import LineFile
from loadgen.rundir.run_json import EnergySection
from servers.energy_setting import EnergySetting

SAMPLE_INTERVAL_S = 0.5
IDLE_S = 5.0  # idle power before the traffic: long enough to average the counters' steps


class Meter(Protocol):
    def read(self) -> ZeusMeasurement:
        """The measurement of the window since the last read (or since opening)."""

    def close(self) -> None: ...


class ZeusMeter:
    """Back-to-back Zeus measurement windows over the planned devices."""

    def __init__(self, plan: EnergyPlan) -> None:
        # pandas and scikit-learn come with it (~1.3 s): imported only when something is measured.
        from zeus.monitor.energy import ZeusMonitor

        # A window shorter than the NVML counter's update step reads 0 J; the next one gets it.
        warnings.filterwarnings("ignore", message="The energy consumption of one or more GPUs")
        self._monitor = ZeusMonitor(gpu_indices=list(plan.gpus), cpu_indices=list(plan.cpus))
        self._window = 0
        self._monitor.begin_window(self._key(), sync_execution=False)

    def _key(self) -> str:
        return f"loadtest-{self._window}"

    def read(self) -> ZeusMeasurement:
        # End, then begin: the microseconds between are lost rather than counted twice.
        measurement: ZeusMeasurement = self._monitor.end_window(self._key(), sync_execution=False)
        self._window += 1
        self._monitor.begin_window(self._key(), sync_execution=False)
        return measurement

    def close(self) -> None:
        self._monitor.end_window(self._key(), sync_execution=False, cancel=True)


def open_meter(plan: EnergyPlan) -> Meter:
    return ZeusMeter(plan)


class EnergySampler:
    """`start(pid)` when the server is ready, `measure_idle()` before the traffic, `set_origin`
    at t0, `stop()` when the traffic ends. The file is made only when something is measured;
    a failing disk stops the writing and is reported once through `on_failure`."""

    def __init__(
        self,
        path: Path,
        setting: EnergySetting,
        interval_s: float = SAMPLE_INTERVAL_S,
        *,
        devices: Callable[[], ZeusDevices] = ZeusDevices.open,
        meter_factory: Callable[[EnergyPlan], Meter] = open_meter,
        on_sample: Callable[[dict[str, float]], None] | None = None,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.setting = setting
        self.interval_ns = round(interval_s * 1e9)
        self.plan = EnergyPlan(setting_name(setting), reason="the server was not started")
        self.count = 0
        self.failure: str | None = None
        self._file: LineFile | None = None  # made only when something is measured
        self._on_failure = on_failure
        self._devices, self._meter_factory, self._on_sample = devices, meter_factory, on_sample
        self._meter: Meter | None = None
        self._names: set[str] = set()
        self._origin_ns: int | None = None
        self._idle_ns: tuple[int, int] | None = None
        self._pending: list[tuple[int, ZeusMeasurement]] = []
        self._greenlet: gevent.Greenlet | None = None
        self._total_j = 0.0

    @property
    def measuring(self) -> bool:
        return self._meter is not None

    def start(self, pid: int | None) -> None:
        """Choose the devices for the server whose root is `pid` (None: not ours) and, when
        there are any, start sampling them."""
        if self._greenlet is not None:
            raise RuntimeError("energy sampler already started")
        self.plan = plan_energy(self.setting, pid, self._devices)
        if not self.plan.measuring:
            return
        try:
            self._meter = self._meter_factory(self.plan)
        except Exception as exc:  # Zeus refused (a permission, a driver): say so, measure nothing
            why = f"Zeus could not measure ({exc})"
            self.plan = EnergyPlan(self.plan.setting, reason=why, how=self.plan.how)
            return
        self._file = LineFile(self.path, self._on_failure)
        self._greenlet = gevent.spawn(self._loop)

    def measure_idle(self, stop: gevent.event.Event, seconds: float = IDLE_S) -> None:
        """Hold the run `seconds` with no traffic, so idle power is known (only when measuring)."""
        if not self.measuring or seconds <= 0:
            return
        start_ns = time.perf_counter_ns()
        if not stop.wait(seconds):
            self._idle_ns = (start_ns, time.perf_counter_ns())

    def set_origin(self, t0_ns: int) -> None:
        """The run's t0 (perf_counter_ns): writes the samples held so far, then each as taken."""
        self._origin_ns = t0_ns
        pending, self._pending = self._pending, []
        for taken_ns, measurement in pending:
            self._write(taken_ns, measurement)

    def stop(self) -> None:
        """Idempotent: one last read closes the open window, then the file."""
        greenlet, self._greenlet = self._greenlet, None
        if greenlet is not None:
            greenlet.kill(block=True)
            self._take()
        self._pending.clear()
        if self._file is not None:
            self._file.close()
        if self._meter is not None:
            with contextlib.suppress(Exception):  # Zeus's own clean-up must not fail the run's
                self._meter.close()
            self._meter = None

    def describe(self) -> EnergySection:
        """run.json's `energy`: what was decided and done (the report reads it back)."""
        plan, origin = self.plan, self._origin_ns
        idle = None
        if self._idle_ns is not None and origin is not None:
            idle = [round((moment - origin) / 1e9, 4) for moment in self._idle_ns]
        return {
            "setting": plan.setting,
            "measured": plan.measuring and self.count > 0,
            "reason": plan.reason or (None if self.count else self.failure or "no sample was taken"),
            "source": plan.source,
            "how": plan.how,
            "devices": sorted(self._names) or plan.devices,
            "notes": list(plan.notes),
            "interval_s": self.interval_ns / 1e9,
            "idle_s": idle,
            "samples": self.count,
            "failure": self.failure,
        }

    def _loop(self) -> None:
        start_ns = time.perf_counter_ns()
        tick = 1
        while True:
            gevent.sleep(max(0, start_ns + tick * self.interval_ns - time.perf_counter_ns()) / 1e9)
            if not self._take():
                return
            tick = next_tick(start_ns, self.interval_ns, time.perf_counter_ns(), tick)

    def _take(self) -> bool:
        """One read; False (and sampling over, said in `failure`) when Zeus fails mid-run."""
        if self._meter is None or self.failure is not None:
            return False
        try:
            measurement = self._meter.read()
        except Exception as exc:  # a GPU lost mid-run: the windows after it get no figures
            self.failure = f"energy sampling stopped: {exc}"
            return False
        taken_ns = time.perf_counter_ns()
        joules = device_joules(measurement)
        self._names |= set(joules)
        if self._on_sample is not None and measurement.time > 0:
            total = sum(joules.values())
            self._total_j += total
            self._on_sample({"energy_watts": total / measurement.time, "energy_joules": self._total_j})
        if self._origin_ns is None:
            self._pending.append((taken_ns, measurement))
        else:
            self._write(taken_ns, measurement)
        return True

    def _write(self, taken_ns: int, measurement: ZeusMeasurement) -> None:
        assert self._origin_ns is not None
        sample = from_measurement(round((taken_ns - self._origin_ns) / 1e9, 4), measurement)
        data = {**sample.to_dict(), "dt_s": round(sample.dt_s, 6)}
        if self._file is not None and self._file.append(json.dumps(data, separators=(",", ":"))):
            self.count += 1

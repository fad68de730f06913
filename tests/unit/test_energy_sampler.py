"""Choosing the devices (`server.energy`) and the sampler that reads them through Zeus.

The device choice runs on Zeus's real device layer: on this machine (no GPU, no
/sys/class/powercap) it must say "no NVML device, no RAPL". Two faults this machine cannot
produce are made by hand, each said where it is: Zeus missing (it is installed here, so its
import is blocked) and a device that answers (the sampler gets a stand-in meter that returns
Zeus `Measurement`s of a known 300 W, because no counter exists here to read).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from pathlib import Path

import gevent
import gevent.event
import pytest
from zeus.monitor.energy import Measurement

from loadgen.collect.energy_devices import EXTERNAL, NOT_INSTALLED, EnergyPlan, ZeusDevices, plan_energy
from loadgen.collect.energy_sampler import EnergySampler
from loadgen.collect.energy_samples import read_energy_samples
from servers.energy_setting import EnergyDevices
from servers.simulated import SimulatedServerConfig

NO_COUNTERS = not os.path.exists("/sys/class/powercap") and not os.path.exists("/dev/nvidiactl")
WATTS = 300.0


def test_the_setting_reads_auto_off_and_device_lists() -> None:
    def energy(value: object) -> object:
        return SimulatedServerConfig.model_validate({"kind": "simulated", "energy": value}).energy

    assert SimulatedServerConfig(kind="simulated").energy == "auto"
    assert energy(False) == "off"  # YAML's bare `off` arrives as false
    assert energy({"gpus": [0, 1]}) == EnergyDevices(gpus=[0, 1], cpus=[])
    for bad in ({}, {"gpus": [0, 0]}, {"cpus": [-1]}, "on"):
        with pytest.raises(ValueError):
            energy(bad)


@pytest.mark.skipif(not NO_COUNTERS, reason="this machine has energy counters: the reason differs")
def test_a_machine_without_counters_says_so_through_zeus() -> None:
    plan = plan_energy("auto", os.getpid())
    assert not plan.measuring and plan.reason == "no NVML device, no RAPL"
    listed = plan_energy(EnergyDevices(gpus=[0]), os.getpid())
    assert listed.reason == "server.energy names GPU 0 (no NVML device)"


def test_off_and_an_external_server_measure_nothing_without_asking_zeus() -> None:
    def refuse() -> ZeusDevices:
        raise AssertionError("Zeus was asked")

    assert plan_energy("off", os.getpid(), refuse).reason == "off"
    assert plan_energy("auto", None, refuse).reason == EXTERNAL


def test_without_zeus_the_reason_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # Zeus is installed here (the dev extra): hide it, as on a base install.
    for name in [name for name in sys.modules if name == "zeus" or name.startswith("zeus.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "zeus", None)
    plan = plan_energy("auto", os.getpid())
    assert plan.reason == NOT_INSTALLED == "zeus not installed: pip install 'loadtest[energy]'"


class SteadyMeter:
    """Stands in for Zeus's monitor (no counter here): each read is a Measurement of the time
    since the last read at a steady 300 W; `fail_after` reads, it raises as a lost GPU would."""

    def __init__(self, plan: EnergyPlan, fail_after: int | None = None) -> None:
        self.plan, self.fail_after, self.reads = plan, fail_after, 0
        self.last = time.perf_counter()
        self.closed = False

    def read(self) -> Measurement:
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise RuntimeError("GPU 0 is lost")
        now = time.perf_counter()
        elapsed, self.last = now - self.last, now
        return Measurement(time=elapsed, gpu_energy={0: WATTS * elapsed})

    def close(self) -> None:
        self.closed = True


def one_gpu() -> ZeusDevices:
    return ZeusDevices(gpus=[object()], cpu_reason="no RAPL", version="zeus 0.16.0")


def test_the_sampler_writes_back_to_back_windows_the_idle_span_and_run_json(tmp_path: Path) -> None:
    seen: list[dict[str, float]] = []
    meters: list[SteadyMeter] = []

    def meter(plan: EnergyPlan) -> SteadyMeter:
        meters.append(SteadyMeter(plan))
        return meters[-1]

    path = tmp_path / "energy.jsonl"
    sampler = EnergySampler(
        path, EnergyDevices(gpus=[0]), 0.1, devices=one_gpu, meter_factory=meter, on_sample=seen.append
    )
    sampler.start(os.getpid())
    assert sampler.measuring and sampler.plan.devices == ["gpu0"]
    gevent.sleep(0.15)
    sampler.measure_idle(gevent.event.Event(), seconds=0.3)
    t0 = time.perf_counter_ns()
    sampler.set_origin(t0)
    gevent.sleep(0.5)
    sampler.stop()
    samples = list(read_energy_samples(path))
    assert len(samples) >= 7  # ~0.95 s at 0.1 s, and the last window closed at stop
    # Back to back: each window starts where the one before ended (within the read's own time).
    for before, after in itertools.pairwise(samples):
        assert after.start_s == pytest.approx(before.t_s, abs=0.005)
    assert samples[0].t_s < 0 < samples[-1].t_s  # held until t0, then written on its clock
    # dt_s is written to the microsecond: the joules agree with it to that.
    assert all(dict(s.joules) == {"gpu0": pytest.approx(WATTS * s.dt_s, rel=1e-4)} for s in samples)
    described = sampler.describe()
    assert described["measured"] is True and described["reason"] is None
    assert described["devices"] == ["gpu0"] and described["source"] == "zeus 0.16.0"
    idle = described["idle_s"]
    assert idle is not None
    start, end = idle
    assert end - start == pytest.approx(0.3, abs=0.05) and end <= 0  # idle ends before t0
    assert described["samples"] == len(samples) and meters[0].closed
    # The exporter got each window's watts and the running total of joules.
    assert seen[0]["energy_watts"] == pytest.approx(WATTS, rel=0.01)
    total = sum(sum(s.joules.values()) for s in samples)
    assert seen[-1]["energy_joules"] == pytest.approx(total, rel=1e-6)
    json.dumps(described)  # run.json can hold it


def test_a_device_lost_mid_run_stops_the_sampling_and_says_why(tmp_path: Path) -> None:
    sampler = EnergySampler(
        tmp_path / "energy.jsonl",
        EnergyDevices(gpus=[0]),
        0.05,
        devices=one_gpu,
        meter_factory=lambda plan: SteadyMeter(plan, fail_after=3),
    )
    sampler.start(os.getpid())
    sampler.set_origin(time.perf_counter_ns())
    gevent.sleep(0.4)
    sampler.stop()
    described = sampler.describe()
    assert described["samples"] == 3 and described["failure"] == "energy sampling stopped: GPU 0 is lost"


def test_zeus_refusing_to_measure_and_off_write_no_file(tmp_path: Path) -> None:
    def refuse(plan: EnergyPlan) -> SteadyMeter:
        raise RuntimeError("Root privilege is required to read RAPL metrics")

    path = tmp_path / "energy.jsonl"
    sampler = EnergySampler(path, EnergyDevices(gpus=[0]), devices=one_gpu, meter_factory=refuse)
    sampler.start(os.getpid())
    sampler.stop()
    described = sampler.describe()
    assert described["measured"] is False
    assert described["reason"] == "Zeus could not measure (Root privilege is required to read RAPL metrics)"
    off = EnergySampler(path, "off")
    off.start(os.getpid())
    off.measure_idle(gevent.event.Event())  # nothing measured: returns at once, no idle held
    off.stop()
    assert off.describe()["reason"] == "off" and off.describe()["idle_s"] is None
    assert not path.exists()


class Devices(list[object]):
    """Stands in for Zeus's GPUs/CPUs collections (none exist here): a list of device objects
    under `.gpus`/`.cpus`, as Zeus keeps them; no GPU of it has an energy counter to ask about."""

    @property
    def gpus(self) -> list[object]:
        return list(self)

    @property
    def cpus(self) -> list[object]:
        return list(self)

    def supports_get_total_energy_consumption(self, index: int) -> bool:
        return True


class Zone:
    def __init__(self, package: int) -> None:
        self.cpu_index = package  # RAPL's intel-rapl:N


def test_auto_counts_the_packages_of_the_trees_cores_and_gpus_it_cannot_list_whole() -> None:
    # This process's cores are in package 0 (read from /sys); a zone for package 7 is not its.
    found = ZeusDevices(gpus=Devices([object()]), cpus=Devices([Zone(7), Zone(0)]), version="zeus 0.16.0")
    plan = plan_energy("auto", os.getpid(), lambda: found)
    assert plan.measuring and plan.cpus == (1,) and plan.source == "zeus 0.16.0"
    # A GPU that is not NVML's (AMD, here a bare object): its processes cannot be listed, so it
    # is counted whole rather than guessed away, and a note says so.
    assert plan.gpus == (0,)
    assert plan.notes == ("GPUs [0] counted whole: their processes could not be listed",)
    assert plan.devices == ["gpu0", "cpu1"]

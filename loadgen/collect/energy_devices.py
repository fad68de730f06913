"""Which devices a run counts (`server.energy`), asked of Zeus's device layer.

`auto` counts the GPUs on which NVML lists a process of the server's tree and the CPU packages
(RAPL zones) holding the cores the tree may run on. A list counts exactly what it names. When
nothing can be counted the plan carries the reason the report prints, e.g. "no NVML device, no
RAPL" (this is never a number from nowhere). Zeus is imported here only when energy is wanted:
its device layer costs ~0.2 s, so the CLI's import time does not grow.

A GPU or a CPU package is counted whole: every process on it, the load generator's too when it
shares the package. The report says so beside the figures.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from loadgen.collect.resources import process_tree
from servers.energy_setting import EnergyDevices, EnergySetting

NOT_INSTALLED = "zeus not installed: pip install 'loadtest[energy]'"
OFF = "off"
EXTERNAL = (
    "an external server has no process tree here to follow: list its devices in server.energy "
    "to count this machine's"
)
PRIVILEGES = "https://ml.energy/zeus/getting_started/#system-privileges"


@dataclass(frozen=True)
class EnergyPlan:
    """What to count: GPU and CPU indices as Zeus numbers them, or why nothing is counted."""

    setting: str  # auto, off, devices
    gpus: tuple[int, ...] = ()
    cpus: tuple[int, ...] = ()
    reason: str | None = None  # why nothing is measured (then gpus and cpus are empty)
    how: str = ""  # how the devices were chosen, in words
    notes: tuple[str, ...] = field(default_factory=tuple)
    source: str | None = None  # e.g. "zeus 0.16.0"

    @property
    def measuring(self) -> bool:
        return self.reason is None and bool(self.gpus or self.cpus)

    @property
    def devices(self) -> list[str]:
        return [f"gpu{index}" for index in self.gpus] + [f"cpu{index}" for index in self.cpus]


@dataclass
class ZeusDevices:
    """Zeus's GPUs and CPUs (RAPL), each with the reason it is unavailable."""

    gpus: Any = None  # zeus.device.gpu.GPUs
    cpus: Any = None  # zeus.device.cpu.CPUs
    gpu_reason: str | None = None
    cpu_reason: str | None = None
    version: str = ""

    @classmethod
    def open(cls) -> ZeusDevices:
        """Ask Zeus for the devices; a missing package or device becomes a reason, never a raise."""
        try:
            import zeus
            from zeus.device import get_cpus, get_gpus
            from zeus.device.cpu.common import ZeusCPUInitError, ZeusCPUNoPermissionError
            from zeus.device.gpu.common import ZeusGPUInitError
        except ImportError:
            return cls(gpu_reason=NOT_INSTALLED, cpu_reason=NOT_INSTALLED)
        found = cls(version=f"zeus {zeus.__version__}")
        try:
            found.gpus = get_gpus()
        except ZeusGPUInitError:
            found.gpu_reason = "no NVML device"  # nor an AMD one (amdsmi)
        except Exception as exc:  # a driver that answers badly: no GPU figures, and why
            found.gpu_reason = f"GPUs unreadable ({exc})"
        try:
            found.cpus = get_cpus()
        except ZeusCPUNoPermissionError:
            found.cpu_reason = f"RAPL not readable without privileges ({PRIVILEGES})"
        except ZeusCPUInitError:
            found.cpu_reason = "no RAPL"
        except Exception as exc:
            found.cpu_reason = f"RAPL unreadable ({exc})"
        if found.gpus is not None and len(found.gpus) == 0:
            found.gpus, found.gpu_reason = None, "no NVML device"
        if found.cpus is not None and len(found.cpus) == 0:
            found.cpus, found.cpu_reason = None, "no RAPL"
        return found


def setting_name(setting: EnergySetting) -> str:
    return setting if isinstance(setting, str) else "devices"


def plan_energy(
    setting: EnergySetting,
    pid: int | None,
    devices: Callable[[], ZeusDevices] = ZeusDevices.open,
) -> EnergyPlan:
    """The devices to count for a server whose root process is `pid` (None: not started here)."""
    name = setting_name(setting)
    if setting == "off":
        return EnergyPlan(name, reason=OFF, how="server.energy: off")
    if setting == "auto" and pid is None:
        return EnergyPlan(name, reason=EXTERNAL, how="auto")
    found = devices()
    if isinstance(setting, EnergyDevices):
        plan = _listed(setting, found)
    else:
        assert pid is not None
        plan = _auto(pid, found)
    return replace(plan, source=found.version or None) if plan.measuring else plan


def _listed(setting: EnergyDevices, found: ZeusDevices) -> EnergyPlan:
    how = "server.energy lists them"
    missing = []
    for kind, wanted, have, reason in (
        ("GPU", setting.gpus, found.gpus, found.gpu_reason),
        ("CPU package", setting.cpus, found.cpus, found.cpu_reason),
    ):
        count = 0 if have is None else len(have)
        beyond = [index for index in wanted if index >= count]
        if beyond:
            there = reason or f"{count} found"
            missing.append(f"server.energy names {kind} {beyond[0]} ({there})")
    if missing:
        return EnergyPlan("devices", reason="; ".join(missing), how=how)
    notes = tuple(_counter_notes(found, setting.gpus))
    return EnergyPlan("devices", tuple(setting.gpus), tuple(setting.cpus), how=how, notes=notes)


def _auto(pid: int, found: ZeusDevices) -> EnergyPlan:
    how = "auto: the GPUs and CPU packages the server's process tree uses"
    try:
        pids = process_tree(pid)
    except Exception:  # the server is gone: the run fails for that; count nothing
        return EnergyPlan("auto", reason="the server's process tree is gone", how=how)
    gpus, gpu_reason, notes = _tree_gpus(found, pids)
    cpus, cpu_reason = _tree_cpus(found, pids)
    if not gpus and not cpus:
        reasons = [gpu_reason or "the server's processes use no GPU", cpu_reason or "no CPU package"]
        if gpu_reason == cpu_reason == NOT_INSTALLED:
            reasons = [NOT_INSTALLED]
        return EnergyPlan("auto", reason=", ".join(reasons), how=how)
    return EnergyPlan("auto", gpus, cpus, how=how, notes=(*notes, *_counter_notes(found, gpus)))


def _tree_gpus(found: ZeusDevices, pids: Sequence[int]) -> tuple[tuple[int, ...], str | None, list[str]]:
    """(GPU indices with a process of the tree, why none can be counted, notes)."""
    if found.gpus is None:
        return (), found.gpu_reason, []
    chosen, unlisted = [], []
    for index, gpu in enumerate(found.gpus.gpus):
        running = gpu_pids(gpu)
        if running is None:
            unlisted.append(index)
        elif running & set(pids):
            chosen.append(index)
    notes = []
    if unlisted:  # amdsmi's process list is not asked: count such GPUs rather than guess
        chosen = sorted({*chosen, *unlisted})
        notes.append(f"GPUs {unlisted} counted whole: their processes could not be listed")
    return tuple(chosen), None, notes


def gpu_pids(gpu: Any) -> set[int] | None:
    """The pids NVML lists on one Zeus GPU (compute and graphics); None where it cannot say (an
    AMD GPU: its handle is amdsmi's, which NVML must not be handed)."""
    try:
        import pynvml
        from zeus.device.gpu.nvidia import NVIDIAGPU
    except ImportError:
        return None
    handle = getattr(gpu, "handle", None)
    if not isinstance(gpu, NVIDIAGPU) or handle is None:
        return None
    found: set[int] = set()
    for listing in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        try:
            found |= {process.pid for process in getattr(pynvml, listing)(handle)}
        except Exception:
            continue
    return found


def _tree_cpus(found: ZeusDevices, pids: Iterable[int]) -> tuple[tuple[int, ...], str | None]:
    """(Zeus CPU indices of the packages holding the tree's cores, why none can be counted)."""
    if found.cpus is None:
        return (), found.cpu_reason
    packages = {package_of(core) for core in tree_cores(pids)}
    # Zeus numbers its RAPL zones by position; each knows its package (intel-rapl:N).
    zones = enumerate(found.cpus.cpus)
    chosen = [index for index, cpu in zones if getattr(cpu, "cpu_index", index) in packages]
    return tuple(chosen), None if chosen else "the tree's cores are in no RAPL package"


def tree_cores(pids: Iterable[int]) -> set[int]:
    """The cores any process of the tree may run on (its affinity)."""
    cores: set[int] = set()
    for pid in pids:
        try:
            cores |= os.sched_getaffinity(pid)
        except OSError:  # exited meanwhile
            continue
    return cores


def package_of(core: int) -> int:
    """The physical package (socket) of a core; 0 where the kernel does not say."""
    path = f"/sys/devices/system/cpu/cpu{core}/topology/physical_package_id"
    try:
        with open(path, encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return 0


def _counter_notes(found: ZeusDevices, gpus: Iterable[int]) -> list[str]:
    """GPUs without a total-energy counter (before Volta): Zeus integrates their power instead."""
    notes = []
    for index in gpus:
        try:
            if not found.gpus.supports_get_total_energy_consumption(index):
                notes.append(f"GPU {index} has no energy counter: Zeus integrates its sampled power")
        except Exception:
            continue
    return notes

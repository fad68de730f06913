"""The load generator's side of the reference timer, and what the timer saw.

`MachineWatch.start` spawns `machine_timer.py` (its doc says what the child does and why its
period is 5 ms), pins it to the load generator's cores and notes /proc/stat's steal time of those
cores; `stop()` ends it and returns `MachineStalls`: every oversleep the timer wrote, plus the
share of the cores' time the hypervisor stole meanwhile. A stall that lines up with the client's
late sends is the machine's, not the client's.

It runs inside the gevent-patched load generator but needs nothing from gevent: the child is
spawned with posix_spawn (no fork of a large process, whose event loop a fork stalls) in its own
session, and reaped by polling `waitpid` (psutil's wait polls a pidfd that gevent's patched
`poll` never reports, so it hangs there until its timeout).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Collection, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from loadgen.collect import machine_timer
from loadgen.rundir.run_json import MachineStallsSection

_STOP_WAIT_S = 1.0  # the timer ends within one period of its pipe closing
_PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuTimes:
    """One cpu's jiffies since boot."""

    steal: int
    total: int


def parse_proc_stat(text: str) -> dict[int, CpuTimes]:
    """Per-cpu times from /proc/stat's `cpuN user nice system idle iowait irq softirq steal guest
    guest_nice` lines. The total is the first eight fields: guest time is counted in user and nice
    already. The all-cpu `cpu` line and lines without a steal field are skipped."""
    cpus: dict[int, CpuTimes] = {}
    for line in text.splitlines():
        name, *fields = line.split() or [""]
        if not (name.startswith("cpu") and name[3:].isdigit()) or len(fields) < 8:
            continue
        jiffies = [int(field) for field in fields[:8]]
        cpus[int(name[3:])] = CpuTimes(steal=jiffies[7], total=sum(jiffies))
    return cpus


def steal_percent(
    before: Mapping[int, CpuTimes], after: Mapping[int, CpuTimes], cores: Collection[int] | None
) -> float | None:
    """The share (%) of `cores`' time (all cpus when None) stolen by the hypervisor between the
    two readings; None when no watched cpu appears in both or no time passed."""
    chosen = [cpu for cpu in (before if cores is None else cores) if cpu in before and cpu in after]
    total = sum(after[cpu].total - before[cpu].total for cpu in chosen)
    if total <= 0:
        return None
    steal = sum(after[cpu].steal - before[cpu].steal for cpu in chosen)
    return 100.0 * max(0, steal) / total


def read_stalls(path: Path) -> tuple[tuple[int, float], ...]:
    """The timer's file as (first missed deadline in monotonic ns, oversleep in ms) pairs. What
    follows the last newline is a line the timer was cut off writing, and is skipped."""
    stalls: list[tuple[int, float]] = []
    for line in path.read_bytes().split(b"\n")[:-1]:
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            stalls.append((int(parts[0]), int(parts[1]) / 1e6))
    return tuple(stalls)


class StallData(TypedDict):
    """One stall: its start in seconds on the run's clock, and its oversleep in ms."""

    t_s: float
    ms: float


class MachineStallsData(TypedDict):
    """MachineStalls as JSON (MachineStalls.to_dict)."""

    measured: bool
    period_ms: float
    threshold_ms: float
    steal_percent: float | None
    count: int
    max_ms: float
    stalls: list[StallData]


@dataclass(frozen=True)
class MachineStalls:
    """What the reference timer saw between start and stop."""

    stalls: tuple[tuple[int, float], ...]  # (first missed deadline, monotonic ns; oversleep, ms)
    steal_percent: float | None  # of the watched cores' time; None where /proc/stat says nothing
    measured: bool  # the timer ran until stop(); False: it died early (or never ran)
    period_ms: float
    threshold_ms: float

    @property
    def count(self) -> int:
        return len(self.stalls)

    @property
    def max_ms(self) -> float:
        return max((ms for _, ms in self.stalls), default=0.0)

    def to_dict(self, origin_ns: int) -> MachineStallsData:
        """As JSON, each stall's start in seconds on the run's clock (`origin_ns` is its t0 on
        `time.perf_counter_ns`, the timer's CLOCK_MONOTONIC on Linux)."""
        return {
            "measured": self.measured,
            "period_ms": self.period_ms,
            "threshold_ms": self.threshold_ms,
            "steal_percent": self.steal_percent,
            "count": self.count,
            "max_ms": self.max_ms,
            "stalls": [{"t_s": (start - origin_ns) / 1e9, "ms": ms} for start, ms in self.stalls],
        }


class MachineWatch:
    """One running reference timer; `stop()` ends it (safe to call again: same result)."""

    def __init__(
        self,
        pid: int,
        pipe_fd: int,
        path: Path,
        cores: Sequence[int] | None,
        period_ms: float,
        threshold_ms: float,
    ) -> None:
        self.pid = pid
        self.path = path
        self._fd: int | None = pipe_fd
        self._cores = cores
        self._period_ms = period_ms
        self._threshold_ms = threshold_ms
        self._before = _cpu_times()
        self._reaped = False
        self._result: MachineStalls | None = None

    @classmethod
    def start(
        cls,
        cores: Sequence[int] | None,
        path: Path,
        period_ms: float = machine_timer.DEFAULT_PERIOD_MS,
        threshold_ms: float = machine_timer.DEFAULT_THRESHOLD_MS,
    ) -> MachineWatch | None:
        """A timer writing to `path`, pinned to `cores` (None: wherever the kernel puts it); None
        if anything failed (the caller warns), never a half-started one."""
        try:
            path.write_bytes(b"")  # a bad path fails here, not silently in the child
            pid, pipe_fd = _spawn(path, period_ms, threshold_ms)
        except Exception:
            return None
        watch = cls(pid, pipe_fd, path, cores, period_ms, threshold_ms)
        if cores is not None:
            try:  # the child has one thread, so pinning its pid pins all of it
                os.sched_setaffinity(pid, cores)
            except Exception:
                watch.stop()
                return None
        return watch

    def stop(self) -> MachineStalls:
        """Close the pipe, wait (briefly) for the timer to end, SIGKILL it if it does not, and
        read what it wrote."""
        if self._result is not None:
            return self._result
        ran_until_now = not self._exited()
        fd, self._fd = self._fd, None
        if fd is not None:
            with suppress(OSError):
                os.close(fd)
        if not self._wait(_STOP_WAIT_S):
            with suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self._wait(_STOP_WAIT_S)
        try:
            stalls = read_stalls(self.path)
        except OSError:
            stalls, ran_until_now = (), False
        steal = steal_percent(self._before, _cpu_times(), self._cores)
        self._result = MachineStalls(stalls, steal, ran_until_now, self._period_ms, self._threshold_ms)
        return self._result

    def _wait(self, wait_s: float) -> bool:
        deadline = time.monotonic() + wait_s
        while not self._exited():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)
        return True

    def _exited(self) -> bool:
        if not self._reaped:
            try:
                self._reaped = os.waitpid(self.pid, os.WNOHANG)[0] != 0
            except ChildProcessError:  # reaped already (gevent's loop reaps any child)
                self._reaped = True
        return self._reaped


def _spawn(path: Path, period_ms: float, threshold_ms: float) -> tuple[int, int]:
    """The timer's pid and our end of its stdin pipe."""
    argv = [sys.executable, "-I", "-S", machine_timer.__file__, str(period_ms), str(threshold_ms), str(path)]
    read_fd, write_fd = os.pipe()  # close-on-exec: no other child inherits our end
    try:
        pid = os.posix_spawn(
            sys.executable,
            argv,
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read_fd, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
            ],
            setsid=True,  # out of the terminal's signals, which are blocked from its start too
            setsigmask=machine_timer.BLOCKED_SIGNALS,
        )
    except BaseException:
        os.close(write_fd)
        raise
    finally:
        os.close(read_fd)
    return pid, write_fd


def _cpu_times() -> dict[int, CpuTimes]:
    try:
        return parse_proc_stat(_PROC_STAT.read_text(encoding="ascii"))
    except (OSError, ValueError):  # not Linux: no steal figure
        return {}


# The timer's file in the run folder.
MACHINE_STALLS_FILE = "machine-stalls.txt"


def machine_summary(
    machine: MachineStalls | None, origin_ns: int, threshold_ms: float
) -> MachineStallsSection:
    """run.json's `machine_stalls`: the stalls of `threshold_ms` or more (the file keeps the
    timer's smaller ones too), and the run clock's zero to read the file with (`origin_ns`)."""
    if machine is None:
        return {"measured": False, "period_ms": None, "threshold_ms": None, "steal_percent": None}
    counted = [ms for _, ms in machine.stalls if ms >= threshold_ms]
    return {
        "measured": machine.measured,
        "period_ms": machine.period_ms,
        "threshold_ms": threshold_ms,
        "steal_percent": None if machine.steal_percent is None else round(machine.steal_percent, 3),
        "count": len(counted),
        "max_ms": max(counted, default=None),
        "origin_ns": origin_ns,
    }


def machine_spans(run_dir: Path, summary: MachineStallsSection | None) -> tuple[tuple[float, float], ...]:
    """The counted stalls (run.json's `machine_stalls`) as (start, end) on the run clock."""
    path = run_dir / MACHINE_STALLS_FILE
    if not summary or not summary.get("measured") or "origin_ns" not in summary or not path.exists():
        return ()
    threshold_ms = summary["threshold_ms"]
    if threshold_ms is None:  # machine_summary gives one whenever the timer was measured
        return ()
    origin, threshold = int(summary["origin_ns"]), float(threshold_ms)
    return tuple(
        ((start - origin) / 1e9, (start - origin) / 1e9 + ms / 1000)
        for start, ms in read_stalls(path)
        if ms >= threshold
    )

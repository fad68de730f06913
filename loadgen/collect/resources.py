"""Samples the server's memory every 200 ms into `resources.jsonl` while it serves the load.

A greenlet in the load generator (gevent world) wakes on an absolute grid from its start (no
drift), sums the RSS of the server's whole process tree (psutil) and, when `pynvml`
(nvidia-ml-py) is importable and a GPU answers, the GPU memory NVML attributes to those
processes. Each sample is one JSON line, flushed as it is taken; `t_s` counts from the traffic's
t0 on the clock of requests.jsonl (`time.perf_counter_ns`). Samples taken before t0 is known
(between readiness and the first request) wait in memory and are written, with negative `t_s`,
once it is; a run that never reaches its traffic writes none.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import gevent
import psutil

from loadgen.collect.memory import MB, ResourceSample
from loadgen.rundir.disk import LineFile

SAMPLE_INTERVAL_S = 0.2


def next_tick(start_ns: int, interval_ns: int, now_ns: int, last_tick: int) -> int:
    """The next grid tick (time start_ns + tick × interval_ns) after `last_tick` that is not yet
    past: a late wake-up skips the ticks it missed instead of sampling in a burst."""
    return max(last_tick + 1, (now_ns - start_ns) // interval_ns + 1)


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants. On Linux from /proc/PID/task/TID/children, which costs
    the tree's size, not the machine's (psutil's children() reads every process on the host)."""
    if _children_files():
        return _proc_children_tree(pid)
    root = psutil.Process(pid)
    return [pid, *(child.pid for child in root.children(recursive=True))]


@functools.cache
def _children_files() -> bool:
    return os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _proc_children_tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except FileNotFoundError:
            if current == pid:
                raise psutil.NoSuchProcess(pid) from None
            continue  # a child that exited meanwhile
        found.append(current)
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as handle:
                    todo.extend(int(child) for child in handle.read().split())
            except (FileNotFoundError, ProcessLookupError):
                continue  # a thread that ended meanwhile
    return found


class GpuMemory:
    """GPU memory NVML attributes to given processes, summed over every GPU; None if none.

    Needs the server's processes to be visible to NVML under the same pids (not so in a
    container with its own pid namespace: the figure is then left out, never guessed).
    """

    def __init__(self, nvml: Any, handles: list[Any]) -> None:
        self._nvml = nvml
        self._handles = handles

    @classmethod
    def open(cls) -> GpuMemory | None:
        try:
            import pynvml

            pynvml.nvmlInit()
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception:  # not installed, no driver, no GPU: no GPU figures
            return None
        return cls(pynvml, handles)

    def used_mb(self, pids: Iterable[int]) -> float | None:
        wanted = set(pids)
        used: dict[tuple[int, int], int] = {}  # (gpu, pid) → bytes; a pid may be listed twice
        for index, handle in enumerate(self._handles):
            for listing in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
                try:
                    processes = getattr(self._nvml, listing)(handle)
                except Exception:
                    continue
                for process in processes:
                    memory = getattr(process, "usedGpuMemory", None)
                    if process.pid in wanted and isinstance(memory, int):
                        key = (index, process.pid)
                        used[key] = max(used.get(key, 0), memory)
        return sum(used.values()) / MB if used else None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()


class TreeMemory:
    """RSS of a process tree; keeps psutil handles between samples (pid reuse stays detected)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._handles: dict[int, psutil.Process] = {}

    def read(self) -> tuple[list[int], int]:
        """(pids alive, summed RSS in bytes); raises psutil.NoSuchProcess if the root is gone."""
        pids = process_tree(self.pid)
        total, alive = 0, []
        for pid in pids:
            try:
                handle = self._handles.get(pid) or self._handles.setdefault(pid, psutil.Process(pid))
                total += handle.memory_info().rss
                alive.append(pid)
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                self._handles.pop(pid, None)
                if pid == self.pid:
                    raise
            except psutil.AccessDenied:
                continue
        for gone in set(self._handles) - set(alive):
            del self._handles[gone]
        return alive, total


class ResourceSampler:
    """`start(pid)` when the server is ready, `set_origin(t0_ns)` when the traffic starts,
    `stop()` when it ends (before the server is stopped). The file exists from construction on.
    A full or failing disk stops the writing (whole lines only) and is reported once through
    `on_failure`; the sampling itself goes on for the live watchers."""

    def __init__(
        self,
        path: Path,
        interval_s: float = SAMPLE_INTERVAL_S,
        *,
        gpu_factory: Callable[[], GpuMemory | None] = GpuMemory.open,
        on_sample: Callable[[dict[str, float]], None] | None = None,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.interval_ns = round(interval_s * 1e9)
        self.count = 0
        self._file = LineFile(path, on_failure)
        self._gpu_factory = gpu_factory
        self._gpu: GpuMemory | None = None
        self._origin_ns: int | None = None
        self._pending: list[tuple[int, float, int, float | None]] = []
        self._greenlet: gevent.Greenlet | None = None
        # Live watchers (the exporter) get each sample as taken, in bytes: rss_bytes, gpu_bytes.
        self._on_sample = on_sample

    def start(self, pid: int) -> None:
        if self._greenlet is not None:
            raise RuntimeError("sampler already started")
        self._gpu = self._gpu_factory()
        self._greenlet = gevent.spawn(self._loop, TreeMemory(pid))

    def set_origin(self, t0_ns: int) -> None:
        """The run's t0 (perf_counter_ns): writes the samples held so far, then each as taken."""
        self._origin_ns = t0_ns
        pending, self._pending = self._pending, []
        for sample in pending:
            self._write(*sample)

    def stop(self) -> None:
        """Idempotent. Samples still waiting for an origin are dropped (the traffic never ran)."""
        if self._greenlet is not None:
            self._greenlet.kill(block=True)
        self._pending.clear()
        self._file.close()
        if self._gpu is not None:
            self._gpu.close()
            self._gpu = None

    def _loop(self, tree: TreeMemory) -> None:
        start_ns = time.perf_counter_ns()
        tick = 0
        while True:
            taken_ns = time.perf_counter_ns()
            try:
                pids, rss = tree.read()
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                pids, rss = [], 0
            if pids:
                gpu_mb = self._gpu.used_mb(pids) if self._gpu is not None else None
                self._record(taken_ns, rss / MB, len(pids), gpu_mb)
            tick = next_tick(start_ns, self.interval_ns, time.perf_counter_ns(), tick)
            gevent.sleep(max(0, start_ns + tick * self.interval_ns - time.perf_counter_ns()) / 1e9)

    def _record(self, taken_ns: int, rss_mb: float, processes: int, gpu_mb: float | None) -> None:
        if self._on_sample is not None:
            live = {"rss_bytes": rss_mb * MB}
            if gpu_mb is not None:
                live["gpu_bytes"] = gpu_mb * MB
            self._on_sample(live)
        if self._origin_ns is None:
            self._pending.append((taken_ns, rss_mb, processes, gpu_mb))
        else:
            self._write(taken_ns, rss_mb, processes, gpu_mb)

    def _write(self, taken_ns: int, rss_mb: float, processes: int, gpu_mb: float | None) -> None:
        assert self._origin_ns is not None
        sample = ResourceSample(
            t_s=round((taken_ns - self._origin_ns) / 1e9, 4),
            rss_mb=round(rss_mb, 3),
            processes=processes,
            gpu_mb=None if gpu_mb is None else round(gpu_mb, 3),
        )
        data = sample.to_dict()
        if self._file.append(json.dumps(data, separators=(",", ":"))):
            self.count += 1

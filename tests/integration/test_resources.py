"""The memory sampler on a real process tree: every descendant counted, one JSON line per sample,
samples held until the run's t0 is known, nothing left running."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import gevent
import psutil
import pytest

from loadgen.collect.memory import ResourceSample, read_samples
from loadgen.collect.resources import GpuMemory, ResourceSampler, TreeMemory, process_tree

# A parent holding 20 MiB that starts a child holding 40 MiB (written bytes, so resident).
_CHILD = "import time; x = bytearray(b'x') * (40 * 2**20); print('ready', flush=True); time.sleep(60)"
_PARENT = f"""
import subprocess, sys, time
x = bytearray(b'x') * (20 * 2**20)
child = subprocess.Popen([sys.executable, '-c', {_CHILD!r}], stdout=sys.stdout)
time.sleep(60)
"""


@pytest.fixture
def tree() -> Iterator[subprocess.Popen[str]]:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "ready"
        yield parent
    finally:
        for process in psutil.Process(parent.pid).children(recursive=True):
            process.kill()
        parent.kill()
        parent.wait(10)


def test_tree_memory_sums_every_process(tree: subprocess.Popen[str]) -> None:
    pids = process_tree(tree.pid)
    assert len(pids) == 2 and pids[0] == tree.pid
    alive, rss = TreeMemory(tree.pid).read()
    assert sorted(alive) == sorted(pids)
    assert rss > 60 * 2**20  # 20 + 40 MiB held, plus two interpreters
    with pytest.raises(psutil.NoSuchProcess):
        process_tree(2**22 + 12345)  # above any pid_max: no such process


def test_sampler_writes_lines_on_the_run_clock(tree: subprocess.Popen[str], tmp_path: Path) -> None:
    path = tmp_path / "resources.jsonl"
    sampler = ResourceSampler(path, interval_s=0.02, gpu_factory=lambda: None)
    assert path.exists() and path.read_text() == ""  # the file is there even if nothing is sampled
    sampler.start(tree.pid)
    gevent.sleep(0.1)
    assert path.read_text() == ""  # held until t0 is known
    t0_ns = time.perf_counter_ns()
    sampler.set_origin(t0_ns)
    held = len(path.read_text().splitlines())
    gevent.sleep(0.2)
    written = len(path.read_text().splitlines())  # flushed as taken, before stop()
    sampler.stop()
    sampler.stop()  # idempotent
    samples = list(read_samples(path))
    assert held >= 2 and written > held and len(samples) >= written
    assert all(s.t_s < 0 for s in samples[:held]) and all(s.t_s >= 0 for s in samples[held:])
    assert [s.t_s for s in samples] == sorted(s.t_s for s in samples)
    assert {s.processes for s in samples} == {2}
    assert min(s.rss_mb for s in samples) > 60
    assert all(
        set(json.loads(line)) == {"t_s", "rss_mb", "processes"} for line in path.read_text().splitlines()
    )


def test_sampler_drops_samples_of_a_run_that_never_started(
    tree: subprocess.Popen[str], tmp_path: Path
) -> None:
    path = tmp_path / "resources.jsonl"
    sampler = ResourceSampler(path, interval_s=0.02, gpu_factory=lambda: None)
    sampler.start(tree.pid)
    gevent.sleep(0.06)
    sampler.stop()
    assert list(read_samples(path)) == []


class _FakeGpu(GpuMemory):
    """100 MB a process, without NVML."""

    def __init__(self) -> None:
        super().__init__(nvml=None, handles=[])

    def used_mb(self, pids: Iterable[int]) -> float:
        return 100.0 * len(list(pids))

    def close(self) -> None:
        pass


def test_gpu_figure_goes_into_each_line(tree: subprocess.Popen[str], tmp_path: Path) -> None:
    path = tmp_path / "resources.jsonl"
    sampler = ResourceSampler(path, interval_s=0.02, gpu_factory=_FakeGpu)
    sampler.set_origin(time.perf_counter_ns())
    sampler.start(tree.pid)
    gevent.sleep(0.05)
    sampler.stop()
    samples = list(read_samples(path))
    assert samples and all(s.gpu_mb == 200.0 for s in samples)
    assert isinstance(samples[0], ResourceSample)

"""The reference timer for real: a real child process, a real stall (a SCHED_FIFO busy loop on
its core), real signals and a really killed parent. Each test takes well under 2 s."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from loadgen.collect import machine_timer
from loadgen.collect.machine_watch import MachineWatch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: affinity, /proc")

ROOT = Path(__file__).resolve().parents[2]
PERIOD_NS = int(machine_timer.DEFAULT_PERIOD_MS * 1e6)

# Takes its core from everything else there (the timer included) for 80 ms. RT throttling
# (sched_rt_runtime_us, 950 of every 1000 ms by default) leaves an 80-ms loop whole.
BUSY_LOOP = """
import os, sys, time
core = int(sys.argv[1])
os.sched_setaffinity(0, {core})
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
except PermissionError:
    sys.exit(77)
began = time.monotonic_ns()
while time.monotonic_ns() < began + 80_000_000:
    pass
print(began, time.monotonic_ns())
"""

# A load generator that dies without stopping its timer.
PARENT = """
import sys, time
from pathlib import Path
from loadgen.collect.machine_watch import MachineWatch
watch = MachineWatch.start(None, Path(sys.argv[1]))
print(watch.pid, flush=True)
time.sleep(60)
"""

# The load generator's own setting: gevent-patched, its child watcher live (it reaps any child).
UNDER_GEVENT = """
from gevent import monkey; monkey.patch_all()
import os, subprocess, sys, time
from pathlib import Path
from loadgen.collect.machine_watch import MachineWatch
subprocess.run([sys.executable, "-c", "pass"], check=True)
watch = MachineWatch.start(None, Path(sys.argv[1]))
time.sleep(0.2)
stopping = time.monotonic()
result = watch.stop()
try:
    os.kill(watch.pid, 0)
    gone = False
except ProcessLookupError:
    gone = True
print(round(time.monotonic() - stopping, 3), result.measured, gone)
"""


def _gone(pid: int) -> bool:
    """Not running: no such process, or a zombie left for init (an orphan is not ours to reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def _wait_until(condition: Callable[[], bool], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_run_records_only_late_ticks_and_leaves_no_timer(tmp_path: Path) -> None:
    core = max(os.sched_getaffinity(0))
    began = time.monotonic_ns()
    watch = MachineWatch.start([core], tmp_path / "stalls.txt")
    assert watch is not None
    assert os.sched_getaffinity(watch.pid) == {core}
    time.sleep(1.5)
    stopping = time.monotonic()
    result = watch.stop()
    assert time.monotonic() - stopping < 0.5  # it ended at its pipe's close, not by SIGKILL (1 s on)
    assert watch.stop() is result  # a second stop changes nothing
    with pytest.raises(ProcessLookupError):  # reaped, not a zombie
        os.kill(watch.pid, 0)
    assert result.measured
    # ~300 ticks: a quiet machine gives none, a CI runner whose machine stole 31% of the core
    # gave 41; a unit slip (ms for ns) would give one per tick.
    assert result.count < 100, result.stalls
    assert all(began <= start <= time.monotonic_ns() for start, _ in result.stalls)
    assert result.steal_percent is not None and 0.0 <= result.steal_percent <= 100.0


def test_every_tick_lies_on_one_grid_from_the_start(tmp_path: Path) -> None:
    """Threshold 0 writes every tick: the deadlines are start + k × period (no drift), and about
    one per period arrives."""
    watch = MachineWatch.start(None, tmp_path / "ticks.txt", threshold_ms=0.0)
    assert watch is not None
    time.sleep(0.5)
    deadlines = [start for start, _ in watch.stop().stalls]
    assert 50 <= len(deadlines) <= 100  # 0.5 s less the child's start-up, at 5 ms
    assert {(later - earlier) % PERIOD_NS for earlier, later in itertools.pairwise(deadlines)} == {0}


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root")
def test_a_real_stall_of_the_watched_core_is_recorded(tmp_path: Path) -> None:
    core = max(os.sched_getaffinity(0))
    watch = MachineWatch.start([core], tmp_path / "stalls.txt")
    assert watch is not None
    try:
        time.sleep(0.3)  # past the child's start-up, into its ticks
        busy = subprocess.run(
            [sys.executable, "-I", "-S", "-c", BUSY_LOOP, str(core)],
            capture_output=True,
            text=True,
            timeout=10,
        )
        time.sleep(0.05)  # the timer wakes after the loop and writes its line
    finally:
        result = watch.stop()
    if busy.returncode == 77:
        pytest.skip("SCHED_FIFO refused (a cgroup without real-time runtime)")
    assert busy.returncode == 0, busy.stderr
    began, ended = map(int, busy.stdout.split())
    near = [ms for start, ms in result.stalls if began - 1e9 <= start <= ended + 1e9]
    # 80 ms of busy loop, written as 80 ms less at most one period.
    assert max(near, default=0.0) >= 50, result.stalls
    assert result.measured


@contextlib.contextmanager
def ticking_timer(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The timer as the load generator starts it, writing every tick, past its start-up (its
    signals blocked by then); killed at the end whatever the test did."""
    path = tmp_path / "ticks.txt"
    timer = subprocess.Popen(
        [sys.executable, "-I", "-S", machine_timer.__file__, "5", "0", str(path)], stdin=subprocess.PIPE
    )
    try:
        assert _wait_until(lambda: path.exists() and path.stat().st_size > 0, within_s=2.0)
        yield timer
    finally:
        timer.kill()
        timer.wait()


def test_the_timer_ignores_a_terminals_signals_and_ends_when_its_pipe_closes(tmp_path: Path) -> None:
    with ticking_timer(tmp_path) as timer:
        for signum in machine_timer.BLOCKED_SIGNALS:
            timer.send_signal(signum)
        time.sleep(0.05)
        assert timer.poll() is None
        assert timer.stdin is not None
        timer.stdin.close()
        assert timer.wait(timeout=1.0) == 0


def test_sigterm_ends_the_timer(tmp_path: Path) -> None:
    with ticking_timer(tmp_path) as timer:
        timer.terminate()
        assert timer.wait(timeout=1.0) == -signal.SIGTERM


def test_the_timer_ends_when_its_parent_is_killed(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path / "stalls.txt")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    timer_pid = None
    try:
        assert parent.stdout is not None
        timer_pid = pid = int(parent.stdout.readline())
        assert not _gone(pid)
        parent.kill()  # SIGKILL: no stop(), no atexit; only the kernel closes its pipe end
        parent.wait()
        assert _wait_until(lambda: _gone(pid), within_s=1.0)
    finally:
        parent.kill()
        parent.wait()
        if timer_pid is not None and not _gone(timer_pid):
            os.kill(timer_pid, signal.SIGKILL)


def test_stop_inside_a_gevent_process_is_prompt_and_leaves_no_timer(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", UNDER_GEVENT, str(tmp_path / "stalls.txt")],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    took_s, measured, gone = run.stdout.split()
    assert float(took_s) < 0.5 and measured == "True" and gone == "True"

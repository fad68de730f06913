"""A hang-up does not end a run: the terminal (here a real pseudo-terminal, as an SSH session
gives) closes while the live view draws, the kernel sends SIGHUP, and the run goes on to its
planned end: every scheduled request sent, the report written, the verdict its exit code, the
server stopped. Before, SIGHUP's default action killed the load generator on the spot: no report,
and the rest of the schedule (an hour of soak, say) lost."""

from __future__ import annotations

import os
import pty
import select
import signal
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.cli_helpers import ROOT, loadtest_argv, read_records, read_report
from tests.faults.interrupting import command_line, running

pytestmark = pytest.mark.slow

RATE, DURATION_S = 10, 4
SCENARIO = f"""name: hangup
server: {{kind: simulated, ttft: 20ms, itl: 5ms}}
workload: {{output_tokens: {{kind: fixed, value: 4}}}}
traffic: [{{kind: constant, rate: {RATE}, duration: {DURATION_S}s}}]
client: {{max_schedule_lag_p99: 1s}}
slo: {{ttft: {{p95: 1s}}}}
report: {{formats: [json, markdown]}}
"""


def _hang_up_once(
    pid: int, terminal: int, ready: Callable[[bytes, list[psutil.Process]], bool]
) -> list[psutil.Process]:
    """Read the terminal until `ready(output, processes below pid)`, then hang up as an SSH session
    does: the terminal closes (SIGHUP to the session leader, EIO to whoever writes to it) and the
    login shell passes SIGHUP on to its job's whole process group. Returns the processes below."""
    seen, deadline = b"", time.monotonic() + 60
    started: list[psutil.Process] = []
    try:
        while not ready(seen, started):
            assert time.monotonic() < deadline, seen[-2000:]
            if select.select([terminal], [], [], 0.01)[0]:
                seen += os.read(terminal, 65536)
            started = psutil.Process(pid).children(recursive=True)
    finally:
        os.close(terminal)
        os.killpg(pid, signal.SIGHUP)
    return started


def _drawing(output: bytes, _: list[psutil.Process]) -> bool:
    return "loadtest · hangup".encode() in output


def _workers_starting(_: bytes, started: list[psutil.Process]) -> bool:
    """Both workers exist: still importing, long before they could set up a handler."""
    return sum("--master" in command_line(process) for process in started) == 2


def _wait(pid: int, within_s: float) -> int:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"still running {within_s} s after the hang-up")


# One process: the hang-up comes while the live view draws. Two workers: while they are still
# starting (they are born ignoring it, then handle it as the master does).
@pytest.mark.parametrize("workers", [0, 2], ids=["one-process", "two-workers"])
def test_a_run_outlives_its_terminal_and_ends_as_planned(tmp_path: Path, workers: int) -> None:
    path, out = tmp_path / "scenario.yaml", tmp_path / "runs"
    path.write_text(SCENARIO, encoding="utf-8")
    argv = loadtest_argv("run", str(path), "--out", str(out), "--no-linger", "--workers", str(workers))
    pid, terminal = pty.fork()  # the child: a session of its own with this pty as its terminal
    if pid == 0:
        os.chdir(ROOT)
        os.execv(argv[0], argv)
    started = _hang_up_once(pid, terminal, _workers_starting if workers else _drawing)
    assert any("servers.simulated" in command_line(child) for child in started), started
    status = _wait(pid, within_s=60)
    assert os.WIFEXITED(status), f"ended by signal {os.WTERMSIG(status)}"
    assert os.WEXITSTATUS(status) == 0
    (run_dir,) = out.iterdir()
    report = read_report(run_dir)
    assert report["verdict"] == "pass", report.get("reason")
    assert len(read_records(run_dir)) == RATE * DURATION_S  # the whole schedule, not cut short
    assert (run_dir / "report.md").exists()
    assert not [child for child in started if running(child)], started

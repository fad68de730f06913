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
from pathlib import Path

import psutil
import pytest

from tests.cli_helpers import ROOT, loadtest_argv, read_records, read_report
from tests.faults.interrupting import running

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


def _read_until(fd: int, needle: bytes, within_s: float) -> bytes:
    seen, deadline = b"", time.monotonic() + within_s
    while needle not in seen:
        assert time.monotonic() < deadline, seen[-2000:]
        if select.select([fd], [], [], 0.1)[0]:
            seen += os.read(fd, 65536)
    return seen


def _wait(pid: int, within_s: float) -> int:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"still running {within_s} s after the hang-up")


@pytest.mark.parametrize("workers", [0, 2], ids=["one-process", "two-workers"])
def test_a_run_outlives_its_terminal_and_ends_as_planned(tmp_path: Path, workers: int) -> None:
    path, out = tmp_path / "scenario.yaml", tmp_path / "runs"
    path.write_text(SCENARIO, encoding="utf-8")
    argv = loadtest_argv("run", str(path), "--out", str(out), "--no-linger", "--workers", str(workers))
    pid, terminal = pty.fork()  # the child: a session of its own with this pty as its terminal
    if pid == 0:
        os.chdir(ROOT)
        os.execv(argv[0], argv)
    started: list[psutil.Process] = []
    try:
        _read_until(terminal, b"loadtest \xc2\xb7 hangup", within_s=60)  # the live view draws
        started = psutil.Process(pid).children(recursive=True)
        assert len(started) == 2 + workers, started  # the server, the orphan guard, the workers
        assert any("servers.simulated" in " ".join(child.cmdline()) for child in started), started
    finally:
        os.close(terminal)  # the hang-up: SIGHUP to the session leader, EIO on its terminal
        # A login shell passes the hang-up on to its jobs' whole process groups: workers too.
        os.killpg(pid, signal.SIGHUP)
    status = _wait(pid, within_s=60)
    assert os.WIFEXITED(status), f"ended by signal {os.WTERMSIG(status)}"
    assert os.WEXITSTATUS(status) == 0
    (run_dir,) = out.iterdir()
    report = read_report(run_dir)
    assert report["verdict"] == "pass", report.get("reason")
    assert len(read_records(run_dir)) == RATE * DURATION_S  # the whole schedule, not cut short
    assert (run_dir / "report.md").exists()
    assert not [child for child in started if running(child)], started

"""A worker that stalls without dying (SIGSTOP: a frozen VM, a swapped-out process) is found by
its missing heartbeats, not by its exit: the run finishes with the other worker, counts what never
came back, ends in verdict `error` (exit 2), and leaves no process behind, the frozen one included.
(tests/e2e/test_workers.py kills a worker outright; that is seen from its exit code.)"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.cli_helpers import ROOT, CliRun, loadtest_argv, wait_for_worker_pids
from tests.faults.interrupting import running

pytestmark = pytest.mark.slow

SCENARIO = """name: stalled-worker
seed: 5
server: {kind: simulated, ttft: 10ms, itl: 2ms, slots: 64}
workload: {prompt_tokens: {kind: fixed, value: 8}, output_tokens: {kind: fixed, value: 8}}
traffic: [{kind: constant, rate: 20, duration: 4s}]
report: {formats: [json, markdown]}
"""
SCHEDULED = 80  # 20 req/s × 4 s, exact


def test_a_stalled_worker_is_lost_by_its_heartbeats_and_does_not_outlive_the_run(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    out = tmp_path / "runs"
    process = subprocess.Popen(
        loadtest_argv("run", str(path), "--out", str(out), "--workers", "2", "--progress", "never"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started: list[psutil.Process] = []
    try:
        pids = wait_for_worker_pids(out, timeout_s=90)
        started = psutil.Process(process.pid).children(recursive=True)
        assert {pids[0], pids[1]} < {child.pid for child in started}  # and the server
        psutil.Process(pids[1]).suspend()  # SIGSTOP: alive, its socket open, silent
        stalled_at = time.monotonic()
        stdout, stderr = process.communicate(timeout=120)
        ended_after = time.monotonic() - stalled_at
        # The master ended them all, the frozen worker too (SIGKILL reaches a stopped process).
        left = [child.pid for child in started if running(child)]
        assert not left, f"left running: {left} (workers {pids})"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for child in started:
            if running(child):
                child.kill()
    run = CliRun(process.returncode, stdout, stderr, out)
    assert run.code == 2, stderr
    report = run.report
    assert report["verdict"] == "error"
    assert report["reason"].startswith("1 of 2 workers lost"), report["reason"]
    lost = report["client"]["workers"]["lost"]
    assert len(lost) == 1 and lost[0]["requests_lost"] > 0
    records = run.records()
    assert len(records) + lost[0]["requests_lost"] == SCHEDULED
    # The other worker's half all came back, answered.
    other = [r for r in records if r["status"] == "ok"]
    assert len(other) >= SCHEDULED // 2
    assert "workers lost" in (run.run_dir / "report.md").read_text()
    # Found by heartbeats: Locust marks it missing after ~4 s of silence, the master gives up on
    # it 5 s later (LOST_AFTER_S), then LocalWorkers.stop() gives it 5 s to leave and 5 s more
    # after a SIGTERM (which a stopped process does not act on) before SIGKILL: ~21 s measured.
    # Waiting for the 34-s end-of-run deadline instead (4 s + 30 s grace) would take longer.
    assert ended_after < 30, f"the run ended {ended_after:.1f} s after the stall"

"""`loadtest run --workers N` end to end: the real CLI, real worker processes joined over Locust's
master/worker channel, and the simulated server in its own process."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from servers.adapter import free_port
from tests.cli_helpers import ROOT, CliRun, loadtest_argv, run_cli, wait_for_worker_pids

pytestmark = [pytest.mark.slow, pytest.mark.timing]

SCENARIO = """
name: workers
seed: 11
server: {kind: simulated, ttft: 20ms, itl: 2ms, slots: 128}
workload:
  prompt_tokens: {kind: fixed, value: 32}
  output_tokens: {kind: fixed, value: 16}
traffic:
  - {kind: poisson, rate: 100, duration: 10s, max_concurrency: 64}
warmup: 1s
slo:
  ttft: {p95: 500ms}
report: {dir: runs, formats: [json, markdown]}
"""
# 100 req/s × 10 s, exact (warm-up requests are recorded too); the split test runs 3 s of it (its
# length proves nothing more), the killed-worker tests all 10, to be killed mid-run.
SHORT = SCENARIO.replace("rate: 100, duration: 10s", "rate: 100, duration: 3s")
SCHEDULED, SHORT_SCHEDULED = 1000, 300


def _run(tmp_path: Path, workers: int) -> CliRun:
    folder = tmp_path / f"w{workers}"
    folder.mkdir()
    return run_cli(folder, SHORT, "--workers", str(workers), timeout=240, html=False)


def test_two_workers_send_the_whole_schedule_with_the_same_latencies(tmp_path: Path) -> None:
    one, two = _run(tmp_path, 1), _run(tmp_path, 2)
    for run in (one, two):
        assert run.code == 0, run.stderr
        records = run.records()
        assert len(records) == SHORT_SCHEDULED
        assert sorted(record["id"] for record in records) == list(range(SHORT_SCHEDULED))
        assert all(record["status"] == "ok" for record in records)
    workers = two.report["client"]["workers"]
    assert workers["count"] == 2 and workers["lost"] == []
    assert workers["requests"] == [150, 150] and workers["received"] == [150, 150]
    assert two.report["client"]["cpu_percent"] == max(workers["cpu_percent"])
    # The same seeded plan: every request was due at the same time in both runs.
    due_one = {r["id"]: r["scheduled_s"] for r in one.records()}
    due_two = {r["id"]: r["scheduled_s"] for r in two.records()}
    assert max(abs(due_one[i] - due_two[i]) for i in due_one) < 1e-5
    ttft_one, ttft_two = one.report["metrics"]["ttft_ms"], two.report["metrics"]["ttft_ms"]
    assert abs(ttft_one["p50"] - ttft_two["p50"]) < 5.0, (ttft_one, ttft_two)
    assert abs(ttft_one["p95"] - ttft_two["p95"]) < 20.0, (ttft_one, ttft_two)
    assert two.report["client"]["schedule_lag_p99_ms"] < 10.0


def test_a_killed_worker_is_reported_and_the_run_ends_in_error(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    out = tmp_path / "runs"
    process = subprocess.Popen(
        loadtest_argv("run", str(path), "--out", str(out), "--workers", "2"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pids = wait_for_worker_pids(out, timeout_s=90)
        time.sleep(3.0)
        os.kill(pids[1], signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    run = CliRun(process.returncode, stdout, stderr, out)
    assert run.code == 2, stderr
    report = run.report
    assert report["verdict"] == "error"
    assert "workers lost" in report["reason"] and "never came back" in report["reason"]
    lost = report["client"]["workers"]["lost"]
    assert len(lost) == 1 and lost[0]["requests_lost"] > 0
    records = run.records()
    assert len(records) + lost[0]["requests_lost"] == SCHEDULED
    assert "workers lost" in (run.run_dir / "report.md").read_text()


def test_a_worker_joins_from_outside_with_loadtest_worker(tmp_path: Path) -> None:
    """`--remote-workers 1`: the master waits for a `loadtest worker --master HOST:PORT` it did not
    start (here on the same machine) and gives it half the plan."""
    port = free_port()
    small = SCENARIO.replace("rate: 100, duration: 10s", "rate: 50, duration: 3s")
    path = tmp_path / "scenario.yaml"
    path.write_text(small, encoding="utf-8")
    master = subprocess.Popen(
        loadtest_argv(
            "run",
            str(path),
            "--out",
            str(tmp_path / "runs"),
            "--workers",
            "1",
            "--remote-workers",
            "1",
            "--master-bind",
            f"127.0.0.1:{port}",
        ),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    worker = subprocess.Popen(
        loadtest_argv("worker", "--master", f"127.0.0.1:{port}"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = master.communicate(timeout=120)
        _, worker_err = worker.communicate(timeout=60)
    finally:
        for process in (master, worker):
            if process.poll() is None:
                process.kill()
                process.wait()
    run = CliRun(master.returncode, stdout, stderr, tmp_path / "runs")
    assert run.code == 0, stderr
    assert worker.returncode == 0, worker_err
    workers = run.report["client"]["workers"]
    assert workers["count"] == 2 and workers["requests"] == [75, 75] and workers["received"] == [75, 75]
    assert len(run.records()) == 150


def test_worker_refuses_a_bad_master_address() -> None:
    done = subprocess.run(
        loadtest_argv("worker", "--master", "nohostport"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "give HOST:PORT" in done.stderr


def test_search_scenarios_are_refused_with_workers(tmp_path: Path) -> None:
    run = run_cli(tmp_path, ROOT / "scenarios" / "search-knee.yaml", "--workers", "2", html=False)
    assert run.code == 2
    assert "--workers does not run search" in run.stderr
    assert not run.out.exists() or not any(run.out.iterdir())

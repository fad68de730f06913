"""`loadtest run --workers N --records summary` end to end: the workers ship mergeable statistics
instead of every record; the master keeps requests-summary.msgpack and no requests.jsonl, and the
report (and `loadtest report RUN_DIR`) is computed from the merged summary."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from loadgen.collect.stats_wire import SUMMARY_FILE
from loadgen.scenario.loader import load_scenario
from loadgen.traffic.schedule import build_schedule
from tests.cli_helpers import ROOT, CliRun, loadtest_argv, read_report, run_cli, wait_for_worker_pids
from tests.e2e.test_workers import SCENARIO, SCHEDULED

# Two workers at 100 req/s each need a core of their own to keep the schedule (exit 0): not beside
# another run.
pytestmark = pytest.mark.timing

# A summary run is not re-judged when its lag bound is crossed (its records are not at hand:
# docs/guide/accuracy.md, "Late sends"), and two workers, their master and the server share two
# cores: a CI runner whose machine stole 30% of them put the lag p99 at 11.6 ms. This test is of
# the summary's numbers, not the workers' punctuality (test_workers.py's), so its bound is 50 ms.
SHORT = (
    SCENARIO.replace("duration: 10s", "duration: 5s")
    .replace("markdown]", "markdown, html]")
    .replace("report:", "client: {max_schedule_lag_p99: 50ms}\nreport:")
)


def _counted(tmp_path: Path, text: str) -> int:
    """Requests past warm-up in the seeded plan: what report.json must count."""
    path = tmp_path / "plan.yaml"
    path.write_text(text, encoding="utf-8")
    return sum(not planned.warmup for planned in build_schedule(load_scenario(path)).requests)


def test_summary_mode_reports_every_request_without_a_records_file(tmp_path: Path) -> None:
    run = run_cli(tmp_path, SHORT, "--workers", "2", "--records", "summary", timeout=240)
    assert run.code == 0, run.stderr
    run_dir = run.run_dir
    assert not (run_dir / "requests.jsonl").exists()
    assert (run_dir / SUMMARY_FILE).stat().st_size > 0
    report = run.report
    workers = report["client"]["workers"]
    assert workers["records"] == "summary"
    assert workers["requests"] == [250, 250] and workers["received"] == [250, 250] and workers["lost"] == []
    metrics = report["metrics"]
    assert metrics["requests"] == _counted(tmp_path, SHORT) and metrics["errors"] == 0
    assert metrics["percentile_method"]["method"] == "exact"
    # 20 ms TTFT and 16 tokens 2 ms apart on the simulated server, seen from the workers.
    assert 20.0 <= metrics["ttft_ms"]["p50"] < 40.0, metrics["ttft_ms"]
    assert 1.5 <= metrics["itl_ms"]["p50"] < 4.0, metrics["itl_ms"]
    assert metrics["output_tokens_per_s"] > 0.9 * 100 * 16
    assert "No per-request charts" in (run_dir / "report.html").read_text()
    # `loadtest report` re-renders from the summary: the same numbers.
    again = subprocess.run(
        loadtest_argv("report", str(run_dir)), cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert read_report(run_dir)["metrics"] == metrics


def test_summary_mode_needs_workers(tmp_path: Path) -> None:
    run = run_cli(tmp_path, SHORT, "--records", "summary")
    assert run.code == 2
    assert "--records summary is for distributed runs" in run.stderr


def test_a_killed_worker_in_summary_mode_is_tallied_from_counts(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    out = tmp_path / "runs"
    process = subprocess.Popen(
        loadtest_argv("run", str(path), "--out", str(out), "--workers", "2", "--records", "summary"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pids = wait_for_worker_pids(out, timeout_s=90, records=False)
        # joined, planned, a few seconds into the 10-s schedule: the pids come when the workers
        # start, and on a slow VM their start-up took ~5 s (at 6 s the killed one had sent only
        # its warm-up); by 7.5 s either worker's schedule is at least 1.5 s and at most ~6.5 s in
        time.sleep(7.5)
        os.kill(pids[1], signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    run = CliRun(process.returncode, stdout, stderr, out)
    assert run.code == 2, stderr
    report = run.report
    assert report["verdict"] == "error" and "workers lost" in report["reason"]
    workers = report["client"]["workers"]
    lost = workers["lost"]
    # Workers are numbered in the order they joined, not the order they started: the one lost
    # is the one killed (one kill, one loss), whichever number it got.
    assert len(lost) == 1 and 0 < lost[0]["requests_lost"] < 500
    killed = lost[0]["worker"]
    assert workers["received"][1 - killed] == 500
    assert sum(workers["received"]) + lost[0]["requests_lost"] == SCHEDULED
    # What did arrive is reported: fewer than planned, more than the surviving worker's share.
    counted = report["metrics"]["requests"]
    assert 0.45 * SCHEDULED < counted < _counted(tmp_path, SCENARIO)

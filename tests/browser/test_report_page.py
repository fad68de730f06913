"""report.html and compare.html of real runs (the CLI, the simulated server), opened in headless
Chromium with the network cut: no error, every chart drawn, the SLO lines there, the verdict —
and for a search the knee and capacity — on the first screen."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.browser.page_check import VIEWPORT, browser_or_skip, check_report_page
from tests.cli_helpers import ROOT, CliRun, loadtest_argv, run_cli
from tests.shared_runs import ItlRuns

pytestmark = pytest.mark.slow

RUN_SCENARIO = """name: html-run
seed: 11
server: {kind: simulated, ttft: 30ms, itl: 5ms, slots: 32}
workload:
  prompt_tokens: {kind: fixed, value: 16}
  output_tokens: {kind: fixed, value: 16}
traffic: [{kind: poisson, rate: 20, duration: 5s}]
warmup: 1s
client: {max_schedule_lag_p99: 200ms}
slo:
  ttft: {p95: 250ms}
  itl: {p95: 50ms}
  e2e: {p99: 2s}
  output_tokens_per_s: {min: 50}
report: {formats: [json, html]}
"""

SEARCH_SCENARIO = """name: html-search
seed: 5
server: {kind: simulated, ttft: 20ms, itl: 5ms, slots: 8}
workload:
  prompt_tokens: {kind: fixed, value: 16}
  output_tokens: {kind: fixed, value: 16}
search: {over: concurrency, levels: [2, 8, 16], trials: 2, precision: null, level_duration: 2s,
         level_warmup: 0.5s}
capacity: {peak_rate: 100, target_utilization: 0.8, redundancy: 0, cost_per_replica_hour: 2.5}
verify: {duration: 3s, warmup: 1s}
client: {max_schedule_lag_p99: 200ms}
slo: {ttft: {p95: 60ms}, error_rate: {max: 1%}}
report: {formats: [json, markdown, html]}
"""


# The session's runs of tests/shared_runs.py, which timing tests also read: a page of them is
# checked in the timing tier, where the runs are made once, on a quiet machine (their verdicts —
# a pass, a regression — are what these pages show).
SHARED_TIMING_RUN = pytest.mark.timing


@pytest.fixture(autouse=True)
def _browser() -> None:
    browser_or_skip()


def _run(tmp_path: Path, scenario: str, name: str) -> Path:
    """A run that must pass: a page of a failed or erred run would hide what these check."""
    folder = tmp_path / name
    folder.mkdir()
    run = run_cli(folder, scenario, "--progress", "never", timeout=180)
    assert run.code == 0, run.stderr
    return run.run_dir


def test_a_run_report_opens_offline_with_every_chart_and_slo_line(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, RUN_SCENARIO, "run")
    facts = check_report_page(
        run_dir / "report.html",
        tmp_path / "report-run.png",
        expect_slo_lines=["ttft p95", "itl p95", "e2e p99", "output_tokens_per_s"],
        expect_charts=["arrival-rate", "in-flight", "latency-over-time", "errors", "output-tokens",
                       "ttft-cdf", "itl-cdf", "e2e-cdf", "rss", "server-queue", "cold-starts"],
    )  # fmt: skip
    assert facts.verdict == "pass" and facts.banner_text.startswith("PASS")
    assert facts.title == "html-run: PASS"
    assert "all 4 SLOs held" in facts.first_screen and "ttft p95" in facts.first_screen
    assert (tmp_path / "report-run.png").stat().st_size > 50_000
    # `loadtest report` re-renders the same page from the run folder.
    first = (run_dir / "report.html").read_text()
    (run_dir / "report.html").unlink()
    done = subprocess.run(loadtest_argv("report", str(run_dir)), cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (run_dir / "report.html").read_text() == first


@SHARED_TIMING_RUN
def test_a_lora_report_draws_ttft_by_adapter_with_the_adapters_slo(tmp_path: Path, lora_run: CliRun) -> None:
    """scenarios/lora.yaml (the session's run of it): the per-adapter table and the TTFT CDF per
    adapter, `slo.adapters`' line drawn on it."""
    assert lora_run.code == 0, lora_run.stderr
    facts = check_report_page(
        lora_run.run_dir / "report.html",
        tmp_path / "report-lora.png",
        expect_slo_lines=["adapter sql: ttft p50"],
        expect_charts=["ttft-cdf", "ttft-by-adapter"],
    )
    assert facts.verdict == "pass"
    assert "LoRA adapters" in (lora_run.run_dir / "report.html").read_text()


def test_a_search_report_shows_the_verdict_knee_and_capacity_on_the_first_screen(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, SEARCH_SCENARIO, "search")
    facts = check_report_page(
        run_dir / "report.html",
        tmp_path / "report-search.png",
        expect_slo_lines=["ttft p95"],
        expect_charts=["search-throughput", "search-latency", "latency-over-time", "ttft-cdf"],
    )
    report = json.loads((run_dir / "report.json").read_text())
    knee, capacity = report["knee"], report["capacity"]
    assert capacity["level"] == 8 and knee["level"] == 8, (knee, capacity)
    throughput = facts.chart("search-throughput")
    assert throughput.markers == ["marker-knee", "marker-capacity"]
    # Two trials per level: their min–max is drawn (as whiskers that may be under a pixel tall: the
    # trials of a closed-loop level agree closely).
    assert all(len(level["trial_rps"]) == 2 for level in knee["levels"]), knee["levels"]
    assert "data-throughput-whiskers" in throughput.data_groups
    assert "slo-ttft-p95" in facts.chart("search-latency").slo_lines
    # The first screen: the verdict, capacity, knee, plan, and the search charts in full.
    assert facts.verdict == report["verdict"]
    for text in ("CAPACITY AT SLO", "KNEE", "concurrency 8", "REPLICA PLAN", "VERIFICATION"):
        assert text in facts.first_screen, text
    assert (
        throughput.bottom <= VIEWPORT["height"] and facts.chart("search-latency").bottom <= VIEWPORT["height"]
    )


@SHARED_TIMING_RUN
def test_compare_writes_an_overlay_page_next_to_the_current_run(tmp_path: Path, itl_runs: ItlRuns) -> None:
    # The session's compare runs (tests/compare_runs.py: ITL 10 ms, then 13 ms); the current
    # one copied here, so that the page checked is the one this gate wrote.
    baseline = itl_runs.baseline
    current = Path(shutil.copytree(itl_runs.slower, tmp_path / "current"))
    done = subprocess.run(
        loadtest_argv("compare", str(baseline), str(current / "report.json")),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    page = current / "compare.html"
    assert f"compare.html: {page}" in done.stdout
    facts = check_report_page(
        page,
        tmp_path / "compare.png",
        expect_charts=["compare-ttft-cdf", "compare-itl-cdf", "compare-e2e-cdf",
                       "compare-ttft-p95-over-time", "compare-throughput-over-time"],
    )  # fmt: skip
    assert facts.verdict == "fail" and facts.banner_text.startswith("REGRESSION")
    assert facts.chart("compare-itl-cdf").drawn == ["data-baseline-itl", "data-current-itl"]
    assert "regression" in facts.first_screen and "itl p50" in facts.first_screen
    assert "mde (80% power)" in facts.first_screen  # what each latency row could have seen
    chosen = tmp_path / "elsewhere" / "gate.html"
    again = subprocess.run(
        loadtest_argv("compare", str(baseline), str(current), "--html", str(chosen)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 1 and chosen.is_file() and f"compare.html: {chosen}" in again.stdout


def test_an_underpowered_compare_page_says_inconclusive(tmp_path: Path) -> None:
    # 20 requests a side (synthetic run folders): not a pass, and the page's banner says so.
    from tests.unit.test_compare_exits import write_run

    baseline, current = write_run(tmp_path / "a", 20, 1), write_run(tmp_path / "b", 20, 2)
    done = subprocess.run(
        loadtest_argv("compare", str(baseline), str(current)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    facts = check_report_page(
        current / "compare.html",
        tmp_path / "compare.png",
        expect_charts=["compare-ttft-cdf", "compare-itl-cdf", "compare-e2e-cdf",
                       "compare-ttft-p95-over-time", "compare-throughput-over-time"],
    )  # fmt: skip
    assert facts.verdict == "error" and facts.banner_text.startswith("INCONCLUSIVE")
    assert "could only detect moves of" in facts.banner_text
    assert "inconclusive" in facts.first_screen and "mde (80% power)" in facts.first_screen

"""The quickstart on real runtimes: ONNX Runtime (the default), the same scenario file with
only `server.kind` changed to PyTorch, and scenarios/vllm.yaml (the quickstart's workload and
rate on vLLM, with SLOs for a real CPU server; vLLM needs its own venv: see .ci/run)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from servers.base import free_port
from tests.cli_helpers import ROOT, CliRun, loadtest_argv, run_cli
from tests.metrics_helpers import fetch

pytestmark = pytest.mark.slow

QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"


def _with_server(tmp_path: Path, server: dict[str, Any]) -> Path:
    scenario = yaml.safe_load(QUICKSTART.read_text())
    scenario["server"] = server
    scenario["prometheus"] = {"port": 0, "linger": 0}  # tests use free ports, and need no linger
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


def _check_ran_end_to_end(run: CliRun, max_failed: int = 0) -> dict[str, Any]:
    """Every request answered with exactly 64 tokens, and the report has the real numbers."""
    report = run.report
    records = run.records()
    assert len(records) == 200  # Poisson 10 req/s × 20 s, exactly
    failed = [r for r in records if r["status"] != "ok"]
    assert len(failed) <= max_failed, failed
    # A failure must be the server's or the network's, recorded as such: never a client bug.
    assert not [r for r in failed if (r["error"] or "").startswith("client error")], failed
    answered = [r for r in records if r["status"] == "ok"]
    assert {r["output_tokens"] for r in answered} == {64}
    assert {r["tokens_source"] for r in answered} == {"usage"}
    metrics = report["metrics"]
    assert metrics["output_tokens_per_s"] > 0 and metrics["ttft_ms"]["p50"] > 0
    cold = report["server"]["cold_start_s"]
    assert 0 < cold["ready"] <= cold["first_token"]
    return report


def test_quickstart_runs_on_onnxruntime_and_passes(tmp_path: Path):
    # As a user would: `loadtest scenarios/quickstart.yaml`, and /metrics fetched while it runs
    # (on a free port here instead of the file's 9646, without the linger).
    port, out = free_port(), tmp_path / "runs"
    argv = loadtest_argv(
        "run", str(QUICKSTART), "--out", str(out), "--prometheus-port", str(port), "--no-linger"
    )
    started = time.monotonic()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    live: list[tuple[str, dict[str, str], float]] = []
    try:
        while process.poll() is None and time.monotonic() - started < 150:
            samples = fetch(port) or []
            if any(name == "loadtest_ttft_seconds_count" and value > 0 for name, _, value in samples):
                live = samples  # the latest scrape that saw finished requests
            time.sleep(0.5)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    run = CliRun(process.returncode, stdout, stderr, out)
    assert run.code == 0, run.stderr
    assert time.monotonic() - started < 120
    labels = {"scenario": "quickstart", "run_id": run.run_dir.name}
    histograms = [labels_ for name, labels_, _ in live if name == "loadtest_ttft_seconds_bucket"]
    assert histograms and all(labels.items() <= got.items() for got in histograms)
    gauges = {name for name, got, _ in live if got == labels}
    assert {"loadtest_in_flight", "loadtest_target_rate", "loadtest_upstream_rss_bytes"} <= gauges
    report = _check_ran_end_to_end(run)
    assert report["verdict"] == "pass" and report["server"]["kind"] == "onnxruntime"
    assert report["server"]["memory"]["rss_mb_peak"] > 0  # a real server process tree was sampled
    assert "onnxruntime" in (run.run_dir / "scenario.yaml").read_text()


def _passed_or_untrusted(run: CliRun) -> None:
    """A real server shares this 2-core machine with the load generator: when something else
    also wants the cores, the run may rightly say it could not keep up (exit 2), never more."""
    if run.code == 2:
        assert "could not keep up" in run.report["reason"], run.stderr
    else:
        assert run.code == 0, run.stderr


def test_same_scenario_runs_on_torch(tmp_path: Path):
    run = run_cli(tmp_path, _with_server(tmp_path, {"kind": "torch"}))
    report = _check_ran_end_to_end(run)
    assert report["server"]["kind"] == "torch"
    # PyTorch on one thread serves the quickstart's 640 tok/s near its limit on this VM: its
    # Poisson bursts queue (seen: TTFT p95 30 ms to 570 ms between runs, with the code before
    # and after issue 10 alike), so the ORT-tuned TTFT SLO may fail. That verdict is the
    # server's; what this test checks is that the tool measured it end to end and judged it.
    if run.code == 1:
        failed = [slo["name"] for slo in report["slo"] if not slo["passed"]]
        assert failed and set(failed) <= {"ttft p95", "itl p95", "e2e p99"}, report["slo"]
        assert report["client"]["trustworthy"]
    else:
        _passed_or_untrusted(run)


@pytest.mark.vllm
def test_vllm_scenario_runs_and_passes_trusted(tmp_path: Path):
    """scenarios/vllm.yaml as shipped (the quickstart's workload and rate, SLOs for a real CPU
    server), with the venv's interpreter from LOADTEST_VLLM_PYTHON."""
    python = os.environ.get("LOADTEST_VLLM_PYTHON")
    if not python:
        pytest.skip("LOADTEST_VLLM_PYTHON is not set (.ci/run installs vLLM and sets it)")
    scenario = yaml.safe_load((ROOT / "scenarios" / "vllm.yaml").read_text())
    scenario["server"]["python"] = python
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    run = run_cli(tmp_path, path, timeout=900)
    report = _check_ran_end_to_end(run, max_failed=0)
    assert report["server"]["kind"] == "vllm"
    # vLLM's own /metrics beside the client's view: TTFT p50/p95 from its histogram's buckets.
    server_metrics = report["server"]["metrics"]
    assert server_metrics["source"] == "vllm" and server_metrics["scrapes"] >= 10  # ~1/s for 20 s
    ttft = server_metrics["ttft_ms"]
    assert ttft["method"] == "histogram buckets" and 0 < ttft["p50"] <= ttft["p95"]
    assert ttft["count"] > 100 and server_metrics["generation_tokens_per_s"] > 0
    gap = server_metrics["ttft_gap_ms"]
    assert gap["p50"] is not None and gap["p95"] is not None
    # vLLM's CPU engine keeps every core it has busy; pinned to its own core(s), away from the
    # load generator's (server.cpus: auto), the run stays trustworthy (unpinned it did not).
    # Done when scenarios/vllm.yaml passes trusted here (issue 10): it does, pinned.
    pinning = report["server"]["pinning"]
    if len(os.sched_getaffinity(0)) >= 2:
        assert pinning["server_cpus"] and pinning["client_cpus"], pinning
        assert report["client"]["trustworthy"], report["reason"]
        assert run.code == 0, run.stderr
    else:
        _passed_or_untrusted(run)

"""The quickstart on real runtimes: ONNX Runtime (the default), and the same scenario file with
only `server.kind` changed to PyTorch and to vLLM (vLLM needs its own venv: see .ci/run)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_helpers import ROOT, CliRun, run_cli

pytestmark = pytest.mark.slow

QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"


def _with_server(tmp_path: Path, server: dict[str, Any]) -> Path:
    scenario = yaml.safe_load(QUICKSTART.read_text())
    scenario["server"] = server
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
    started = time.monotonic()
    run = run_cli(tmp_path, QUICKSTART)
    assert run.code == 0, run.stderr
    assert time.monotonic() - started < 120
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
    _passed_or_untrusted(run)
    report = _check_ran_end_to_end(run)
    assert report["server"]["kind"] == "torch"


@pytest.mark.vllm
def test_same_scenario_runs_on_vllm(tmp_path: Path):
    python = os.environ.get("LOADTEST_VLLM_PYTHON")
    if not python:
        pytest.skip("LOADTEST_VLLM_PYTHON is not set (.ci/run installs vLLM and sets it)")
    run = run_cli(tmp_path, _with_server(tmp_path, {"kind": "vllm", "python": python}), timeout=900)
    # While the machine stalls (see below) a connection can fail now and then (seen: 1 of 200).
    report = _check_ran_end_to_end(run, max_failed=2)
    assert report["server"]["kind"] == "vllm"
    # On a 2-core machine vLLM's CPU engine stalls every process, the load generator included
    # (see README): the run must then say its numbers are untrustworthy rather than pass them off.
    _passed_or_untrusted(run)

"""How sure a recommendation is, end to end on the simulated server: two environments whose
capacities differ by 3% are too close to call, two that differ by 50% are not."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import ROOT, loadtest_argv, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timing]

# Random output lengths (4-60 tokens) make each batch's goodput vary, as real traffic does; one
# 2-s window a level gives each capacity a 95% interval of several %. Each request holds a slot
# T = ttft + (tokens − 1) × itl: 50 + 31 × 10 = 360 ms on average for `fast`, 3% longer on `near`
# (51.5 ms, 10.3 ms), 50% longer on `slow` (75 ms, 15 ms). Eight users on eight slots: no queue.
SCENARIO = """
name: confidence
seed: 3
workload:
  api: chat
  prompt_tokens: {kind: fixed, value: 16}
  output_tokens: {kind: uniform, min: 4, max: 60}
search: {over: concurrency, levels: [8], level_duration: 2.5s, level_warmup: 0.5s, precision: null}
capacity: {peak_rate: 1000, target_utilization: 0.8}
slo:
  ttft: {p95: 1s}
report: {formats: [json]}
environments:
  - {name: fast, cost_per_replica_hour: 1.0, server: {kind: simulated, ttft: 50ms, itl: 10ms, slots: 8}}
  - {name: near, cost_per_replica_hour: 1.0, server: {kind: simulated, ttft: 51.5ms, itl: 10.3ms, slots: 8}}
  - {name: slow, cost_per_replica_hour: 1.0, server: {kind: simulated, ttft: 75ms, itl: 15ms, slots: 8}}
"""


def _rank(out: Path, *runs: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    argv = loadtest_argv("rank", *map(str, runs), "--out", str(out), *extra)
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr  # too close to call is still a recommendation
    comparison: dict[str, Any] = json.loads((out / "comparison.json").read_text())
    comparison["stdout"] = done.stdout
    return comparison


def test_three_percent_is_too_close_to_call_and_fifty_percent_is_not(tmp_path: Path) -> None:
    run = run_cli(tmp_path, SCENARIO, timeout=240)
    assert run.code == 0, run.stderr
    capacity = {
        name: json.loads((run.run_dir / name / "report.json").read_text())["capacity"]
        for name in ("fast", "near", "slow")
    }
    # The truths, 360 / 370.8 / 540 ms a request: fast 3% above near and 50% above slow.
    assert 1.0 < capacity["fast"]["rate_rps"] / capacity["near"]["rate_rps"] < 1.06
    assert 1.4 < capacity["fast"]["rate_rps"] / capacity["slow"]["rate_rps"] < 1.6

    close = _rank(tmp_path / "close", run.run_dir / "fast", run.run_dir / "near")
    recommendation = close["recommendation"]
    assert recommendation["too_close"] is True and recommendation["confidence"] < 0.9
    assert {recommendation["environment"], recommendation["runner_up"]} == {"fast", "near"}
    assert "RECOMMENDATION: too close to call: " in close["stdout"]
    # A lower bar (--confidence) takes the same evidence as enough.
    share = recommendation["confidence"]
    relaxed = _rank(tmp_path / "relaxed", run.run_dir / "fast", run.run_dir / "near",
                       extra=("--confidence", f"{share * 100 - 1:.0f}%"))  # fmt: skip
    assert relaxed["recommendation"]["too_close"] is False
    assert relaxed["recommendation"]["required_confidence"] == pytest.approx(round(share * 100 - 1) / 100)

    apart = _rank(tmp_path / "apart", run.run_dir / "fast", run.run_dir / "slow")
    recommendation = apart["recommendation"]
    assert recommendation["environment"] == "fast" and recommendation["too_close"] is False
    assert recommendation["confidence"] >= 0.99
    assert "RECOMMENDATION: fast is the cheapest in" in apart["stdout"]

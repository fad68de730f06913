"""A search judges each level by the classes' own SLOs too, end to end: the real CLI against the
simulated server (4 slots, TTFT 20 ms + 0.2 ms per prompt token, 8 tokens 5 ms apart). A long
prompt class (300 tokens: TTFT 80 ms without queueing) holds its 110-ms bound up to 4 users and
breaks it at 8, where requests queue for a slot, while the run's loose 500-ms TTFT bound holds
at every level. The capacity is the 4-user level's, limited by the class: before, it was the
8-user level's, and the same run then failed that class's SLO at its own operating point."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

pytestmark = pytest.mark.slow

SCENARIO = """name: classes-search
seed: 3
server: {kind: simulated, ttft: 20ms, itl: 5ms, slots: 4, prefill_per_token: 0.2ms}
workload:
  - {class: short, weight: 4, prompt_tokens: {kind: fixed, value: 16}, output_tokens: {kind: fixed, value: 8}}
  - {class: long, weight: 1, prompt_tokens: {kind: fixed, value: 300}, output_tokens: {kind: fixed, value: 8}}
search:
  over: concurrency
  levels: [2, 4, 8]
  level_duration: 2s
  level_warmup: 0.5s
  precision: null
slo:
  ttft: {p95: 500ms}
  classes:
    long: {ttft: {p95: 110ms}}
# Beside another test (the slow tier): the levels' verdicts are under test, not the client's punctuality.
client: {max_schedule_lag_p99: 200ms}
report: {formats: [json]}
"""


def test_a_class_slo_limits_the_capacity_where_the_runs_own_bound_held(tmp_path: Path) -> None:
    run = run_cli(tmp_path, SCENARIO, "--progress", "never", timeout=120)
    assert run.code == 0, run.stderr
    report = run.report
    levels = {level["level"]: level for level in report["knee"]["levels"]}
    assert [levels[n]["slo_passed"] for n in (2.0, 4.0, 8.0)] == [True, True, False]
    assert levels[8.0]["failed_slos"] == ["long: ttft p95"]
    assert all(levels[n]["ttft_ms"]["p95"] < 500 for n in levels)  # the run's own bound held throughout
    capacity = report["capacity"]
    assert capacity["level"] == 4.0 and capacity["limiting_slo"] == "long: ttft p95"
    assert capacity["rate_rps"] == pytest.approx(levels[4.0]["throughput_rps"])
    # The whole run, judged at the operating point, holds the class's bound it was sized on.
    long_check = next(check for check in report["slo"] if check["name"] == "long: ttft p95")
    assert long_check["passed"] and long_check["observed"] < 110, long_check

"""A search run's report from synthetic level runs: verdicts, the operating point, and the
evaluator's sections in report.md and junit.xml."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from loadgen.evaluate.curve import Over
from loadgen.evaluate.level_results import LevelWindow
from loadgen.report.build import RunFacts
from loadgen.report.junit_report import render_junit
from loadgen.report.markdown_report import render_markdown
from loadgen.report.model import Report
from loadgen.report.search_report import build_search_report
from loadgen.scenario.loader import parse_scenario
from tests.unit.test_level_results import closed_loop_records, simulated_search

SCENARIO = """name: synthetic-search
server: {kind: simulated}
search: {over: concurrency}
capacity: {peak_rate: 60, target_utilization: 0.8}
verify: true
slo: {ttft: {p95: 100ms}}
"""


def _report(
    windows: list[LevelWindow], records: list[Any], scenario_text: str = SCENARIO, **kw: Any
) -> Report:
    facts = RunFacts(
        name="synthetic-search",
        started_at=datetime(2026, 11, 22, tzinfo=UTC),
        duration_s=120.0,
        server={"kind": "simulated"},
        client_cpu_percent=10.0,
    )
    return build_search_report(
        facts,
        parse_scenario(scenario_text),
        records,
        windows,
        peak_rate=60.0,
        verify_setup=kw.get("verify_setup", {"replicas": 2}),
    )


def _with_verification(at_plan_ttft: float, one_fewer_ttft: float):
    records, windows = simulated_search()
    records += closed_loop_records(50, 8, 100.0, 110.0, 0.2, at_plan_ttft, 900_000)
    records += closed_loop_records(51, 8, 110.0, 120.0, 0.2, one_fewer_ttft, 950_000)
    windows += [
        LevelWindow(50, 60.0, Over.RATE, 101.0, 110.0, 60.0, role="verify", replicas=2),
        LevelWindow(51, 60.0, Over.RATE, 111.0, 120.0, 60.0, role="verify_one_fewer", replicas=1),
    ]
    return records, windows


def test_a_held_plan_passes_with_the_operating_point_at_capacity() -> None:
    records, windows = _with_verification(0.05, 0.5)
    report = _report(windows, records)
    assert report.verdict == "pass", report.reason
    assert report.operating_point is not None
    assert report.operating_point.model_dump() == {"level": 8, "over": "concurrency"}
    assert report.metrics.target_rate is None  # closed loop: no target rate
    assert report.metrics.ttft_ms.p95 == 50.0  # the operating point's latency
    assert report.replicas is not None and report.replicas.verified is not None
    assert report.replicas.count == 2 and report.replicas.verified.one_fewer_passed is False
    assert {phase.role for phase in report.phases} == {"search", "verify", "verify_one_fewer"}
    assert "knee at concurrency 8" in report.reason and "plan 2 replicas" in report.reason

    markdown = render_markdown(report)
    assert "Knee at concurrency **8**" in markdown
    # The curve row at the knee: level, req/s, its 95% interval (±0: every batch served 40) and
    # trials, tok/s (exact).
    assert "| 8 | 40 | 40–40 (±0.0%, 1) | 400 |" in markdown
    assert "**2 replicas (the same at the point estimate)** for a peak of 60 req/s" in markdown
    # Concurrency 8 → 9 is 12.5%: the grid cannot get finer, and report.md says so.
    assert "The grid: concurrency is a whole number: the step from 8 to 9 users (12.5%)" in markdown
    junit = render_junit(report)
    assert 'tests="4" failures="0"' in junit  # 1 SLO + capacity + plan + one fewer
    assert "by the arithmetic it should fail" in junit


def test_a_plan_that_does_not_hold_fails_the_run() -> None:
    records, windows = _with_verification(0.5, 0.5)
    report = _report(windows, records)
    assert report.verdict == "fail"
    assert "the plan of 2 replicas did not hold" in report.reason and "ttft p95" in report.reason
    assert 'type="EvaluatorFailure"' in render_junit(report)


def test_no_level_holding_the_slos_fails_and_says_what_broke() -> None:
    records, windows = simulated_search()
    strict = SCENARIO.replace("ttft: {p95: 100ms}", "ttft: {p95: 10ms}")
    report = _report(windows, records, strict, verify_setup={"skipped": "nothing to verify"})
    assert report.verdict == "fail"
    assert report.reason.startswith("no load level held every SLO (ttft p95")
    assert report.capacity is not None and report.replicas is not None and report.operating_point is not None
    assert report.capacity.rate_rps == 0.0 and report.replicas.count is None
    assert report.operating_point.level == 1  # the lowest level stands for the run
    assert "No plan: capacity at SLO is 0" in render_markdown(report)


def test_a_search_without_levels_is_an_error() -> None:
    report = _report([], [])
    assert report.verdict == "error" and "ran no load level" in report.reason

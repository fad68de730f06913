"""The environment comparison: replica plans on one basis, the recommendation and every loser's
reason, the verdict and exit code; and the `environments:` scenario section."""

from __future__ import annotations

from typing import Any

import pytest

from loadgen.environments.comparison_model import Comparison
from loadgen.environments.comparison_text import render_markdown
from loadgen.environments.recommend import EnvironmentRun, PlanBasis, compare_environments, exit_code
from loadgen.report.json_report import report_data
from loadgen.report.model import Report, Verdict
from loadgen.scenario.loader import ScenarioError, parse_scenario
from tests.unit import report_samples as samples
from tests.unit.report_samples import sample_report

BASIS = PlanBasis(peak_rate=60.0, target_utilization=0.8, redundancy=1)


def search_report(
    capacity: float,
    *,
    verdict: Verdict = "pass",
    tokens_per_s: float | None = None,
    slo: list[dict[str, Any]] | None = None,
    cold_start: float = 1.0,
    verified: dict[str, Any] | None = None,
    peak_rate: float = 60.0,
) -> Report:
    """A search run's report.json with the numbers the comparison reads."""
    levels = [
        samples.knee_level(
            level,
            min(level * 5.0, capacity or 5.0),
            bool(capacity),
            ttft_ms=samples.percentiles(50.0 + level),
            itl_ms=samples.percentiles(10.0),
            e2e_ms=samples.percentiles(200.0 + level),
        )
        for level in (1, 2, 4, 8)
    ]
    plan = samples.replicas(peak_rate, None, redundancy=1)
    if verified is not None:
        plan["verified"] = verified
    base = report_data(sample_report())
    metrics = base["metrics"]
    for key, p95 in (("ttft_ms", 55.0), ("itl_ms", 10.5), ("e2e_ms", 210.0)):
        metrics[key]["p95"] = p95
    metrics["error_rate"] = 0.0
    server = base["server"]
    server["kind"] = "simulated"
    server["cold_start_s"].update(ready=cold_start / 2, first_token=cold_start)
    server["memory"]["growth_mb_per_min"] = 0.5
    # A search's phases are its level runs.
    level = {"level": 4, "over": "concurrency", "trial": 0, "role": "search"}
    level |= {"replicas": 1, "extended": False}
    phases = [phase | level for phase in base["phases"]]
    checks = slo or [samples.slo_check("ttft p95", 150.0, 55.0, "ms", True)]
    return sample_report(
        verdict=verdict,
        reason=f"{verdict} for the test",
        metrics=metrics,
        server=server,
        phases=phases,
        slo=[{"op": "<=", "note": None} | check for check in checks],
        knee=samples.knee("concurrency", 4, levels),
        capacity=samples.capacity(
            capacity,
            4 if capacity else None,
            output_tokens_per_s=tokens_per_s if tokens_per_s is not None else capacity * 16,
        ),
        replicas=plan,
    )


def by_name(comparison: Comparison) -> dict[str, dict[str, Any]]:
    """The comparison's rows as comparison.json has them, by environment."""
    return {row["name"]: row for row in comparison.to_dict()["environments"]}


def test_the_cheapest_plan_that_meets_every_slo_wins_and_each_loser_says_why():
    cold_failed = [
        {"name": "ttft p95", "threshold": 150.0, "observed": 55.0, "unit": "ms", "passed": True},
        {"name": "cold_start", "threshold": 30.0, "observed": 41.5, "unit": "s", "passed": False},
    ]
    runs = [
        EnvironmentRun("small", search_report(40.0), cost_per_replica_hour=1.0),
        EnvironmentRun("big", search_report(80.0), cost_per_replica_hour=3.0),
        EnvironmentRun("slow", search_report(0.0, verdict="fail"), cost_per_replica_hour=0.2),
        EnvironmentRun(
            "coldy", search_report(100.0, verdict="fail", slo=cold_failed), cost_per_replica_hour=0.5
        ),
    ]
    comparison = compare_environments(runs, BASIS, name="t")
    doc = comparison.to_dict()
    rows = by_name(comparison)
    # small: ceil(60 / (40 × 0.8)) + 1 = 3 replicas → 3 × 1.0 × 730 = 2190 a month.
    assert rows["small"]["replicas"] == 3 and rows["small"]["monthly_cost"] == pytest.approx(2190.0)
    # big: ceil(60 / (80 × 0.8)) + 1 = 2 replicas → 2 × 3.0 × 730 = 4380 a month: dearer by 100%.
    assert rows["big"]["replicas"] == 2 and rows["big"]["monthly_cost"] == pytest.approx(4380.0)
    assert doc["verdict"] == "recommend" and exit_code(comparison) == 0
    assert doc["recommendation"]["environment"] == "small"
    assert doc["recommendation"]["replicas"] == 3
    assert rows["small"]["status"] == "recommended" and rows["small"]["lost_because"] is None
    assert rows["big"]["status"] == "meets"
    assert rows["big"]["lost_because"].startswith("dearer by 100%")
    assert rows["slow"]["status"] == "fails" and "every load level" in rows["slow"]["lost_because"]
    assert rows["coldy"]["lost_because"] == "cold start over the SLO: 41.5 s > 30 s"
    # Cost per million output tokens: 1.0 / (640 tok/s × 3600) × 1e6 = 0.434.
    assert rows["small"]["cost_per_million_tokens"] == pytest.approx(0.434, abs=1e-3)
    # The recommendation comes first, then the others that meet the SLOs, then the rest.
    assert [row["name"] for row in doc["environments"]][:2] == ["small", "big"]
    text = render_markdown(comparison)
    assert "**small**" in text and "dearer by 100%" in text


def test_without_prices_the_fewest_replicas_win():
    runs = [EnvironmentRun("a", search_report(40.0)), EnvironmentRun("b", search_report(80.0))]
    comparison = compare_environments(runs, BASIS)
    doc = comparison.to_dict()
    assert doc["recommendation"]["environment"] == "b"
    assert by_name(comparison)["a"]["lost_because"] == "needs 3 replicas against 2"
    assert doc["recommendation"]["monthly_cost"] is None


def test_memory_growth_and_a_failed_verification_are_reasons():
    leaking = [
        {"name": "memory_growth", "threshold": 10.0, "observed": 58.2, "unit": "MB/min", "passed": False}
    ]
    checks = [
        samples.slo_check("ttft p95", 150.0, 412.0, "ms", False),
        samples.slo_check("error_rate", 1.0, 0.0, "%", True),
    ]
    plan_failed = {
        "replicas": 3,
        "passed": False,
        "at_plan": samples.verify_run(3, 60.0, False, checks=checks),
    }
    runs = [
        EnvironmentRun("leaky", search_report(50.0, verdict="fail", slo=leaking)),
        EnvironmentRun("unverified", search_report(50.0, verdict="fail", verified=plan_failed)),
    ]
    comparison = compare_environments(runs, BASIS)
    doc = comparison.to_dict()
    rows = by_name(comparison)
    assert rows["leaky"]["lost_because"] == "leaks: memory grows 58.2 MB/min > 10 MB/min"
    assert rows["unverified"]["lost_because"] == (
        "the plan of 3 replicas did not hold at the peak (ttft p95 failed)"
    )
    assert doc["verdict"] == "none" and exit_code(comparison) == 1
    assert doc["recommendation"] is None


def test_a_failed_run_makes_the_comparison_an_error_unless_the_environment_is_optional():
    failed = search_report(0.0, verdict="error")
    optional = [
        EnvironmentRun("ok", search_report(40.0), cost_per_replica_hour=1.0),
        EnvironmentRun("vllm", failed, optional=True),
    ]
    comparison = compare_environments(optional, BASIS)
    doc = comparison.to_dict()
    assert doc["verdict"] == "recommend" and exit_code(comparison) == 0
    assert by_name(comparison)["vllm"]["status"] == "left out"
    required = [optional[0], EnvironmentRun("vllm", None, error="interrupted before it started")]
    comparison = compare_environments(required, BASIS)
    doc = comparison.to_dict()
    assert doc["verdict"] == "error" and exit_code(comparison) == 2
    assert "vllm" in doc["reason"] and "deploy on ok" in doc["reason"]
    assert by_name(comparison)["vllm"]["lost_because"] == "run failed: interrupted before it started"


def test_every_plan_uses_one_basis_even_when_the_runs_planned_for_other_peaks():
    runs = [
        EnvironmentRun("first", search_report(40.0, peak_rate=60.0)),
        EnvironmentRun("second", search_report(40.0, peak_rate=600.0)),
    ]
    comparison = compare_environments(runs)  # the basis comes from the first report
    doc = comparison.to_dict()
    assert doc["plan_basis"] == {
        "peak_rate": 60.0,
        "target_utilization": 0.8,
        "redundancy": 1,
        "unit": "req/s",
        "plan_on": "lower",
    }
    assert {row["replicas"] for row in doc["environments"]} == {3}


def test_a_plan_for_sessions_divides_by_the_capacity_in_sessions():
    report = search_report(40.0, peak_rate=10.0)  # 40 req/s at the capacity level…
    assert report.capacity is not None and report.replicas is not None
    report.capacity.sessions_per_s = 8.0  # …which started 8 sessions/s (5 turns each)
    report.replicas.unit = "sessions/s"
    comparison = compare_environments([EnvironmentRun("only", report)])
    doc = comparison.to_dict()
    assert doc["plan_basis"]["unit"] == "sessions/s"
    row = doc["environments"][0]
    assert row["replicas"] == 2 + 1  # ceil(10 / (8 × 0.8)) + 1 spare, not ceil(10 / (40 × 0.8)) + 1
    assert "10 sessions/s" in doc["reason"] and row["capacity_rps"] == 40.0


SEARCH = """
name: envs
workload: {prompt_tokens: {kind: fixed, value: 8}, output_tokens: {kind: fixed, value: 4}}
search: {over: concurrency, levels: [1, 2], level_duration: 3s, level_warmup: 1s}
capacity: {peak_rate: 10, cost_per_replica_hour: 9}
"""


def test_each_environment_runs_the_scenario_with_its_own_server_and_price():
    scenario = parse_scenario(
        SEARCH
        + """environments:
  - {name: cheap, cost_per_replica_hour: 0.5, notes: "1 core", server: {kind: simulated, slots: 2}}
  - {name: default-price, server: {kind: simulated, slots: 8}}
"""
    )
    assert scenario.server is None
    cheap = scenario.for_environment(scenario.environments[0])
    assert cheap.server is not None and cheap.server.kind == "simulated" and cheap.server.slots == 2
    assert cheap.capacity is not None and cheap.capacity.cost_per_replica_hour == 0.5
    assert cheap.environments == [] and cheap.search == scenario.search
    other = scenario.for_environment(scenario.environments[1])
    assert other.capacity is not None and other.capacity.cost_per_replica_hour == 9


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "server: {kind: simulated}\nenvironments: [{name: a, server: {kind: simulated}}]\n",
            "give either server: or environments:",
        ),
        (
            "environments: [{name: a, server: {kind: simulated}}, {name: a, server: {kind: simulated}}]\n",
            "environments[1].name: duplicate environment name 'a'",
        ),
        ("environments: [{name: A B, server: {kind: simulated}}]\n", "environments[0].name"),
        ("", "server: required"),
    ],
)
def test_bad_environment_sections_are_located_errors(extra: str, message: str):
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(SEARCH + extra, "envs.yaml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("envs.yaml:")


def test_environments_need_a_search_and_a_capacity_section():
    text = """
name: envs
traffic: [{kind: constant, rate: 1, duration: 1s}]
environments: [{name: a, server: {kind: simulated}}]
"""
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "envs.yaml")
    assert "give search: and capacity: too" in str(caught.value)

"""Replica arithmetic, the busiest window of a trace, costs, and the `capacity:` section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from loadgen.evaluate.replicas import (
    CapacitySpec,
    PeakFromTrace,
    busiest_window_rate,
    plan_replicas,
    replica_count,
)


@pytest.mark.parametrize(
    ("peak", "expected"),
    [(400, 25), (100, 7), (1000, 60)],  # 400/17.2 = 23.3 → 24; 100/17.2 = 5.8 → 6; 1000/17.2 = 58.1 → 59
)
def test_replica_counts_match_the_arithmetic(peak: float, expected: int) -> None:
    assert replica_count(peak, 21.5, 0.8, 1) == expected


def test_exact_quotients_do_not_round_up() -> None:
    assert replica_count(400, 20, 0.8, 0) == 25
    assert replica_count(400, 20, 0.8, 2) == 27
    # 700 / (4 × 0.7) is 250.00000000000003 in floats: still 250 replicas.
    assert 700 / (4 * 0.7) > 250
    assert replica_count(700, 4, 0.7, 0) == 250
    assert replica_count(400.01, 20, 0.8, 0) == 26


def test_impossible_plans_raise() -> None:
    with pytest.raises(ValueError, match="capacity"):
        replica_count(100, 0.0, 0.8, 1)
    with pytest.raises(ValueError, match="target_utilization"):
        replica_count(100, 10, 1.5, 1)


def test_plan_matches_the_report_example() -> None:
    plan = plan_replicas(400, 21.5, 0.8, 1, output_tokens_per_s=688.0, cost_per_replica_hour=2.5)
    assert plan.count == 25
    assert plan.formula == "ceil(400 / (21.5 × 0.8)) + 1 = 25"
    assert plan.cost_per_million_tokens == pytest.approx(2.5 / (688 * 3600) * 1e6, abs=1e-4)
    assert plan.cost_per_million_tokens is not None and round(plan.cost_per_million_tokens, 2) == 1.01
    assert plan.monthly_cost == 45625.0  # 25 × 2.5 × 730 h
    assert (plan.peak_rate, plan.target_utilization, plan.redundancy) == (400, 0.8, 1)


def test_plan_without_price_has_no_costs() -> None:
    plan = plan_replicas(50, 12.5, 1.0, 0)
    assert (plan.count, plan.cost_per_million_tokens, plan.monthly_cost) == (4, None, None)
    assert plan.formula == "ceil(50 / (12.5 × 1)) + 0 = 4"


def test_busiest_window() -> None:
    # 5 arrivals within [10, 11): the busiest 1 s window holds 5 → 5 req/s.
    times = [0.0, 0.5, 2.0, 10.0, 10.2, 10.4, 10.6, 10.99, 11.0, 20.0]
    assert busiest_window_rate(times, 1.0) == 5.0
    assert busiest_window_rate(times, 60.0) == pytest.approx(10 / 60)  # shorter than the window
    assert busiest_window_rate(list(reversed(times)), 1.0) == 5.0  # unsorted input
    assert busiest_window_rate([], 1.0) == 0.0
    with pytest.raises(ValueError):
        busiest_window_rate(times, 0)


def test_busiest_window_is_linear_time() -> None:
    times = [i * 0.125 for i in range(20_000)]  # 8 req/s (exact binary fractions) for 2500 s
    assert busiest_window_rate(times, 10.0) == 8.0


def test_capacity_spec() -> None:
    spec = CapacitySpec.model_validate(
        {"peak_rate": 400, "target_utilization": "80%", "redundancy": 1, "cost_per_replica_hour": 2.5}
    )
    assert (spec.peak_rate, spec.target_utilization, spec.redundancy) == (400, 0.8, 1)
    sample = Path(__file__).resolve().parents[2] / "scenarios" / "traces" / "azure_conv_sample.csv"
    traced = CapacitySpec.model_validate(
        {"peak_rate": {"from_trace": {"path": str(sample), "format": "azure", "window": "60s"}}}
    )
    assert isinstance(traced.peak_rate, PeakFromTrace)
    assert traced.peak_rate.from_trace.window == 60.0
    assert traced.peak_rate.from_trace.path == str(sample)  # read (and checked) when validated
    assert traced.target_utilization == 0.8 and traced.redundancy == 0


@pytest.mark.parametrize(
    "data",
    [
        {"peak_rate": 0},
        {"peak_rate": 10, "target_utilization": 0},
        {"peak_rate": 10, "target_utilization": 1.2},
        {"peak_rate": 10, "redundancy": -1},
        {"peak_rate": 10, "cost_per_replica_hour": -1},
        {"peak_rate": {"from_trace": {"path": "t", "format": "csv"}}},
        {"peak_rate": 10, "verify": True},
    ],
)
def test_capacity_spec_rejects_bad_input(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CapacitySpec.model_validate(data)

"""How sure a recommendation is: the share of resamples of the capacities in which the same
environment is the cheapest, and "too close to call" below the bar."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from loadgen.environments.comparison_text import render_markdown
from loadgen.environments.confidence import Candidate, capacity_draws, cheapest_shares
from loadgen.environments.recommend import EnvironmentRun, PlanBasis, compare_environments
from loadgen.report.model import Report
from loadgen.report.model.evaluation import Capacity
from tests.unit import report_samples as samples
from tests.unit.test_environments import search_report

BASIS = PlanBasis(peak_rate=1000.0, target_utilization=0.8, redundancy=0)
TERMS = BASIS.terms()


def batches(mean: float, relative_sd: float, count: int = 8, seed: int = 1) -> list[float]:
    """`count` batch goodputs around `mean`, scaled so their mean is exactly `mean`."""
    noise = np.random.default_rng(seed).normal(0.0, 1.0, count)
    noise = (noise - noise.mean()) / noise.std(ddof=1)
    return [float(value) for value in mean * (1 + relative_sd * noise)]


def interval(values: list[float]) -> list[float]:
    """The batch-means 95% interval of `values` (Student t, K − 1 degrees of freedom)."""
    mean = float(np.mean(values))
    half = float(scipy_stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1) / np.sqrt(len(values)))
    return [mean - half, mean + half]


def capacity(mean: float, relative_sd: float, seed: int = 1, **keys: Any) -> Capacity:
    values = batches(mean, relative_sd, seed=seed)
    return Capacity.model_validate(
        samples.capacity(mean, 8.0, batch_rps=values, ci95=interval(values)) | keys
    )


def measured(rate: float, relative_sd: float) -> Report:
    report = search_report(rate)
    report.capacity = capacity(rate, relative_sd)
    return report


def test_draws_follow_the_batch_means_sampling_distribution() -> None:
    draws = capacity_draws(capacity(40.0, 0.10), sessions=False, rng=np.random.default_rng(0))
    # s / √K = 4 / √8 = 1.414; a t with 7 degrees of freedom has sd √(7/5) = 1.18 of that.
    assert draws.mean() == pytest.approx(40.0, abs=0.1)
    assert draws.std() == pytest.approx(1.414 * 1.183, rel=0.08)
    # 95% of them inside the level's own interval: the interval and the draws agree.
    low, high = interval(batches(40.0, 0.10))
    assert np.mean((draws > low) & (draws < high)) == pytest.approx(0.95, abs=0.01)
    # In sessions/s the draws scale by the capacity level's sessions per request.
    sessions = capacity_draws(capacity(40.0, 0.10, sessions_per_s=10.0), True, np.random.default_rng(0))
    assert sessions == pytest.approx(draws / 4)
    # An older report has only ci95: a normal of that spread; without an interval: exact.
    older_capacity = Capacity.model_validate(samples.capacity(40.0, 8.0, ci95=[36.08, 43.92]))
    older = capacity_draws(older_capacity, False, np.random.default_rng(0))
    assert older.std() == pytest.approx(2.0, rel=0.05)
    exact = Capacity.model_validate(samples.capacity(40.0, 8.0))
    assert set(capacity_draws(exact, False, np.random.default_rng(0))) == {40.0}


def test_three_percent_apart_is_too_close_and_fifty_percent_is_not() -> None:
    close = cheapest_shares(
        [
            Candidate("a", capacity(40.0, 0.10), 1.0),
            Candidate("b", capacity(41.2, 0.10, seed=2), 1.0),
        ],
        TERMS,
        priced=True,
    )
    assert close["a"] + close["b"] == pytest.approx(1.0)
    assert 0.5 < close["b"] < 0.9  # b is ahead, but not by more than the noise
    apart = cheapest_shares(
        [
            Candidate("a", capacity(40.0, 0.10), 1.0),
            Candidate("b", capacity(60.0, 0.10, seed=2), 1.0),
        ],
        TERMS,
        priced=True,
    )
    assert apart["b"] > 0.99
    # A price can outweigh capacity: b at 1.6× a's price for 1.5× its capacity is dearer.
    priced = cheapest_shares(
        [
            Candidate("a", capacity(40.0, 0.02), 1.0),
            Candidate("b", capacity(60.0, 0.02, seed=2), 1.6),
        ],
        TERMS,
        priced=True,
    )
    assert priced["a"] > 0.99


def test_the_comparison_says_too_close_to_call_and_names_both() -> None:
    runs = [
        EnvironmentRun("a", measured(40.0, 0.10), cost_per_replica_hour=1.0),
        EnvironmentRun("b", measured(41.2, 0.10), cost_per_replica_hour=1.0),
    ]
    comparison = compare_environments(runs, BASIS)
    doc = comparison.to_dict()
    recommendation = doc["recommendation"]
    assert doc["verdict"] == "recommend"  # exit 0 still: a plan either way
    assert recommendation["too_close"] is True and recommendation["required_confidence"] == 0.9
    winner, other = recommendation["environment"], recommendation["runner_up"]
    assert {winner, other} == {"a", "b"}
    assert recommendation["confidence"] + recommendation["runner_up_share"] == pytest.approx(1.0)
    assert doc["reason"].startswith(f"too close to call: {winner} or {other} (")
    assert "too close to call" in render_markdown(comparison)
    # A lower bar accepts the same evidence.
    relaxed = compare_environments(runs, BASIS, confidence=min(recommendation["confidence"], 0.5))
    assert relaxed.to_dict()["recommendation"]["too_close"] is False


def test_a_clear_winner_is_recommended_with_its_confidence_and_replica_range() -> None:
    runs = [
        EnvironmentRun("a", measured(40.0, 0.10), cost_per_replica_hour=1.0),
        EnvironmentRun("b", measured(60.0, 0.10), cost_per_replica_hour=1.0),
    ]
    comparison = compare_environments(runs, BASIS)
    doc = comparison.to_dict()
    recommendation = doc["recommendation"]
    assert (recommendation["environment"], recommendation["too_close"]) == ("b", False)
    assert recommendation["confidence"] > 0.99
    assert doc["reason"].startswith("b is the cheapest in 100% of resamples; deploy on b:")
    rows = {row["name"]: row for row in doc["environments"]}
    b = rows["b"]
    # Planned on the interval's lower bound; the point estimate's count beside it.
    low = b["capacity_ci95"][0]
    assert b["replicas"] == int(np.ceil(1000 / (low * 0.8))) > b["replicas_at_point"] == 21
    assert b["monthly_cost_at_point"] == pytest.approx(21 * 730.0)
    assert f"{b['replicas']} replicas (21 at the point estimate)" in doc["reason"]
    assert rows["a"]["cheapest_share"] < 0.01

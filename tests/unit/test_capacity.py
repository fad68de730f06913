"""Capacity at SLO from level results, its interval and grid step, and the simulated server's formula."""

from __future__ import annotations

import pytest

from loadgen.evaluate.capacity import capacity_at_slo
from loadgen.evaluate.curve import LevelResult, Over
from loadgen.evaluate.parts import json_data
from loadgen.evaluate.search import SearchSpec
from loadgen.run.search_runner import search
from tests import simulated_curve
from tests.simulated_curve import closed_loop


def level(
    rate: float,
    passed: bool,
    failed: tuple[str, ...] = (),
    ci: tuple[float, float] | None = None,
    unresolved: tuple[str, ...] = (),
):
    return LevelResult(
        rate,
        rate,
        rate * 32,
        slo_passed=passed,
        failed_slos=failed,
        ci95=ci,
        batch_rps=(rate,) * 4,
        trials=2,
        unresolved_slos=unresolved,
    )


def test_highest_passing_level_and_the_slo_that_broke_next() -> None:
    levels = [level(4, True), level(16, False, ("ttft p95", "e2e p99")), level(8, True), level(12, True)]
    cap = capacity_at_slo(levels)
    assert json_data(cap) == {
        "rate_rps": 12,
        "output_tokens_per_s": 384,
        "ci95": None,
        "precision": None,
        "trials": 2,
        "batch_rps": [12, 12, 12, 12],
        "limiting_slo": "ttft p95",
        "level": 12,
        "sessions_per_s": None,  # levels of single requests (sessions: test_search_sessions.py)
        "sessions_ci95": None,
        "grid": {"next_level": 16, "step": pytest.approx(1 / 3), "within_precision": True, "note": None},
    }


def test_a_pass_above_a_failure_is_not_sustained_capacity() -> None:
    levels = [level(4, True), level(8, False, ("itl p95",)), level(10, True)]
    cap = capacity_at_slo(levels)
    assert cap is not None
    assert (cap.rate_rps, cap.limiting_slo) == (4, "itl p95")


def test_nothing_failed_and_nothing_passed() -> None:
    held = capacity_at_slo([level(2, True), level(4, True)])
    assert held is not None and held.limiting_slo is None
    none = capacity_at_slo([level(2, False, ("error_rate",))])
    assert none is not None
    assert (none.rate_rps, none.limiting_slo, none.level) == (0.0, "error_rate", None)
    assert capacity_at_slo([]) is None


def test_the_capacity_carries_its_levels_interval_and_an_unresolved_level_is_not_capacity() -> None:
    levels = [
        level(10, True, ci=(9.6, 10.4)),
        level(20, True, ci=(19.0, 21.0)),
        level(24, False, unresolved=("ttft p95",)),  # straddles: not held, and named as what broke
    ]
    cap = capacity_at_slo(levels, Over.RATE, precision=0.05)
    assert cap is not None
    assert (cap.rate_rps, json_data(cap.ci95), cap.limiting_slo) == (20, [19.0, 21.0], "ttft p95")
    assert cap.precision == pytest.approx(0.05)
    assert cap.grid is not None
    assert cap.grid.step == pytest.approx(0.2) and cap.grid.within_precision is False
    assert cap.grid.note is None  # a rate grid could be finer: the search's to refine


def test_a_concurrency_step_of_one_user_is_said_to_be_as_fine_as_it_gets() -> None:
    cap = capacity_at_slo([level(8, True), level(9, False, ("ttft p95",))], Over.CONCURRENCY, precision=0.05)
    assert cap is not None and cap.grid is not None
    assert cap.grid.within_precision is False
    assert cap.grid.note == (
        "concurrency is a whole number: the step from 8 to 9 users (12.5%) cannot get finer than the "
        "5% precision"
    )
    within = capacity_at_slo([level(40, True), level(42, False, ("ttft p95",))], Over.CONCURRENCY, 0.05)
    assert within is not None and within.grid is not None and within.grid.within_precision is True


def test_simulated_capacity_formula() -> None:
    # T = t + (N − 1)·i = 0.05 + 63 × 0.01 = 0.68 s; S / T = 8 / 0.68.
    assert simulated_curve.service_time(0.05, 0.01, 64) == pytest.approx(0.68)
    rate, tokens = simulated_curve.capacity(8, 0.05, 0.01, 64, ttft_p95_slo_s=0.2)
    assert rate == pytest.approx(11.7647, abs=1e-4)
    assert tokens == pytest.approx(rate * 64)
    assert simulated_curve.capacity(8, 0.05, 0.01, 64, ttft_p95_slo_s=0.04) == (0.0, 0.0)
    assert simulated_curve.capacity(4, 0.1, 0.0, 1)[0] == pytest.approx(40.0)


@pytest.mark.parametrize(("slots", "ttft", "itl", "tokens"), [(8, 0.05, 0.01, 64), (3, 0.2, 0.02, 16)])
def test_search_on_the_simulated_curve_measures_the_formula(slots, ttft, itl, tokens) -> None:
    slo = ttft * 2  # admits some queueing, but never more throughput than S / T
    results = search(
        SearchSpec(start=1, max=256),
        lambda c: closed_loop(c, slots, ttft, itl, tokens, ttft_p95_slo_s=slo),
        lambda _: None,
    )
    cap = capacity_at_slo(results)
    expected_rate, expected_tokens = simulated_curve.capacity(slots, ttft, itl, tokens, slo)
    assert cap is not None
    assert cap.rate_rps == pytest.approx(expected_rate)
    assert cap.output_tokens_per_s == pytest.approx(expected_tokens)


def test_closed_loop_model_follows_littles_law() -> None:
    at_16 = closed_loop(16, 8, 0.05, 0.01, 64)
    assert at_16.throughput_rps == pytest.approx(8 / 0.68)
    assert at_16.e2e_ms["p95"] == pytest.approx(16 / at_16.throughput_rps * 1000)  # e2e = c / X
    assert at_16.ttft_ms["p95"] == pytest.approx(50 + 680)  # one full service time of queueing
    assert closed_loop(4, 8, 0.05, 0.01, 64).ttft_ms["p95"] == pytest.approx(50)


def test_on_a_plateau_the_capacity_is_the_lowest_level_within_the_best_ones_interval() -> None:
    # Past the knee every level serves ~40 req/s; the highest reading (10: 40.3) is noise. The
    # capacity is the lowest level whose goodput is not below 40.3's interval (9: 39.9 ≥ 39.8).
    levels = [
        level(4, True, ci=(19.7, 20.3)),
        LevelResult(8, 38.9, 1245, ci95=(38.6, 39.2), trials=1),
        LevelResult(9, 39.9, 1277, ci95=(39.5, 40.3), trials=1),
        LevelResult(10, 40.3, 1290, ci95=(39.8, 40.8), trials=1),
        LevelResult(12, 40.1, 1283, ci95=(39.6, 40.6), trials=1),
        level(16, False, ("ttft p95",)),
    ]
    cap = capacity_at_slo(levels, Over.CONCURRENCY, precision=0.05)
    assert cap is not None
    assert (cap.level, cap.rate_rps, cap.limiting_slo) == (9, 39.9, "ttft p95")
    assert cap.grid is not None and cap.grid.next_level == 10


def test_a_wide_interval_on_the_highest_reading_does_not_pull_the_capacity_down() -> None:
    # 32 read highest, but from one trial of two batches (±45%): its lower bound (25) would admit
    # 8 (26). The floor is the surest level's, 16's lower bound (34.9): capacity 37.3 at 16.
    levels = [
        LevelResult(8, 26.0, 832, ci95=(24.8, 27.3), trials=5),
        LevelResult(16, 37.3, 1194, ci95=(34.9, 39.7), trials=5),
        LevelResult(24, 44.5, 1424, ci95=(29.8, 59.2), trials=1),
        LevelResult(32, 46.3, 1482, ci95=(25.1, 67.5), trials=1),
    ]
    cap = capacity_at_slo(levels, Over.CONCURRENCY, precision=0.05)
    assert cap is not None and (cap.level, cap.rate_rps) == (16, 37.3)

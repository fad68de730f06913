"""The knee by elasticity, and kneed's cross-check, on synthetic curves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from loadgen.evaluate.curve import LevelResult, Over, elasticity
from loadgen.evaluate.knee import elasticity_knee, find_knee, kneed_knee
from loadgen.evaluate.parts import json_data
from tests.simulated_curve import closed_loop


def level(c: float, rps: float, p95_ms: float) -> LevelResult:
    return LevelResult(c, rps, rps * 64, e2e_ms={"p50": p95_ms, "p95": p95_ms})


def slots_curve(levels: list[int], slots: int = 8) -> list[LevelResult]:
    return [closed_loop(c, slots, 0.05, 0.01, 64) for c in levels]


def test_elasticity_of_a_pair() -> None:
    # Throughput ×2, latency ×4: elasticity 2.
    assert elasticity(level(1, 10, 100), level(2, 20, 400)) == pytest.approx(2.0)
    assert elasticity(level(1, 10, 100), level(2, 20, 100)) == pytest.approx(0.0)
    assert elasticity(level(1, 10, 100), level(2, 10, 150)) == math.inf  # flat throughput
    assert elasticity(level(1, 10, 100), level(2, 0.0, 150)) == math.inf  # collapse
    assert elasticity(level(1, 0.0, 100), level(2, 5, 150)) == 0.0  # from nothing: no log of 0


def test_knee_of_the_slot_curve_is_the_slot_count() -> None:
    knee = find_knee(slots_curve([1, 2, 4, 8, 16, 32]), Over.CONCURRENCY)
    assert knee.level == 8
    assert knee.throughput_rps == pytest.approx(8 / 0.68)
    assert knee.method == "elasticity"
    assert knee.kneed_level == 8 and knee.agree is True
    assert [entry.level for entry in knee.levels] == [1, 2, 4, 8, 16, 32]
    assert set(json_data(knee)["levels"][0]) >= {
        "level",
        "throughput_rps",
        "output_tokens_per_s",
        "ttft_ms",
        "itl_ms",
        "e2e_ms",
        "error_rate",
        "slo_passed",
    }


@pytest.mark.parametrize("slots", [3, 5, 12])
def test_knee_tracks_slots_on_a_fine_grid(slots: int) -> None:
    assert find_knee(slots_curve(list(range(1, 25)), slots), Over.CONCURRENCY).level == slots


def test_levels_are_sorted_before_pairing() -> None:
    # The search visits 16 before 12, 10, 9: the knee still comes from neighbouring levels.
    knee = find_knee(slots_curve([1, 2, 4, 8, 16, 12, 10, 9]), Over.CONCURRENCY)
    assert knee.level == 8
    assert [entry.level for entry in knee.levels] == [1, 2, 4, 8, 9, 10, 12, 16]


def test_no_knee_on_a_curve_that_keeps_scaling() -> None:
    curve = [level(c, 3.0 * c, 100.0) for c in (1, 2, 4, 8, 16)]
    knee = find_knee(curve, Over.CONCURRENCY)
    assert knee.level is None and knee.throughput_rps is None
    assert knee.kneed_level is None and knee.agree is False


def test_sublinear_scaling_with_moderate_latency_growth_is_not_a_knee() -> None:
    # Batching: throughput ∝ c^0.7, latency = c / throughput ∝ c^0.3 → elasticity 0.43.
    curve = [level(c, c**0.7, 1000 * c**0.3) for c in (1, 2, 4, 8, 16, 32)]
    assert elasticity_knee(curve) is None


def test_latency_blip_while_throughput_scales_is_not_a_knee() -> None:
    # p95 doubles at 4 (noise) while throughput still doubles: elasticity ≈ 1.6, not flattening.
    curve = [
        level(1, 3, 100),
        level(2, 6, 100),
        level(4, 12, 300),
        level(8, 24, 110),
        level(16, 25, 400),
        level(32, 25, 800),
    ]
    assert elasticity_knee(curve) is curve[3]


def test_noisy_curve_finds_the_knee() -> None:
    rng = np.random.default_rng(7)
    clean = slots_curve([1, 2, 4, 6, 8, 10, 12, 16, 24, 32], slots=10)
    noisy = [
        LevelResult(
            r.level,
            r.throughput_rps * rng.uniform(0.95, 1.05),
            0.0,
            e2e_ms={"p95": r.e2e_ms["p95"] * rng.uniform(0.9, 1.1)},
        )
        for r in clean
    ]
    knee = find_knee(noisy, Over.CONCURRENCY)
    assert knee.level is not None and abs(knee.level - 10) <= 2
    assert knee.kneed_level is not None and abs(knee.kneed_level - 10) <= 2


def test_single_level_and_empty() -> None:
    for levels in ([], [level(4, 10, 100)]):
        knee = find_knee(levels, Over.RATE)
        assert knee.level is None and knee.kneed_level is None
        assert len(knee.levels) == len(levels)


def test_zero_throughput_levels_do_not_crash() -> None:
    curve = [level(1, 0.0, 0.0), level(2, 0.0, 0.0), level(4, 8.0, 100), level(8, 8.0, 250)]
    knee = find_knee(curve, Over.RATE)
    assert knee.level == 4


def test_kneed_on_throughput_vs_level() -> None:
    assert kneed_knee(slots_curve([1, 2, 4, 8, 16, 32, 64])) == 8.0
    assert kneed_knee(slots_curve([1, 2])) is None


def test_reports_both_when_methods_differ() -> None:
    # Throughput bends at 8 (kneed), but latency outgrows it earlier, at 4 → 6.
    curve = [
        level(1, 1, 100),
        level(2, 2, 100),
        level(4, 4, 100),
        level(6, 4.4, 300),
        level(8, 7.5, 320),
        level(16, 8, 330),
        level(32, 8, 330),
    ]
    knee = find_knee(curve, Over.CONCURRENCY)
    assert knee.level == 4
    assert knee.kneed_level is not None and knee.kneed_level != 4
    assert knee.agree is False

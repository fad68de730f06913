"""The release gate's bootstrap bound, pinned: samples on which the rank test alone would call a
regression, so the verdict rests on the bound, and the bound's value is known in closed form.

The construction: TTFT values of 201 requests (odd, so a median is one of the values). The
baseline has 141 at 100 ms and 60 at 300 ms; the current run moves `moved` of the 100-ms
requests to 115 ms. Whatever the resample, p95 and p99 are 300 ms in both runs (ratio 1) and the
baseline's median is 100 ms (141 of 201 values; a resample with fewer than 101 has probability
below 1e-9). The current run's resampled median is 115 ms, unless the resample holds 101 or more
100-ms values: then it is 100 ms. So the bootstrap ratio of p50 takes two values, 1.15 and 1.0,
and P(ratio = 1.0) = P(Binomial(201, kept/201) >= 101) with kept = 141 − moved. The one-sided
lower bound at `alpha` is 1.15 (beyond 1 + 10%) when that probability is below alpha, else 1.0.
Meanwhile the observed p50 moved +15% and the Mann–Whitney p-value stays below 0.002: remove
the bound, or take it at another level, and the verdicts below change.

The same two-valued bootstrap gives the row's minimum detectable effect in closed form: the log
ratio is ln 1.15 with probability 1 − c and 0 with c, so its standard deviation is
ln 1.15 × √(c(1 − c)) and the MDE exp((z_{1−alpha} + z_{0.8}) × that) − 1. Where the bound is not
cleared and that MDE exceeds the 10% threshold, the row is inconclusive, not "not significant".
"""

from __future__ import annotations

import math

import pytest
from scipy import stats

from loadgen.compare.compare_inputs import LatencySample
from loadgen.compare.gate import Settings, compare_latency

REQUESTS = 201
SLOW_TAIL = 60  # requests at 300 ms in both runs: p95 and p99 never move
FAST = REQUESTS - SLOW_TAIL  # 141 requests at 100 ms in the baseline
RESAMPLES = Settings().resamples  # 1,000, as `loadtest compare` uses


def borderline_ttft(kept: int) -> tuple[list[float], list[float]]:
    """(baseline, current) TTFT values in ms; the current run keeps `kept` requests at 100 ms
    and moves the other fast ones to 115 ms (kept < 101, so its observed median is 115 ms)."""
    baseline = [100.0] * FAST + [300.0] * SLOW_TAIL
    current = [100.0] * kept + [115.0] * (FAST - kept) + [300.0] * SLOW_TAIL
    return baseline, current


def chance_of_no_move(kept: int) -> float:
    """P(a resample of the current run has its median at 100 ms): the bootstrap's share of
    ratio 1.0, whose position against alpha decides the lower bound."""
    return float(stats.binom.sf(REQUESTS // 2, REQUESTS, kept / REQUESTS))


def _p50(kept: int, alpha: float, swap: bool = False) -> tuple[str, float, float]:
    baseline, current = borderline_ttft(kept)
    if swap:
        baseline, current = current, baseline
    settings = Settings(max_regression=0.10, alpha=alpha)  # the CLI's resamples and seed
    rows = compare_latency("ttft", LatencySample.single(baseline), LatencySample.single(current), settings)
    assert [row.verdict for row in rows[1:]] == ["ok", "ok"]  # p95, p99: ratio exactly 1
    p50 = rows[0]
    assert p50.change is not None and p50.p_value is not None and p50.mde is not None
    # The bootstrap's share of no-move resamples is c within its sampling error: the MDE follows.
    chance = chance_of_no_move(kept)
    error = 4 * math.sqrt(chance * (1 - chance) / RESAMPLES)
    low, high = expected_mde(max(chance - error, 0.0), alpha), expected_mde(chance + error, alpha)
    assert low <= p50.mde <= high
    return p50.verdict, p50.change, p50.p_value


def expected_mde(chance: float, alpha: float) -> float:
    """The closed-form MDE of the p50 row (module docstring)."""
    z = stats.norm.ppf(1 - alpha) + stats.norm.ppf(0.8)
    return math.expm1(z * math.log(1.15) * math.sqrt(chance * (1 - chance)))


def unconfirmed(chance: float, alpha: float) -> str:
    """A past-the-threshold move the bound did not confirm: inconclusive when the row could not
    have detected a 10% move, else not significant."""
    return "inconclusive" if expected_mde(chance, alpha) > 0.10 else "not significant"


def clear_of_alpha(chance: float, alpha: float) -> bool:
    """The share of no-move resamples lies over 3 standard errors from alpha: the seeded
    bootstrap's alpha-quantile is then firmly one of the two values, not a coin toss."""
    return abs(chance - alpha) > 3 * math.sqrt(chance * (1 - chance) / RESAMPLES)


# (kept, alpha): P(no move) 0.17% and 11% around alpha 1%, 0.95% and 26% around alpha 5%.
CASES = [(80, 0.01), (92, 0.01), (84, 0.05), (96, 0.05)]


@pytest.mark.parametrize(("kept", "alpha"), CASES)
def test_a_significant_15_percent_median_move_is_a_regression_only_past_the_bound(kept: int, alpha: float):
    chance = chance_of_no_move(kept)
    assert clear_of_alpha(chance, alpha)
    verdict, change, p_value = _p50(kept, alpha)
    assert change == pytest.approx(0.15)  # beyond the 10% threshold
    assert p_value < 0.002 < alpha  # the rank test alone says "significant" in every case
    assert verdict == ("regression" if chance < alpha else unconfirmed(chance, alpha)), chance


@pytest.mark.parametrize(("kept", "alpha"), [(80, 0.01), (92, 0.01)])
def test_an_improvement_needs_the_upper_bound_below_the_threshold(kept: int, alpha: float):
    # The same runs the other way round: p50 falls 13%; the ratio is 100/115 or 1.0, and the
    # upper bound is 1.0 (not below 0.9) as long as a no-move resample is likelier than alpha.
    chance = chance_of_no_move(kept)
    assert clear_of_alpha(chance, alpha)
    verdict, change, p_value = _p50(kept, alpha, swap=True)
    assert change == pytest.approx(100 / 115 - 1)
    assert p_value < alpha
    assert verdict == ("improvement" if chance < alpha else unconfirmed(chance, alpha)), chance


def test_alpha_moves_the_bound_on_one_and_the_same_pair():
    # 87 kept: P(no move) ≈ 2.8%: inside the 5% bound, outside the 1% bound.
    chance = chance_of_no_move(87)
    assert 0.02 < chance < 0.035 and clear_of_alpha(chance, 0.01) and clear_of_alpha(chance, 0.05)
    assert _p50(87, 0.05)[0] == "regression"
    assert _p50(87, 0.01)[0] == "not significant"  # an MDE of 7.6%: it could have seen 10%
    assert expected_mde(chance, 0.01) < 0.09
    # Where the bound is not cleared and the MDE is past the threshold: inconclusive.
    assert expected_mde(chance_of_no_move(92), 0.01) > 0.12 and _p50(92, 0.01)[0] == "inconclusive"

"""Digest: exact percentiles within the budget, DDSketch's stated relative error beyond it."""

from __future__ import annotations

import numpy as np
import pytest
from ddsketch import DDSketch

from loadgen.collect.digest import QUANTILES, RELATIVE_ACCURACY, Digest, sketch_keys
from loadgen.collect.stats import percentiles


def _lognormal(count: int, seed: int = 1) -> np.ndarray:
    return np.round(np.random.default_rng(seed).lognormal(np.log(40.0), 0.8, count), 3)


def test_within_the_budget_the_percentiles_are_numpys_exactly() -> None:
    values = _lognormal(5_000)
    digest = Digest(budget=10_000)
    for chunk in np.array_split(values, 7):
        digest.add(chunk)
    result = digest.percentiles()
    assert digest.method == "exact"
    for key, q in QUANTILES.items():
        assert result[key] == float(np.percentile(values, q))
    assert result["mean"] == float(values.mean())
    assert result["max"] == float(values.max())


def test_the_vectorised_keys_are_the_sketchs_own() -> None:
    sketch = DDSketch(RELATIVE_ACCURACY)
    values = np.concatenate([_lognormal(20_000), np.geomspace(1e-6, 1e7, 5_000)])
    mine = sketch_keys(sketch, values)
    theirs = np.array([sketch._mapping.key(float(v)) for v in values])
    # A value on a bin's very edge may land one bin over (a last-bit difference in log): both
    # bins' representatives are then within the accuracy of it.
    assert np.abs(mine - theirs).max() <= 1
    assert (mine == theirs).mean() > 0.9999


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_past_the_budget_percentiles_are_within_the_stated_relative_error(seed: int) -> None:
    values = _lognormal(300_000, seed)
    digest = Digest(budget=50_000)
    for chunk in np.array_split(values, 13):
        digest.add(chunk)
    assert digest.method == "ddsketch"
    result = digest.percentiles()
    exact = percentiles(values.tolist())
    for key in QUANTILES:
        got, want = result[key], exact[key]
        assert got is not None and want is not None
        # DDSketch's guarantee is on the value at the rank it picks; with 300k values the
        # neighbouring ranks differ by far less than the accuracy, so the bound holds here.
        assert abs(got - want) / want <= RELATIVE_ACCURACY * 1.05, key
    assert result["mean"] == pytest.approx(exact["mean"], rel=1e-12)
    assert result["max"] == exact["max"]


def test_merging_is_adding_everything_to_one() -> None:
    values = _lognormal(120_000)
    one = Digest(budget=50_000)
    one.add(values)
    parts = [Digest(budget=50_000) for _ in range(3)]
    for part, chunk in zip(parts, np.array_split(values, 3), strict=True):
        part.add(chunk)  # each part stays exact (40k values)
    merged = parts[0]
    for part in parts[1:]:
        merged.merge(part)
    assert merged.count == one.count == values.size
    assert merged.method == "ddsketch"
    assert merged.percentiles() == pytest.approx(one.percentiles(), rel=1e-12)


def test_zeros_and_negatives_are_kept_in_the_sketch() -> None:
    values = np.concatenate([np.zeros(600), np.full(300, -2.0), np.full(100, 5.0)])
    digest = Digest(budget=10)
    digest.add(values)
    result = digest.percentiles()
    assert result["p50"] == 0.0  # 600 of 1000 are zero
    assert result["p50"] is not None and result["p99"] == pytest.approx(5.0, rel=RELATIVE_ACCURACY)
    assert digest.count == 1000


def test_no_values_gives_none() -> None:
    assert set(Digest().percentiles().values()) == {None}

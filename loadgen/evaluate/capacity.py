"""Capacity at SLO: the highest sustained rate of one replica at which every SLO holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from loadgen.evaluate.curve import LevelResult


def _sustained(levels: Sequence[LevelResult]) -> tuple[LevelResult | None, LevelResult | None]:
    """(best passing level, first failing level above it), levels taken in increasing order.

    Only levels below the lowest failing one count: a pass above a failure is noise, not
    capacity one could sustain."""
    best: LevelResult | None = None
    for result in sorted(levels, key=lambda r: r.level):
        if not result.slo_passed:
            return best, result
        if best is None or result.throughput_rps >= best.throughput_rps:
            best = result
    return best, None


def bootstrap_ci95(samples: Sequence[float], seed: int = 0, resamples: int = 2000) -> list[float] | None:
    """Percentile-bootstrap 95% interval of the mean; None with fewer than 2 samples."""
    if len(samples) < 2:
        return None
    rng = np.random.default_rng(seed)  # seeded: the same run reports the same interval
    data = np.asarray(samples, dtype=float)
    means = rng.choice(data, size=(resamples, data.size), replace=True).mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return [float(low), float(high)]


def capacity_at_slo(levels: Sequence[LevelResult], seed: int = 0) -> dict[str, Any] | None:
    """report.json's `capacity` object, or None when no level was measured.

    `ci95` comes from the per-trial throughputs of the capacity level (`trial_rps`, trials > 1);
    `limiting_slo` is the first SLO that failed at the next level up (None if none failed).
    When no level passed, the capacity is 0 and `limiting_slo` names what failed at the lowest.
    """
    if not levels:
        return None
    best, failing = _sustained(levels)
    limiting = failing.failed_slos[0] if failing is not None and failing.failed_slos else None
    if best is None:
        return {
            "rate_rps": 0.0,
            "output_tokens_per_s": 0.0,
            "ci95": None,
            "limiting_slo": limiting,
            "level": None,
        }
    return {
        "rate_rps": best.throughput_rps,
        "output_tokens_per_s": best.output_tokens_per_s,
        "ci95": bootstrap_ci95(best.trial_rps, seed),
        "limiting_slo": limiting,
        "level": best.level,
    }

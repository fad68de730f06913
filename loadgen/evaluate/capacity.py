"""Capacity at SLO: the highest sustained rate of one replica at which every SLO holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from loadgen.evaluate.curve import LevelResult
from loadgen.fmt import format_number


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
    `limiting_slo` is the first SLO that failed at the next level up (None if none failed);
    `sessions_per_s`: the capacity level's achieved session rate (None without sessions).
    When no level passed, the capacity is 0 and `limiting_slo` names what failed at the lowest.
    """
    if not levels:
        return None
    sessions = any(level.sessions_per_s is not None for level in levels)
    best, failing = _sustained(levels)
    limiting = failing.failed_slos[0] if failing is not None and failing.failed_slos else None
    if best is None:
        return {
            "rate_rps": 0.0,
            "output_tokens_per_s": 0.0,
            "ci95": None,
            "limiting_slo": limiting,
            "level": None,
            "sessions_per_s": 0.0 if sessions else None,
        }
    return {
        "rate_rps": best.throughput_rps,
        "output_tokens_per_s": best.output_tokens_per_s,
        "ci95": bootstrap_ci95(best.trial_rps, seed),
        "limiting_slo": limiting,
        "level": best.level,
        # With sessions the levels are session arrival rates: capacity in sessions/s too
        "sessions_per_s": best.sessions_per_s,
    }


def capacity_words(capacity: Mapping[str, Any]) -> str:
    """The capacity in words, e.g. "7.4 req/s", or "2.5 sessions/s (7.4 req/s)" with sessions."""
    rate = f"{format_number(float(capacity.get('rate_rps') or 0.0))} req/s"
    sessions = capacity.get("sessions_per_s")
    return rate if sessions is None else f"{format_number(float(sessions))} sessions/s ({rate})"


def rate_unit(sessions: bool) -> str:
    """What a rate level counts: sessions/s when its arrivals are sessions, else req/s."""
    return "sessions/s" if sessions else "req/s"

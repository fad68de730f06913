"""Capacity at SLO: the highest sustained rate of one replica at which every SLO holds.

Also the closed-form capacity of the simulated server, which end-to-end tests compare against.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from loadgen.evaluate.search import LevelResult


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


def simulated_service_time(ttft_s: float, itl_s: float, output_tokens: int) -> float:
    """Seconds one request holds a slot of the simulated engine: T = t + (N − 1)·i."""
    return ttft_s + max(output_tokens - 1, 0) * itl_s


def simulated_capacity(
    slots: int, ttft_s: float, itl_s: float, output_tokens: int, ttft_p95_slo_s: float | None = None
) -> tuple[float, float]:
    """(requests/s, output tokens/s) the simulated engine sustains under a TTFT-p95 SLO.

    The engine decodes up to S = `slots` requests at once; each holds its slot for
    T = t + (N − 1)·i (TTFT t, ITL i, N output tokens). With S requests always in flight and
    none waiting, TTFT stays t, so

        capacity = S / T  requests/s,   S·N / T  output tokens/s      (if SLO ≥ t)
        capacity = 0                                                   (if SLO < t: never met)

    More load only queues: in a closed loop with c > S users, Little's law gives
    e2e = c·T/S and TTFT = t + T·(c/S − 1) with throughput still S/T, so the SLO can admit more
    users but never more throughput. (Open loop with Poisson arrivals sits below S/T: queueing
    starts before full utilisation.)
    """
    if ttft_p95_slo_s is not None and ttft_p95_slo_s < ttft_s:
        return 0.0, 0.0
    rate = slots / simulated_service_time(ttft_s, itl_s, output_tokens)
    return rate, rate * output_tokens


def simulated_closed_loop(
    concurrency: float,
    slots: int,
    ttft_s: float,
    itl_s: float,
    output_tokens: int,
    ttft_p95_slo_s: float | None = None,
) -> LevelResult:
    """The simulated engine's steady state at a closed-loop concurrency (deterministic: every
    percentile equals the mean). See `simulated_capacity` for the derivation."""
    service = simulated_service_time(ttft_s, itl_s, output_tokens)
    queued = max(concurrency / slots - 1.0, 0.0) * service  # wait for a slot beyond S users
    throughput = min(concurrency, slots) / service
    ttft_ms = (ttft_s + queued) * 1000.0
    e2e_ms = (service + queued) * 1000.0
    passed = ttft_p95_slo_s is None or ttft_ms <= ttft_p95_slo_s * 1000.0 + 1e-9
    return LevelResult(
        level=concurrency,
        throughput_rps=throughput,
        output_tokens_per_s=throughput * output_tokens,
        ttft_ms={"p50": ttft_ms, "p95": ttft_ms},
        itl_ms={"p50": itl_s * 1000.0, "p95": itl_s * 1000.0},
        e2e_ms={"p50": e2e_ms, "p95": e2e_ms},
        slo_passed=passed,
        failed_slos=() if passed else ("ttft p95",),
    )

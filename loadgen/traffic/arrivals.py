"""Arrival processes: when each request of a phase is due. Pure functions, seeded, no sleeping.

A phase of `rate` r over `duration` d sends exactly n = round(r·d) requests. Random processes
draw n + 1 gaps from their distribution and scale them so the n arrivals fit the window. With
exponential gaps this is exactly a Poisson process conditioned on its count (the arrival times are
uniform order statistics), so the burstiness is Poisson's while the rate asked for is the rate
sent; gamma gaps keep their coefficient of variation the same way.
"""

from __future__ import annotations

import numpy as np

from loadgen.scenario import ConstantPhase, GammaPhase, Phase, PoissonPhase


def request_count(rate: float, duration: float) -> int:
    return round(rate * duration)


def arrival_offsets(phase: Phase, start: float, end: float, rng: np.random.Generator) -> np.ndarray:
    """Arrival times in [start, end) for `phase`, in seconds from the phase's start."""
    span = end - start
    count = request_count(phase.rate, span)
    if count == 0 or span <= 0:
        return np.empty(0)
    if isinstance(phase, ConstantPhase):
        return start + np.arange(count) * (span / count)
    if isinstance(phase, PoissonPhase):
        gaps = rng.exponential(1.0, size=count + 1)
    elif isinstance(phase, GammaPhase):
        shape = 1.0 / phase.cv**2
        gaps = rng.gamma(shape, 1.0 / shape, size=count + 1)
    else:  # pragma: no cover - the schema admits no other kind
        raise TypeError(f"no arrival process for {type(phase).__name__}")
    times: np.ndarray = np.cumsum(gaps)
    scaled: np.ndarray = start + times[:-1] * (span / times[-1])
    return scaled

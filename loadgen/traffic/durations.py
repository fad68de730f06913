"""Sampling a scenario's duration distribution (loadgen.scenario.durations): pure, seeded by
the caller's generator."""

from __future__ import annotations

import numpy as np

from kernel.units import MAX_DURATION_S
from loadgen.scenario.durations import DurationDistribution


def sample_durations(spec: DurationDistribution, count: int, rng: np.random.Generator) -> np.ndarray:
    """Seconds drawn from `spec`: at least 0 (a normal's negative draws are 0), at most a year (a
    lognormal's far tail would overflow a timer)."""
    if spec.kind == "fixed":
        values = np.full(count, spec.value, dtype=float)
    elif spec.kind == "uniform":
        values = rng.uniform(spec.min, spec.max, size=count)
    elif spec.kind == "normal":
        values = rng.normal(spec.mean, spec.std, size=count)
    else:  # lognormal with the requested mean: E[X] = exp(mu + sigma²/2)
        mu = np.log(spec.mean) - spec.sigma**2 / 2
        values = rng.lognormal(mu, spec.sigma, size=count)
    clipped: np.ndarray = np.clip(values, 0.0, MAX_DURATION_S)
    return clipped

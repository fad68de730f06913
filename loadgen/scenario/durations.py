"""A duration distribution, as a scenario writes one: fixed, uniform, normal or lognormal, in
seconds (with units: `200ms`, `2s`). Used by `workload.sessions` (think_time), and
by the slices (loadgen.features) for their own times; sampled by loadgen.scenario.distributions.sample.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from kernel.units import MAX_DURATION_S, Duration, PositiveDuration
from loadgen.scenario.distributions import Bounds, Distribution, family

__all__ = [
    "DURATIONS",
    "DurationDistribution",
    "FixedDuration",
    "LognormalDuration",
    "NormalDuration",
    "UniformDuration",
]

# Draws are clipped to 0..a year: a normal's negative draws are 0, a lognormal's far tail would
# overflow a timer.
DURATIONS = family(
    "Duration",
    __name__,
    Bounds(0.0, MAX_DURATION_S, whole=False),
    value=Duration,
    mean=PositiveDuration,
    std=Duration,
    mean_is="duration",
)
FixedDuration = DURATIONS.fixed
UniformDuration = DURATIONS.uniform
NormalDuration = DURATIONS.normal
LognormalDuration = DURATIONS.lognormal

if TYPE_CHECKING:
    DurationDistribution: TypeAlias = Distribution[float]
else:
    DurationDistribution = DURATIONS.union

"""A duration distribution, as a scenario writes one: fixed, uniform, normal or lognormal, in
seconds (with units: `200ms`, `2s`). Used by `workload.cancel` (after.time) and
`workload.sessions` (think_time); sampled by loadgen.traffic.durations.sample_durations.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from kernel.strict import StrictModel
from kernel.units import Duration, PositiveDuration

__all__ = [
    "DurationDistribution",
    "FixedDuration",
    "LognormalDuration",
    "NormalDuration",
    "UniformDuration",
]


class FixedDuration(StrictModel):
    kind: Literal["fixed"]
    value: Duration


class UniformDuration(StrictModel):
    kind: Literal["uniform"]
    min: Duration
    max: Duration

    @model_validator(mode="after")
    def _ordered(self) -> UniformDuration:
        if self.max < self.min:
            raise ValueError("max must be >= min")
        return self


class NormalDuration(StrictModel):
    kind: Literal["normal"]
    mean: PositiveDuration
    std: Duration


class LognormalDuration(StrictModel):
    """`mean` is the mean duration; `sigma` the spread of its logarithm."""

    kind: Literal["lognormal"]
    mean: PositiveDuration
    sigma: float = Field(ge=0, le=10)


DurationDistribution = Annotated[
    FixedDuration | UniformDuration | NormalDuration | LognormalDuration,
    Field(discriminator="kind"),
]

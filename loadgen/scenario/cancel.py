"""`workload.cancel`: a share of requests the client cancels mid-answer, as users close a tab.

```yaml
workload:
  cancel:
    share: 10%                                      # of the class's requests, drawn per request
    after: {tokens: {kind: uniform, min: 4, max: 32}}  # or {time: {kind: fixed, value: 500ms}}
```

A cancelled request's stream is closed (its connection dropped) `after.time` from its send, or
once `after.tokens` content chunks have arrived; a request whose answer ends first is recorded as
it ended. Which requests cancel, and when, is drawn per request from the plan's own seeded stream
(loadgen.traffic.plan_cancel). The distributions are written as the workload's lengths
(fixed, uniform, normal, lognormal): in seconds (with units, `200ms`) for `time`, rounded to a
whole number ≥ 1 for `tokens`; a normal time below 0 cancels at the send.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from kernel.strict import StrictModel
from kernel.units import Fraction
from loadgen.scenario.durations import DurationDistribution

# As workload.MAX_TOKENS (not imported: workload.py imports this module).
MAX_CANCEL_TOKENS = 10_000_000

# ---- after a time from the send ------------------------------------------------------------------

# The shared duration distribution (loadgen.scenario.durations), under the name this section gave it.
CancelTime = DurationDistribution

# ---- after a number of tokens ------------------------------------------------------------------


class FixedCancelTokens(StrictModel):
    kind: Literal["fixed"]
    value: int = Field(ge=1, le=MAX_CANCEL_TOKENS)


class UniformCancelTokens(StrictModel):
    kind: Literal["uniform"]
    min: int = Field(ge=1, le=MAX_CANCEL_TOKENS)
    max: int = Field(ge=1, le=MAX_CANCEL_TOKENS)

    @model_validator(mode="after")
    def _ordered(self) -> UniformCancelTokens:
        if self.max < self.min:
            raise ValueError("max must be >= min")
        return self


class NormalCancelTokens(StrictModel):
    kind: Literal["normal"]
    mean: float = Field(gt=0, le=MAX_CANCEL_TOKENS)
    std: float = Field(ge=0, le=MAX_CANCEL_TOKENS)


class LognormalCancelTokens(StrictModel):
    """`mean` is the mean token count; `sigma` the spread of its logarithm."""

    kind: Literal["lognormal"]
    mean: float = Field(gt=0, le=MAX_CANCEL_TOKENS)
    sigma: float = Field(ge=0, le=10)


CancelTokens = Annotated[
    FixedCancelTokens | UniformCancelTokens | NormalCancelTokens | LognormalCancelTokens,
    Field(discriminator="kind"),
]

# ---- the section ---------------------------------------------------------------------------------


class CancelAfter(StrictModel):
    """When a cancelled request is closed: one of `time` (from its send) or `tokens` (received)."""

    time: CancelTime | None = None
    tokens: CancelTokens | None = None

    @model_validator(mode="after")
    def _one_of(self) -> CancelAfter:
        if (self.time is None) == (self.tokens is None):
            raise ValueError(
                "give one of time: (a duration distribution) or tokens: (a token count distribution), "
                "e.g. {tokens: {kind: fixed, value: 8}} or {time: {kind: fixed, value: 500ms}}"
            )
        return self


class CancelSpec(StrictModel):
    share: Fraction  # of the class's requests, each drawn with this probability
    after: CancelAfter

    @field_validator("share")
    @classmethod
    def _some(cls, share: float) -> float:
        if share <= 0:
            raise ValueError("share must be more than 0% (leave cancel: out for no cancellations)")
        return share

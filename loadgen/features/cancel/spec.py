"""`workload.cancel`: a share of requests the client cancels mid-answer, as users close a tab.

```yaml
workload:
  cancel:
    share: 10%                                      # of the class's requests, drawn per request
    after: {tokens: {kind: uniform, min: 4, max: 32}}  # or {time: {kind: fixed, value: 500ms}}
```

A cancelled request's stream is closed (its connection dropped) `after.time` from its send, or
once `after.tokens` content chunks have arrived; a request whose answer ends first is recorded as
it ended. Which requests cancel, and when, is drawn per request from the slice's own seeded
streams (loadgen.features.cancel.draws); the core stops the request there (a planned Stop). The
distributions are written as the workload's lengths (fixed, uniform, normal, lognormal): in seconds
(with units, `200ms`) for `time`, rounded to a whole number ≥ 1 for `tokens`; a normal time below 0
cancels at the send.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from pydantic import field_validator, model_validator

from kernel.strict import StrictModel
from kernel.units import Fraction
from loadgen.inputs.files import field_error
from loadgen.scenario.distributions import Distribution, counts
from loadgen.scenario.durations import DurationDistribution
from loadgen.scenario.slice_model import SliceSpec

if TYPE_CHECKING:
    from loadgen.scenario.workload import WorkloadCore

# As workload.MAX_TOKENS (not imported: the workload model is built with this one).
MAX_CANCEL_TOKENS = 10_000_000

# ---- after a time from the send ------------------------------------------------------------------

# The shared duration distribution (loadgen.scenario.durations), under the name this section gave it.
CancelTime = DurationDistribution

# ---- after a number of tokens ------------------------------------------------------------------


CANCEL_TOKENS = counts("CancelTokens", __name__, 1, MAX_CANCEL_TOKENS, "token count")
FixedCancelTokens = CANCEL_TOKENS.fixed
UniformCancelTokens = CANCEL_TOKENS.uniform
NormalCancelTokens = CANCEL_TOKENS.normal
LognormalCancelTokens = CANCEL_TOKENS.lognormal

if TYPE_CHECKING:
    CancelTokens: TypeAlias = Distribution[int]
else:
    CancelTokens = CANCEL_TOKENS.union

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


class CancelSpec(SliceSpec):
    share: Fraction  # of the class's requests, each drawn with this probability
    after: CancelAfter

    @field_validator("share")
    @classmethod
    def _some(cls, share: float) -> float:
        if share <= 0:
            raise ValueError("share must be more than 0% (leave cancel: out for no cancellations)")
        return share

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        """Counting tokens needs them streamed: a whole answer comes at once."""
        if isinstance(spec, CancelSpec) and spec.after.tokens is not None and not workload.stream:
            message = "cancelling after tokens needs stream: true (give after: {time: ...} instead)"
            raise field_error(("cancel", "after", "tokens"), message, None)

"""Token-count distributions: a request's prompt, output and reasoning lengths."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from kernel.strict import StrictModel

# Longer than any model's context (the longest are ~10 M tokens): beyond it a length is a typo,
# and the schedule would build prompts of gigabytes.
MAX_TOKENS = 10_000_000


class FixedLength(StrictModel):
    kind: Literal["fixed"]
    value: int = Field(ge=1, le=MAX_TOKENS)


class UniformLength(StrictModel):
    kind: Literal["uniform"]
    min: int = Field(ge=1, le=MAX_TOKENS)
    max: int = Field(ge=1, le=MAX_TOKENS)

    @model_validator(mode="after")
    def _ordered(self) -> UniformLength:
        if self.max < self.min:
            raise ValueError("max must be >= min")
        return self


class NormalLength(StrictModel):
    kind: Literal["normal"]
    mean: float = Field(gt=0, le=MAX_TOKENS)
    std: float = Field(ge=0, le=MAX_TOKENS)


class LognormalLength(StrictModel):
    """`mean` is the mean token count; `sigma` the spread of its logarithm."""

    kind: Literal["lognormal"]
    mean: float = Field(gt=0, le=MAX_TOKENS)
    sigma: float = Field(ge=0, le=10)  # exp(10 σ) already spans the whole range; more overflows


Length = Annotated[FixedLength | UniformLength | NormalLength | LognormalLength, Field(discriminator="kind")]

"""Token-count distributions: a request's prompt and output lengths, and any token count a slice draws."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from loadgen.scenario.distributions import Distribution, counts

# Longer than any model's context (the longest are ~10 M tokens): beyond it a length is a typo,
# and the schedule would build prompts of gigabytes.
MAX_TOKENS = 10_000_000

LENGTHS = counts("Length", __name__, 1, MAX_TOKENS, "token count")
FixedLength = LENGTHS.fixed
UniformLength = LENGTHS.uniform
NormalLength = LENGTHS.normal
LognormalLength = LENGTHS.lognormal

if TYPE_CHECKING:
    Length: TypeAlias = Distribution[int]
else:
    Length = LENGTHS.union

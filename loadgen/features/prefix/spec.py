"""`workload.prefix`: a share of requests starts with one of a few shared prefixes (a system
prompt, a document), which a server's prefix cache can serve without computing them again.

```yaml
workload:
  prompt_tokens: {kind: fixed, value: 64}   # each request's own part, after its prefix
  prefix:
    tokens: 512          # every prefix is exactly this many words (≈ tokens)
    groups: 4            # this many distinct prefixes
    share: 80%           # of the class's requests, drawn per request
    weights: [4, 2, 1, 1]  # optional: how often each group is picked (default: uniformly)
```

- There are `groups` distinct prefix texts of exactly `tokens` words each (the slice's lead:
  a word of the tool's prompt vocabulary is about one token, so n words ≈ n tokens). Two groups
  differ within their first four words, so they share no cache block of 4 tokens or more (vLLM's
  and the simulated server's are 16); no prefix begins as any request's own text does, so an own
  part never hits a prefix's blocks.
- Each request starts with a prefix with probability `share`; its group is drawn uniformly, or by
  `weights` (relative, one per group). Both draws come from the plan's own seeded stream
  (the slice's draws): a scenario without `prefix:` plans exactly as before.
- The prefix is put before the request's own prompt. `prompt_tokens` stays the request's own part
  (the length distribution above); the server's `usage.prompt_tokens` counts both. The own part
  begins with the request's id written in words, so it is unique in the run and never hits a cache
  by accident.
- With several workload classes, each class has its own prefixes (a hash of the class name is
  part of the text): two classes do not share one. A class with a `dataset` cannot have one (its
  prompts are sent as given); a trace phase's rows have none (a Mooncake trace brings its own).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, field_validator, model_validator

from kernel.units import Fraction
from loadgen.inputs.files import field_error
from loadgen.scenario.slice_model import SliceSpec

if TYPE_CHECKING:
    from loadgen.scenario.workload import WorkloadCore

# As workload.MAX_TOKENS.
MAX_PREFIX_TOKENS = 10_000_000
MAX_GROUPS = 100_000


class PrefixSpec(SliceSpec):
    tokens: int = Field(ge=1, le=MAX_PREFIX_TOKENS)  # words in each prefix
    groups: int = Field(default=1, ge=1, le=MAX_GROUPS)  # distinct prefixes
    share: Fraction = 1.0  # of the class's requests, each drawn with this probability
    weights: list[float] | None = None  # one per group, relative; None: uniformly

    @field_validator("share")
    @classmethod
    def _some(cls, share: float) -> float:
        if share <= 0:
            raise ValueError("share must be more than 0% (leave prefix: out for no shared prefixes)")
        return share

    @model_validator(mode="after")
    def _one_weight_per_group(self) -> PrefixSpec:
        if self.weights is None:
            return self
        if len(self.weights) != self.groups:
            raise ValueError(f"give one weight per group: {self.groups} groups, {len(self.weights)} weights")
        if any(not 0 <= weight <= 1e9 for weight in self.weights) or sum(self.weights) <= 0:
            raise ValueError("weights must be between 0 and 1e9, not all 0")
        return self

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        """A prefix goes before synthetic prompts: a dataset's are sent as given."""
        if spec is not None and workload.dataset is not None:
            message = "prefix: goes before synthetic prompts (prompt_tokens:); a dataset's are sent as given"
            raise field_error("prefix", message, None)

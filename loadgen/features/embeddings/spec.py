"""`workload.embeddings`: how an embeddings request is made (`api: embeddings`).

```yaml
workload:
  api: embeddings
  prompt_tokens: {kind: fixed, value: 64}    # the length of each input (words ≈ tokens)
  embeddings:
    inputs: {kind: uniform, min: 1, max: 32} # inputs per request (a batch), whole numbers ≥ 1
    encoding_format: float                   # or base64
    # dimensions: 256                        # vectors cut to this width (models that allow it)
```

Semantics (carried out by the embeddings slice, loadgen.features.embeddings):

- Each request's input count is drawn from `inputs` (rounded, clipped to 1..MAX_INPUTS) from the
  slice's own seeded streams: the rest of the plan is as without the key.
- A request's inputs are its prompt, then as many more texts of the same length (its planned
  `prompt_tokens`), each unique to the request and its place in the batch.
- Without the key, an embeddings request sends one input, vectors as floats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

from pydantic import Field

from loadgen.inputs.files import field_error
from loadgen.scenario.distributions import Distribution, counts
from loadgen.scenario.slice_model import SliceSpec

MAX_INPUTS = 2048  # per request: OpenAI's limit on an embeddings batch

INPUTS = counts("Inputs", __name__, 1, MAX_INPUTS, "input count")
FixedInputs = INPUTS.fixed
UniformInputs = INPUTS.uniform
NormalInputs = INPUTS.normal
LognormalInputs = INPUTS.lognormal

if TYPE_CHECKING:
    from loadgen.scenario.workload import WorkloadCore

    InputCount: TypeAlias = Distribution[int]
else:
    InputCount = INPUTS.union


class EmbeddingsSpec(SliceSpec):
    inputs: InputCount = FixedInputs(kind="fixed", value=1)
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1, le=65_536)

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        if spec is None:
            return
        if workload.api != "embeddings":
            message = f"embeddings: needs api: embeddings (the workload's is {workload.api})"
            raise field_error("embeddings", message, None)
        if workload.dataset is not None:
            message = "embeddings: draws synthetic inputs; with a dataset, each request embeds its line"
            raise field_error("embeddings", message, None)

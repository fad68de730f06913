"""`workload.tensors`: what a KServe v2 request sends (`api: kserve_v2`).

```yaml
workload:
  api: kserve_v2
  tensors:
    batch: {kind: fixed, value: 8}        # items (inferences) per request, whole numbers ≥ 1
    data: {kind: random, min: 0, max: 1}  # or {kind: zeros}, or {kind: npy, folder: inputs/}
    # binary: true                        # inputs as raw bytes (the binary tensor data extension)
    # inputs:                             # default: read from GET /v2/models/{model}
    #   - {name: input, datatype: FP32, shape: [-1, 3, 32, 32]}
    # outputs:                            # default: the metadata's; [] checks none
    #   - {name: logits, datatype: FP32, shape: [-1, 10]}
```

Semantics (carried out by the tensors slice, loadgen.features.tensors):

- Each request's batch is drawn from `batch` (rounded, clipped to 1..MAX_BATCH) from the slice's
  own seeded streams: the rest of the plan is as without the key. Without the key, a request
  sends a batch of one, of the metadata's inputs, random in [0, 1).
- `inputs` and `outputs` unset are read from the model's metadata once the server is up, before
  the first request; a model whose metadata cannot be read stops the run with the reason. An
  input's shape leads with -1 (the batch); any other -1 must be given here.
- Data is made before the load (no request spends CPU on it): a pool of items per input, seeded
  random within [min, max] (whole numbers for integer datatypes), zeros, or the items of
  `<input name>.npy` in `folder` (an array of the item's shape, or of items: its first dimension).
  A request takes `batch` consecutive items of the pool, from a place its id sets.
- An answer must hold every output checked, with the batch as its first dimension and its other
  dimensions the metadata's: else the request fails as `wrong_shape`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, TypeAlias

from pydantic import Field, ValidationInfo, field_validator, model_validator

from kernel.strict import StrictModel
from loadgen.inputs.files import field_error, input_folder
from loadgen.scenario.distributions import Distribution, counts
from loadgen.scenario.slice_model import SliceSpec
from servers.engines.tensors import DATATYPE_NAMES

if TYPE_CHECKING:
    from loadgen.scenario.workload import WorkloadCore

MAX_BATCH = 4096  # per request
# The most one request's tensors may weigh (as raw bytes): a bigger batch is refused before the
# run (a server would refuse it, or spend seconds parsing it, and the client its memory).
MAX_REQUEST_BYTES = 64 * 1024 * 1024

BATCH = counts("Batch", __name__, 1, MAX_BATCH, "batch size")
FixedBatch = BATCH.fixed
UniformBatch = BATCH.uniform
NormalBatch = BATCH.normal
LognormalBatch = BATCH.lognormal

if TYPE_CHECKING:
    BatchSize: TypeAlias = Distribution[int]
else:
    BatchSize = BATCH.union

Datatype = Literal[
    "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64"
]
if set(Datatype.__args__) != set(DATATYPE_NAMES):  # type: ignore[attr-defined]
    raise RuntimeError("the scenario's tensor datatypes and the servers' differ")


class TensorShape(StrictModel):
    """An input or output: v2's name, datatype and shape (-1: any size; the first, the batch)."""

    name: str = Field(min_length=1)
    datatype: Datatype
    shape: list[Annotated[int, Field(ge=-1)]] = Field(min_length=1, max_length=16)

    @field_validator("shape")
    @classmethod
    def _batch_first(cls, shape: list[int]) -> list[int]:
        if shape[0] != -1:
            raise ValueError(f"shape {shape} must lead with -1 (the batch)")
        if 0 in shape:
            raise ValueError(f"shape {shape} has a dimension of 0")
        return shape

    @property
    def item_shape(self) -> tuple[int, ...]:
        return tuple(self.shape[1:])

    @property
    def item_bytes(self) -> int:
        return math.prod(self.shape[1:]) * _ITEMSIZE[self.datatype]


# Bytes an element of each datatype takes, raw (as the binary extension sends it).
_ITEMSIZE = {"BOOL": 1, "UINT8": 1, "INT8": 1, "UINT16": 2, "INT16": 2, "FP16": 2}
_ITEMSIZE |= {"UINT32": 4, "INT32": 4, "FP32": 4, "UINT64": 8, "INT64": 8, "FP64": 8}


class RandomData(StrictModel):
    kind: Literal["random"]
    min: float = 0.0
    max: float = 1.0

    @model_validator(mode="after")
    def _ordered(self) -> RandomData:
        if self.max < self.min:
            raise ValueError(f"max ({self.max:g}) is below min ({self.min:g})")
        return self


class ZerosData(StrictModel):
    kind: Literal["zeros"]


class NpyData(StrictModel):
    kind: Literal["npy"]
    folder: str  # relative: from the scenario's folder

    @model_validator(mode="after")
    def _a_folder(self, info: ValidationInfo) -> NpyData:
        found = input_folder(self.folder, info, ".npy files", lambda path: any(path.glob("*.npy")))
        object.__setattr__(self, "folder", found)
        return self

    def file(self, name: str) -> Path:
        return Path(self.folder) / f"{name}.npy"


TensorData: TypeAlias = Annotated[RandomData | ZerosData | NpyData, Field(discriminator="kind")]


class TensorsSpec(SliceSpec):
    batch: BatchSize = FixedBatch(kind="fixed", value=1)
    data: TensorData = RandomData(kind="random")
    binary: bool = False
    inputs: list[TensorShape] | None = Field(default=None, min_length=1)
    outputs: list[TensorShape] | None = None

    @model_validator(mode="after")
    def _unique_names(self) -> TensorsSpec:
        for key in ("inputs", "outputs"):
            names = [each.name for each in getattr(self, key) or ()]
            if len(names) != len(set(names)):
                raise ValueError(f"{key}: a name given twice ({names})")
        if self.inputs is not None:
            self.check_size()
        return self

    def check_size(self) -> None:
        """ValueError where the largest batch's inputs weigh more than MAX_REQUEST_BYTES, or an
        input's item has a size left open (-1 after the batch)."""
        for each in self.inputs or ():
            if -1 in each.item_shape:
                raise ValueError(
                    f"input {each.name} has shape {each.shape}: give workload.tensors.inputs with "
                    "its every dimension after the batch"
                )
        largest = largest_batch(self.batch)
        weight = largest * sum(each.item_bytes for each in self.inputs or ())
        if weight > MAX_REQUEST_BYTES:
            raise ValueError(
                f"batch: a batch of {largest} weighs {weight / 2**20:.0f} MiB of tensors, over the "
                f"{MAX_REQUEST_BYTES // 2**20} MiB a request may carry: ask for smaller batches"
            )

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        if spec is not None and workload.api != "kserve_v2":
            message = f"tensors: needs api: kserve_v2 (the workload's is {workload.api})"
            raise field_error("tensors", message, None)


def largest_batch(batch: Distribution[int]) -> int:
    """The largest batch a request may draw: a fixed or uniform one's bound; a normal's or a
    lognormal's six spreads above its mean (a draw beyond is rarer than one in 10⁸)."""
    if batch.kind == "fixed":
        return int(batch.value)
    if batch.kind == "uniform":
        return int(batch.max)
    top = batch.mean + 6 * batch.std if batch.kind == "normal" else batch.mean * math.exp(6 * batch.sigma)
    return min(MAX_BATCH, math.ceil(top))

"""A classic model's tensors as an engine serves them (issue 42: the Open Inference Protocol,
KServe v2): what the model takes and gives (its metadata), and the batch it is asked to run.

An engine with a classic model (an image classifier, a text encoder, a tabular model) sets
`Engine.tensor_model` and implements `Engine.infer`; the v2 front (servers/http) reads the
metadata for `GET /v2/models/{model}`, checks each request against it (names, datatypes,
shapes: a 400 naming what is wrong), and hands `infer` the request's inputs as arrays whose
first dimension is the batch. Datatypes are v2's names (`FP32`, `INT64`, ...), mapped to numpy's
by DATATYPES.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

# KServe v2's tensor datatypes (BYTES, strings, is left out: no bundled model takes them).
DATATYPES: Final[dict[str, np.dtype[np.generic]]] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
}


class TensorsUnsupported(Exception):
    """This engine's model takes no tensors (an LLM): a 400 to the client, with this message."""


@dataclass(frozen=True)
class TensorSpec:
    """One input or output: its name, v2 datatype and shape, -1 where any size goes (the
    first dimension, the batch, is always -1: v2's metadata for a model that batches)."""

    name: str
    datatype: str
    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.datatype not in DATATYPES:
            raise ValueError(
                f"tensor {self.name}: datatype {self.datatype} is not one of {sorted(DATATYPES)}"
            )
        if not self.shape or self.shape[0] != -1:
            raise ValueError(f"tensor {self.name}: shape {list(self.shape)} must lead with -1 (the batch)")

    @property
    def dtype(self) -> np.dtype[np.generic]:
        return DATATYPES[self.datatype]


@dataclass(frozen=True)
class TensorModel:
    """What a classic model takes and gives, as `GET /v2/models/{model}` tells it: `platform`
    as Triton names it (`onnxruntime_onnx`, `pytorch_libtorch`, `simulated`), `max_batch_size`
    the most items one call of `Engine.infer` runs (the front refuses a request of more)."""

    name: str
    platform: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    max_batch_size: int

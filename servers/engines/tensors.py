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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np

# KServe v2's tensor datatypes and numpy's name for each (BYTES, strings, is left out: no bundled
# model takes them). DATATYPES, the numpy dtypes, is made on first use (the module's __getattr__):
# a server whose engine has no classic model starts without numpy.
DATATYPE_NAMES: Final[dict[str, str]] = {
    "BOOL": "bool",
    "UINT8": "uint8",
    "UINT16": "uint16",
    "UINT32": "uint32",
    "UINT64": "uint64",
    "INT8": "int8",
    "INT16": "int16",
    "INT32": "int32",
    "INT64": "int64",
    "FP16": "float16",
    "FP32": "float32",
    "FP64": "float64",
}


def __getattr__(name: str) -> dict[str, np.dtype[np.generic]]:
    if name != "DATATYPES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import numpy

    datatypes = {datatype: numpy.dtype(numpy_name) for datatype, numpy_name in DATATYPE_NAMES.items()}
    globals()["DATATYPES"] = datatypes
    return datatypes


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
        if self.datatype not in DATATYPE_NAMES:
            raise ValueError(
                f"tensor {self.name}: datatype {self.datatype} is not one of {sorted(DATATYPE_NAMES)}"
            )
        if not self.shape or self.shape[0] != -1:
            raise ValueError(f"tensor {self.name}: shape {list(self.shape)} must lead with -1 (the batch)")

    @classmethod
    def of_json(cls, item: Any) -> TensorSpec:
        """A spec as v2's metadata and the metadata files write it: {name, datatype, shape};
        KeyError, TypeError or ValueError where it is not one."""
        return cls(str(item["name"]), str(item["datatype"]), tuple(int(d) for d in item["shape"]))

    def fits(self, shape: Sequence[int]) -> bool:
        """Whether a tensor of `shape` is one this spec takes: its rank, and each dimension the
        spec's own where the spec fixes one (-1: any size)."""
        return len(shape) == len(self.shape) and all(
            (want == -1 and got >= 0) or got == want for got, want in zip(shape, self.shape, strict=True)
        )

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}

    @property
    def dtype(self) -> np.dtype[np.generic]:
        import numpy

        return numpy.dtype(DATATYPE_NAMES[self.datatype])


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

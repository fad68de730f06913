"""A classic ONNX model on ONNX Runtime (CPUExecutionProvider), behind the dynamic batcher.

The model's input and output names, datatypes and shapes are read from the session itself
(`get_inputs()` / `get_outputs()`), so a user's own `.onnx` file is served with its own
metadata. Its first dimension must be the batch, left dynamic at export; a dimension fixed in
the file is kept in the metadata (and checked on every request), one left symbolic is -1.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
import onnxruntime as ort

from servers.engines.classic import Arrays, model_file, warm_up
from servers.engines.tensors import TensorSpec

MODEL_FILE = "model.onnx"
PLATFORM = "onnxruntime_onnx"

GraphOptimization = Literal["disabled", "basic", "extended", "all"]
GRAPH_OPTIMIZATION: Final[dict[str, ort.GraphOptimizationLevel]] = {
    "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}

# ONNX Runtime's type strings → v2 datatypes (the ones tensors.DATATYPES maps to numpy).
ORT_TYPES: Final[dict[str, str]] = {
    "tensor(bool)": "BOOL",
    "tensor(uint8)": "UINT8",
    "tensor(uint16)": "UINT16",
    "tensor(uint32)": "UINT32",
    "tensor(uint64)": "UINT64",
    "tensor(int8)": "INT8",
    "tensor(int16)": "INT16",
    "tensor(int32)": "INT32",
    "tensor(int64)": "INT64",
    "tensor(float16)": "FP16",
    "tensor(float)": "FP32",
    "tensor(double)": "FP64",
}


def _spec(arg: Any, kind: str, path: Path) -> TensorSpec:
    datatype = ORT_TYPES.get(arg.type)
    if datatype is None:
        raise ValueError(f"{path}: {kind} {arg.name} is a {arg.type}, which is not served here")
    dims = tuple(d if isinstance(d, int) and d >= 0 else -1 for d in arg.shape)
    if not dims or dims[0] != -1:
        raise ValueError(
            f"{path}: {kind} {arg.name} has shape {list(arg.shape)}: its first dimension must be a "
            "dynamic batch (export with a dynamic batch axis)"
        )
    return TensorSpec(arg.name, datatype, dims)


class OrtRunner:
    platform = PLATFORM

    def __init__(
        self, path: Path, *, threads: int = 1, graph_optimization: GraphOptimization = "all"
    ) -> None:
        options = ort.SessionOptions()
        # One thread by default: in a benchmark the load generator needs the other core.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = GRAPH_OPTIMIZATION[graph_optimization]
        self.path = model_file(path, MODEL_FILE)
        self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self.inputs = tuple(_spec(i, "input", self.path) for i in self.session.get_inputs())
        self.outputs = tuple(_spec(o, "output", self.path) for o in self.session.get_outputs())
        self._output_names = [spec.name for spec in self.outputs]
        warm_up(self)

    def run(self, inputs: Mapping[str, np.ndarray]) -> Arrays:
        results = self.session.run(self._output_names, dict(inputs))
        return {name: np.asarray(out) for name, out in zip(self._output_names, results, strict=True)}

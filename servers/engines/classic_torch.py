"""A classic TorchScript model on PyTorch (CPU), behind the dynamic batcher.

Loaded with `torch.jit.load`: the bundled classifier's `model.pt` or a user's own TorchScript
file. TorchScript records no input names, datatypes or shapes, so they come from a metadata
file (servers/engines/tensor_io.py's format): the one given, else `config.json` beside the
model (the bundled classifier's). The model is called with the inputs as positional arguments
in the metadata's order; it may return one tensor, a tuple or list of them (in the order of
the metadata's outputs), or a dict by output name. The warm-up call at load checks that.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from servers.engines.classic import Arrays, model_file, warm_up
from servers.engines.tensor_io import read_io_file

MODEL_FILE = "model.pt"
METADATA_FILE = "config.json"
PLATFORM = "pytorch_libtorch"


class TorchScriptRunner:
    platform = PLATFORM

    def __init__(self, path: Path, *, metadata: Path | None = None, threads: int = 1) -> None:
        self.path = model_file(path, MODEL_FILE)
        self.inputs, self.outputs = read_io_file(metadata or self.path.parent / METADATA_FILE)
        # Process-wide; one thread by default so the load generator keeps the other core.
        torch.set_num_threads(threads)
        self.module = torch.jit.load(str(self.path), map_location="cpu")  # type: ignore[no-untyped-call]
        self.module.eval()
        self._output_names = [spec.name for spec in self.outputs]
        warm_up(self)

    @torch.inference_mode()
    def run(self, inputs: Mapping[str, np.ndarray]) -> Arrays:
        args = [torch.from_numpy(np.ascontiguousarray(inputs[spec.name])) for spec in self.inputs]
        return self._by_name(self.module(*args))

    def _by_name(self, result: Any) -> Arrays:
        if isinstance(result, dict):
            return {str(name): tensor.numpy() for name, tensor in result.items()}
        tensors = [result] if isinstance(result, torch.Tensor) else list(result)
        if len(tensors) != len(self._output_names):
            raise ValueError(
                f"the model returned {len(tensors)} tensors; its metadata names {self._output_names}"
            )
        return {name: tensor.numpy() for name, tensor in zip(self._output_names, tensors, strict=True)}

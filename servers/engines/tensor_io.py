"""A classic model's tensors on the way in: checking a request against the model's metadata,
and the metadata file (`config.json`) that tells what a TorchScript file cannot.

A TorchScript file records no input names, datatypes or shapes, so a model served with PyTorch
carries them in a JSON file beside it (the bundled classifier's `config.json`, or the user's):
`{"inputs": [{"name", "datatype", "shape"}], "outputs": [...]}`, shapes with -1 for the batch.
An ONNX file records them itself (servers/engines/classic_ort.py reads them from the session).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from servers.engines.tensors import DATATYPES, TensorSpec

# v2's name of each numpy dtype, for messages and for checking outputs.
V2_NAMES: dict[np.dtype[np.generic], str] = {dtype: name for name, dtype in DATATYPES.items()}


class BadTensors(ValueError):
    """A request's tensors do not fit the model (a 400 to the client, with this message)."""


def datatype_name(dtype: np.dtype[Any]) -> str:
    return V2_NAMES.get(np.dtype(dtype), str(dtype))


def batch_rows(specs: Sequence[TensorSpec], inputs: Mapping[str, np.ndarray], max_batch_size: int) -> int:
    """The batch (rows) of a request whose tensors fit `specs`; BadTensors naming what is wrong:
    a missing or unknown name, another datatype, rank or fixed dimension, inputs of different
    batches, an empty batch or one over `max_batch_size`."""
    names = [spec.name for spec in specs]
    missing = [name for name in names if name not in inputs]
    unknown = sorted(set(inputs) - set(names))
    if missing or unknown:
        parts = [f"missing input {', '.join(missing)}"] if missing else []
        parts += [f"unknown input {', '.join(unknown)}"] if unknown else []
        raise BadTensors(f"{'; '.join(parts)} (the model takes {', '.join(names)})")
    rows: set[int] = set()
    for spec in specs:
        array = inputs[spec.name]
        if array.dtype != spec.dtype:
            raise BadTensors(
                f"input {spec.name}: datatype {datatype_name(array.dtype)}, the model takes {spec.datatype}"
            )
        if not spec.fits(array.shape):
            raise BadTensors(
                f"input {spec.name}: shape {list(array.shape)}, the model takes {list(spec.shape)}"
            )
        rows.add(int(array.shape[0]))
    if len(rows) != 1:
        raise BadTensors(f"the inputs hold different batches: {sorted(rows)} rows")
    (count,) = rows
    if not 1 <= count <= max_batch_size:
        raise BadTensors(f"a batch of {count}: this model runs 1 to {max_batch_size} at a time")
    return count


def specs_json(specs: Sequence[TensorSpec]) -> list[dict[str, Any]]:
    return [spec.to_json() for spec in specs]


def read_io_file(path: Path) -> tuple[tuple[TensorSpec, ...], tuple[TensorSpec, ...]]:
    """The inputs and outputs a metadata file declares; ValueError (naming the file) if it has
    none, or one that is not a tensor spec."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read the model's metadata {path}: {exc}") from None
    try:
        inputs = tuple(TensorSpec.of_json(item) for item in data["inputs"])
        outputs = tuple(TensorSpec.of_json(item) for item in data["outputs"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{path}: not a model's metadata (inputs and outputs: name, datatype, shape): {exc}"
        ) from None
    if not inputs or not outputs:
        raise ValueError(f"{path}: the model's metadata names no inputs or no outputs")
    return inputs, outputs

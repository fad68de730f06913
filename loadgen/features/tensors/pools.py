"""The items a KServe v2 request's inputs are cut from, made once before the load: per input, a
pool of items each already encoded both ways (its JSON elements, its raw bytes), so a request
joins bytes and never encodes a number (loadgen.wire.kserve_v2 puts them in its body).

Random data is seeded (the same run, the same tensors); a pool holds at most POOL_ITEMS items and
POOL_BYTES of them; `npy` data is the file's items, as many as it has.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import orjson

from loadgen.features.tensors.spec import NpyData, RandomData, TensorShape, TensorsSpec
from servers.engines.tensors import DATATYPE_NAMES

POOL_ITEMS = 64
POOL_BYTES = 16 * 1024 * 1024  # per input: a big item's pool is fewer items
# Mixed into the seed of the data streams ("data"), one stream an input (by its place).
DATA_STREAM = 0x64617461


@dataclass(frozen=True)
class Pool:
    """One input's items: `json[k]` the k-th item's elements as JSON, comma-separated (no
    brackets: a batch's items join into one flat array); `raw[k]` its bytes, little-endian."""

    input: TensorShape
    json: tuple[bytes, ...]
    raw: tuple[bytes, ...]

    def json_batch(self, start: int, batch: int) -> bytes:
        items = self.json
        return b"[" + b",".join(items[(start + k) % len(items)] for k in range(batch)) + b"]"

    def raw_batch(self, start: int, batch: int) -> bytes:
        items = self.raw
        return b"".join(items[(start + k) % len(items)] for k in range(batch))


def make_pools(spec: TensorsSpec) -> tuple[Pool, ...]:
    """The pools of `spec`'s inputs (given or learned); ValueError naming the input whose data
    won't do (an .npy file missing, of another shape, or not castable to its datatype)."""
    if spec.inputs is None:
        raise ValueError("workload.tensors.inputs is not known: the model's metadata was not read")
    return tuple(_pool(each, _items(spec, each, place)) for place, each in enumerate(spec.inputs))


def _items(spec: TensorsSpec, tensor: TensorShape, place: int) -> np.ndarray:
    dtype = np.dtype(DATATYPE_NAMES[tensor.datatype]).newbyteorder("<")
    data = spec.data
    if isinstance(data, NpyData):
        return _npy_items(data, tensor, dtype)
    count = max(1, min(POOL_ITEMS, POOL_BYTES // max(tensor.item_bytes, 1)))
    shape = (count, *tensor.item_shape)
    if not isinstance(data, RandomData):
        return np.zeros(shape, dtype)
    rng = np.random.default_rng([DATA_STREAM, place])
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        low, high = max(int(np.ceil(data.min)), info.min), min(int(np.floor(data.max)), info.max)
        if high < low:
            within = f"[{data.min:g}, {data.max:g}]"
            raise ValueError(f"input {tensor.name}: no {tensor.datatype} lies in {within}")
        return rng.integers(low, high, size=shape, dtype=dtype, endpoint=True)
    return rng.uniform(data.min, data.max, size=shape).astype(dtype)


def _npy_items(data: NpyData, tensor: TensorShape, dtype: np.dtype[np.generic]) -> np.ndarray:
    path = data.file(tensor.name)
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"input {tensor.name}: cannot read {path}: {exc}") from None
    item = tensor.item_shape
    if array.shape == item:
        array = array[np.newaxis]
    if array.shape[1:] != item or not len(array):
        held = f"holds shape {list(array.shape)}, not items of {list(item)}"
        raise ValueError(f"input {tensor.name}: {path} {held}")
    if not np.can_cast(array.dtype, dtype, casting="same_kind"):
        raise ValueError(f"input {tensor.name}: {path} holds {array.dtype}, not {tensor.datatype}")
    items: np.ndarray = array.astype(dtype)
    return items


def _pool(tensor: TensorShape, items: np.ndarray) -> Pool:
    json = tuple(_json_elements(item) for item in items)
    raw = tuple(np.ascontiguousarray(item).tobytes() for item in items)
    return Pool(tensor, json, raw)


def _json_elements(item: np.ndarray) -> bytes:
    flat = np.ascontiguousarray(item.reshape(-1).astype(item.dtype.newbyteorder("=")))
    try:
        text = orjson.dumps(flat, option=orjson.OPT_SERIALIZE_NUMPY)
    except TypeError:  # a dtype orjson cannot write as it is
        text = orjson.dumps(flat.tolist())
    return text[1:-1]

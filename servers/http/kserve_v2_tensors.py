"""KServe v2's tensor data, both ways: a tensor's JSON `data` (row-major, flat or nested) and its
raw bytes under the binary tensor data extension (little-endian, no padding, BOOL one byte an
element), read into numpy arrays of the model's shape and written back out.

Pure and without I/O, as `openai.py`: the v2 front (kserve_v2.py) and any client read it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, Final

import numpy as np

from servers.engines.tensors import DATATYPES

# The binary extension's header: the length of the JSON before the tensors' bytes.
HEADER_LENGTH: Final = "Inference-Header-Content-Length"

# The numpy kinds a JSON `data` may come as, per datatype's kind: integers for integers, any
# number for floats, true/false for BOOL (as Triton's JSON parser takes them).
_JSON_KINDS: Final = {"b": "b", "u": "iuO", "i": "iuO", "f": "iuf"}  # O: exact integers (below)
_DESCRIBED: Final = {"b": "true or false", "u": "integers", "i": "integers", "f": "numbers"}


class V2Error(Exception):
    """A request this server refuses: v2's `{"error": message}` with `status` (400 by default)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def elements(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _wire_dtype(datatype: str) -> np.dtype[Any]:
    """The bytes' layout on the wire: little-endian, BOOL as one byte (0 or 1)."""
    dtype = DATATYPES[datatype]
    return np.dtype(np.uint8) if dtype.kind == "b" else dtype.newbyteorder("<")


def to_bytes(array: np.ndarray, datatype: str) -> bytes:
    """The tensor's raw bytes as the binary extension sends them (row-major)."""
    return np.ascontiguousarray(array, dtype=_wire_dtype(datatype)).tobytes()


def from_bytes(raw: bytes | memoryview, datatype: str, shape: Sequence[int], name: str) -> np.ndarray:
    """A tensor read from its raw bytes; V2Error if they are not the shape's size."""
    wire = _wire_dtype(datatype)
    wanted = elements(shape) * wire.itemsize
    if len(raw) != wanted:
        raise V2Error(
            f"tensor '{name}': binary_data_size is {len(raw)} bytes, but shape {list(shape)} "
            f"of {datatype} takes {wanted}"
        )
    flat = np.frombuffer(raw, dtype=wire)
    native = flat != 0 if datatype == "BOOL" else flat.astype(DATATYPES[datatype])  # a writable copy
    return native.reshape(tuple(shape))


def from_json(data: Any, datatype: str, shape: Sequence[int], name: str) -> np.ndarray:
    """A tensor read from JSON `data` (flat or nested, row-major); V2Error if the values are
    not of the datatype's kind, do not fit it (an integer out of range), or are not the
    shape's count."""
    if data is None:
        raise V2Error(f"tensor '{name}' has neither data nor parameters.binary_data_size")
    dtype = DATATYPES[datatype]
    try:
        values = np.asarray(data)
    except (ValueError, TypeError) as exc:  # ragged lists
        raise V2Error(f"tensor '{name}': data is not a regular array of {datatype}: {exc}") from None
    count = elements(shape)
    if values.size != count:
        raise V2Error(
            f"tensor '{name}': data holds {values.size} elements, but shape {list(shape)} takes {count}"
        )
    if dtype.kind in "iu" and values.dtype.kind in "fO":
        # Python integers past int64's come as float64 (rounded) or objects: read them exactly.
        values = _exact_integers(values, data, datatype, name)
    if values.size and values.dtype.kind not in _JSON_KINDS[dtype.kind]:
        raise V2Error(f"tensor '{name}': data of {datatype} must be {_DESCRIBED[dtype.kind]}")
    if dtype.kind in "iu" and values.size:
        info = np.iinfo(dtype.name)
        if not info.min <= int(values.min()) <= int(values.max()) <= info.max:
            raise V2Error(
                f"tensor '{name}': data holds a value outside {datatype}'s {info.min} to {info.max}"
            )
    with np.errstate(over="ignore", invalid="ignore"):  # a float past FP16's range is inf, as numpy's
        return values.astype(dtype).reshape(tuple(shape))


def _leaves(data: Any) -> Iterator[Any]:
    if isinstance(data, list):
        for item in data:
            yield from _leaves(item)
    else:
        yield data


def _exact_integers(values: np.ndarray, data: Any, datatype: str, name: str) -> np.ndarray:
    """The data's integers as Python ints (an object array of the values' shape), or V2Error
    if any is not an integer."""
    leaves = list(_leaves(data))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in leaves):
        raise V2Error(f"tensor '{name}': data of {datatype} must be {_DESCRIBED['i']}")
    exact = np.empty(len(leaves), dtype=object)
    exact[:] = leaves
    return exact.reshape(values.shape)


def to_json(array: np.ndarray) -> list[Any]:
    """The tensor's `data` as JSON, flat in row-major order (what Triton sends)."""
    flat: list[Any] = array.reshape(-1).tolist()
    return flat

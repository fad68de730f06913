"""KV caches as numpy arrays (ONNX Runtime's): select rows, stack left-padded parts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

# Keys and values of every layer, in the model's input order: (k0, v0, k1, v1, ...), each
# [batch, kv_heads, length, head_dim].
NumpyCache = tuple[npt.NDArray[np.float32], ...]


def select_rows(cache: NumpyCache, rows: Sequence[int], start: int) -> NumpyCache:
    index = list(rows)
    return tuple(np.ascontiguousarray(t[index, :, start:, :]) for t in cache)


def stack_left_padded(parts: Sequence[tuple[NumpyCache, int]]) -> NumpyCache:
    """Concatenate caches on the batch axis, left-padding each part with `pad` zero columns."""
    if len(parts) == 1 and parts[0][1] == 0:
        return parts[0][0]  # nothing to pad or join: no copy
    first = parts[0][0]
    total = first[0].shape[2] + parts[0][1]
    rows = sum(cache[0].shape[0] for cache, _ in parts)
    out = []
    for layer in range(len(first)):
        _, heads, _, dim = first[layer].shape
        merged = np.zeros((rows, heads, total, dim), dtype=first[layer].dtype)
        row = 0
        for cache, pad in parts:
            tensor = cache[layer]
            if tensor.shape[2] + pad != total:
                raise ValueError(f"part of length {tensor.shape[2]} + pad {pad} does not make {total}")
            merged[row : row + tensor.shape[0], :, pad:, :] = tensor
            row += tensor.shape[0]
        out.append(merged)
    return tuple(out)

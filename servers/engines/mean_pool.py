"""Embeddings from a decoder: the mean of its last hidden states over each input's tokens.

Inputs are run together as one left-padded batch with no past (the prefill arithmetic of
`kvbatch.py`); the padded positions are left out of the mean, whatever the runtime computed
there (possibly NaN, from fully masked rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from servers.engines.decoder import Decoder, FloatArray, IntArray
from servers.engines.kvbatch import attention_mask, left_padded, prefill_positions


def mean_pooled(states: FloatArray, mask: IntArray) -> FloatArray:
    """[batch, seq, hidden] states and their [batch, seq] mask (1: a token) → [batch, hidden]."""
    keep = mask[:, :, None] > 0
    total = np.where(keep, states, 0.0).sum(axis=1, dtype=np.float64)
    counts = np.maximum(mask.sum(axis=1, keepdims=True), 1)
    pooled: FloatArray = (total / counts).astype(np.float32)
    return pooled


def embed_ids(decoder: Decoder[Any], prompts: Sequence[Sequence[int]], rows: int) -> list[list[float]]:
    """One mean-pooled vector per prompt (each non-empty), `rows` prompts to a forward pass."""
    vectors: list[list[float]] = []
    for start in range(0, len(prompts), rows):
        ids, pads = left_padded(prompts[start : start + rows])
        seq = ids.shape[1]
        mask = attention_mask(pads, seq)
        states = decoder.hidden(ids, mask, prefill_positions(pads, seq))
        vectors.extend(mean_pooled(states, mask).tolist())
    return vectors

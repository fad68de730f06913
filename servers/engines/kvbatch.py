"""The running batch's KV cache with its left padding, and the pure mask/position arithmetic.

Runs in the decode worker thread: every method may call the runtime. Rows change only when a
request joins (`admit`) or leaves (`retain`); a decode `step` feeds the cache straight back to
the runtime, so a step copies nothing the runtime does not copy itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic

import numpy as np

from servers.engines.decoder import CacheT, Decoder, FloatArray, IntArray


def left_padded(prompts: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[IntArray, IntArray]:
    """Prompts as one [batch, longest] id matrix, right-aligned; and each row's padding."""
    longest = max(len(p) for p in prompts)
    ids = np.full((len(prompts), longest), pad_id, dtype=np.int64)
    pads = np.array([longest - len(p) for p in prompts], dtype=np.int64)
    for row, prompt in enumerate(prompts):
        ids[row, longest - len(prompt) :] = prompt
    return ids, pads


def attention_mask(pads: IntArray, total: int) -> IntArray:
    """[batch, total]: 0 over each row's left padding, 1 elsewhere."""
    return (np.arange(total, dtype=np.int64)[None, :] >= pads[:, None]).astype(np.int64)


def prefill_positions(pads: IntArray, seq: int) -> IntArray:
    """Positions count real tokens only, so a padded prompt sees the positions it would alone."""
    positions: IntArray = np.maximum(np.arange(seq, dtype=np.int64)[None, :] - pads[:, None], 0)
    return positions


def next_positions(pads: IntArray, total: int) -> IntArray:
    """[batch, 1]: the position of the token that follows `total` cache columns."""
    return (total - pads)[:, None]


class KVBatch(Generic[CacheT]):
    def __init__(self, decoder: Decoder[CacheT]) -> None:
        self.decoder = decoder
        self.cache: CacheT | None = None
        self.pads: IntArray = np.zeros(0, dtype=np.int64)
        self.total = 0  # cache columns, padding included

    @property
    def size(self) -> int:
        return len(self.pads)

    def retain(self, keep: Sequence[int]) -> None:
        """Keep only rows `keep` (in that order), and drop padding columns no row needs."""
        if list(keep) == list(range(self.size)):
            return
        if not keep or self.cache is None:
            self.cache, self.pads, self.total = None, np.zeros(0, dtype=np.int64), 0
            return
        pads = self.pads[list(keep)]
        trim = int(pads.min())
        self.cache = self.decoder.select(self.cache, keep, trim)
        self.pads, self.total = pads - trim, self.total - trim

    def admit(self, prompts: Sequence[Sequence[int]]) -> FloatArray:
        """Prefill `prompts` together and append them as new rows; their next-token logits."""
        ids, pads = left_padded(prompts)
        seq = ids.shape[1]
        mask, positions = attention_mask(pads, seq), prefill_positions(pads, seq)
        logits, fresh = self.decoder.forward(ids, mask, positions, None)
        total = max(self.total, seq)
        parts: list[tuple[CacheT, int]] = []
        if self.cache is not None:
            parts.append((self.cache, total - self.total))
        # Each new row without its prefill padding, re-padded with zeros: whatever the runtime
        # computed at padded positions (possibly NaN, from fully masked rows) never enters.
        for row, pad in enumerate(pads.tolist()):
            parts.append((self.decoder.select(fresh, [row], pad), total - (seq - pad)))
        self.cache = self.decoder.stack(parts)
        self.pads = np.concatenate([self.pads + (total - self.total), total - (seq - pads)])
        self.total = total
        return logits

    def step(self, tokens: Sequence[int]) -> FloatArray:
        """One decode step: each row's last token in, its next-token logits out."""
        if self.cache is None or len(tokens) != self.size:
            raise ValueError(f"{len(tokens)} tokens for a batch of {self.size}")
        ids = np.asarray(tokens, dtype=np.int64)[:, None]
        mask = attention_mask(self.pads, self.total + 1)
        positions = next_positions(self.pads, self.total)
        logits, self.cache = self.decoder.forward(ids, mask, positions, self.cache)
        self.total += 1
        return logits

"""What a runtime implements to be served by the batching scheduler: one forward pass and two
cache reshapes. Everything else (padding, masks, positions, admission, stopping) is shared.

A cache holds, per layer, keys and values shaped [batch, kv_heads, length, head_dim]. Row i of
a batch is left-padded: its first `pads[i]` columns are padding that the attention mask hides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]

CacheT = TypeVar("CacheT")


class Decoder(Protocol[CacheT]):
    eos_token_ids: frozenset[int]
    bos_token_id: int | None
    # The width of `hidden`'s states; None: this model gives none (it serves no embeddings).
    hidden_size: int | None
    vocab_size: int | None  # token ids are below this (None: unknown)

    def hidden(self, input_ids: IntArray, attention_mask: IntArray, position_ids: IntArray) -> FloatArray:
        """The last hidden states (after the final norm) of [batch, seq] tokens with no past:
        [batch, seq, hidden_size]. Values at padded positions are unspecified."""
        ...

    def forward(
        self, input_ids: IntArray, attention_mask: IntArray, position_ids: IntArray, past: CacheT | None
    ) -> tuple[FloatArray, CacheT]:
        """Run [batch, seq] new tokens after `past` (None: an empty cache, i.e. prefill).

        `attention_mask` is [batch, past_len + seq] (1 attend, 0 padding), `position_ids`
        [batch, seq]. Returns the logits at the last position, [batch, vocab], and the present
        cache (past + the new tokens). May reuse `past`'s storage: the caller drops it.
        """
        ...

    def select(self, cache: CacheT, rows: Sequence[int], start: int) -> CacheT:
        """Rows `rows` of `cache`, from column `start` on (drops evicted rows and dead padding)."""
        ...

    def stack(self, parts: Sequence[tuple[CacheT, int]]) -> CacheT:
        """Concatenate caches along the batch axis, left-padding each part with `pad` zero
        columns; every part's length + pad must be equal."""
        ...

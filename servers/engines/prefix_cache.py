"""A prefix cache of known behaviour for the simulated engine: an LRU of chained block hashes.

A prompt is cut into blocks of `block_tokens` tokens (the simulated engine's tokens are
whitespace-separated words). Each full block's key hashes the previous block's key together with
this block's words, as vLLM's prefix caching does, so a block can only hit when everything before
it matches too. A partial last block is never cached.

`lookup` gives the tokens in the longest run of leading full blocks held; `insert` (after
prefill) adds every full block. Both touch the blocks they meet, so they become the most recently
used; beyond `capacity_blocks` the least recently used goes first. Within one prompt the blocks
are touched last block first, so the prompt's first block ends up the most recent: as in vLLM,
which frees a request's blocks tail first, a shared prefix outlives the tails that follow it
(evicting a first block would orphan every block chained after it).

The hash is blake2b, not Python's `hash()`, which is salted per process (PYTHONHASHSEED): the
same prompt must give the same keys in every run.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

_KEY_BYTES = 16
_ROOT = bytes(_KEY_BYTES)  # the "previous key" of a prompt's first block


def block_keys(words: Sequence[str], block_tokens: int) -> list[bytes]:
    """The chained key of every full block of `words`, first block first."""
    keys: list[bytes] = []
    previous = _ROOT
    for start in range(0, len(words) - block_tokens + 1, block_tokens):
        digest = hashlib.blake2b(previous, digest_size=_KEY_BYTES)
        # Words hold no whitespace, so a space separates them unambiguously; the previous key
        # has a fixed length, so it cannot run into the words. surrogatepass: JSON may carry
        # lone surrogates, which plain UTF-8 refuses to encode.
        digest.update(" ".join(words[start : start + block_tokens]).encode("utf-8", "surrogatepass"))
        previous = digest.digest()
        keys.append(previous)
    return keys


class PrefixCache:
    """An LRU of at most `capacity_blocks` block keys; counts in tokens."""

    def __init__(self, capacity_blocks: int, block_tokens: int = 16) -> None:
        if capacity_blocks < 1:
            raise ValueError("capacity_blocks must be at least 1")
        if block_tokens < 1:
            raise ValueError("block_tokens must be at least 1")
        self.capacity_blocks = capacity_blocks
        self.block_tokens = block_tokens
        self._blocks: OrderedDict[bytes, None] = OrderedDict()  # least recently used first

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, key: object) -> bool:
        return key in self._blocks

    def keys(self) -> list[bytes]:
        """The held keys, least recently used (next to be evicted) first."""
        return list(self._blocks)

    def lookup(self, words: Sequence[str]) -> int:
        """Tokens of `words` in the longest run of leading full blocks held; touches those."""
        hits: list[bytes] = []
        for key in block_keys(words, self.block_tokens):
            if key not in self._blocks:
                break
            hits.append(key)
        self._touch(hits)
        return len(hits) * self.block_tokens

    def insert(self, words: Sequence[str]) -> None:
        """Hold every full block of `words` (prefill computed them), evicting beyond capacity."""
        keys = block_keys(words, self.block_tokens)
        self._touch(keys)
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)

    def _touch(self, keys: list[bytes]) -> None:
        # Last block first: the first block becomes the most recently used (see the docstring).
        for key in reversed(keys):
            self._blocks[key] = None
            self._blocks.move_to_end(key)

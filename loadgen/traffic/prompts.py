"""The text of a synthetic prompt: the request's own words, after a shared prefix or trace blocks.

Every text is made of the common short words of loadgen.inputs.vocabulary (about one token
each, so n words ≈ n tokens) and is a pure function of its inputs, so the same request always
sends the same text:

- a request's own part (vocabulary.prompt_text) begins with its id written in those words, so no
  two requests of a run share a first word sequence, and a prefix cache never hits on it;
- a shared prefix (`workload.prefix`, loadgen.scenario.prefix) begins with a word outside that
  vocabulary ("system"), then its group and its class, then filler: two groups differ within
  their first four words (so from the first cache block on, for blocks of 4 tokens or more), and
  no own part begins like a prefix;
- a trace block (a Mooncake row's `hash_ids`) begins with "context" and its hash id, then filler:
  the same id is the same text in every row, so a replay reproduces the trace's cache hits.

Prefix and block texts are cached (the most recently used): they are the same for many requests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache

from loadgen.inputs.vocabulary import WORDS, number_words, prompt_text
from loadgen.scenario.model import Workload
from loadgen.traffic.schedule import PlannedRequest

__all__ = ["block_text", "prefix_text", "request_prompt", "trace_prompt"]

PREFIX_MARK = "system"  # not one of the vocabulary's words: no own part begins with it
BLOCK_MARK = "context"
# Texts kept: a few prefixes (each `tokens` words: bounded so long ones cannot pile up) and
# more trace blocks (a trace has many ids, reused close together; `block_tokens` words each).
_PREFIXES_KEPT = 64
_BLOCKS_KEPT = 1024


@lru_cache(maxsize=_PREFIXES_KEPT)
def prefix_text(tokens: int, group: int, request_class: str = "default") -> str:
    """Group `group`'s prefix of class `request_class`: exactly `tokens` words."""
    salt = int.from_bytes(hashlib.blake2b(request_class.encode(), digest_size=4).digest(), "big")
    head = [PREFIX_MARK, *number_words(group, 3), *number_words(salt % 17956, 2)]  # 17956 = 134²
    return _filled(head, tokens, salt + group)


@lru_cache(maxsize=_BLOCKS_KEPT)
def block_text(hash_id: int, block_tokens: int) -> str:
    """A trace block: exactly `block_tokens` words, the same for the same id."""
    return _filled([BLOCK_MARK, *number_words(hash_id, 4)], block_tokens, hash_id)


def trace_prompt(hash_ids: Sequence[int], block_tokens: int, tokens: int, request_id: int) -> str:
    """A trace row's prompt of `tokens` words: its blocks in order (the last one cut where the
    row's length ends, as a Mooncake row's last block is partial), then unique words."""
    parts: list[str] = []
    left = tokens
    for hash_id in hash_ids:
        if left <= 0:
            break
        text = block_text(hash_id, block_tokens)
        parts.append(text if left >= block_tokens else " ".join(text.split()[:left]))
        left -= block_tokens
    if left > 0:
        parts.append(prompt_text(left, request_id))
    return " ".join(parts)


def request_prompt(planned: PlannedRequest, workload: Workload) -> str:
    """The synthetic prompt of a planned request (one with no text or dataset line of its own)."""
    prefix = planned.prefix
    if prefix is not None and prefix.blocks:
        return trace_prompt(prefix.blocks, prefix.block_tokens, planned.prompt_tokens, planned.id)
    own = prompt_text(planned.prompt_tokens, planned.id)
    spec = workload.prefix
    if prefix is None or prefix.group is None or spec is None:
        return own
    return prefix_text(spec.tokens, prefix.group, planned.request_class) + " " + own


def _filled(head: list[str], tokens: int, seed: int) -> str:
    """`head`, then filler words up to exactly `tokens` words (cut when head is longer)."""
    count = len(WORDS)
    start = seed % count
    filler = (WORDS[(start + i * 31) % count] for i in range(max(0, tokens - len(head))))
    return " ".join([*head[:tokens], *filler])

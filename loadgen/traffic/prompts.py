"""The text of a synthetic prompt: the request's own words, after a slice's lead or trace blocks.

Every text is made of the common short words of loadgen.inputs.vocabulary (about one token
each, so n words ≈ n tokens) and is a pure function of its inputs, so the same request always
sends the same text:

- a request's own part (vocabulary.prompt_text) begins with its id written in those words, so no
  two requests of a run share a first word sequence, and a prefix cache never hits on it;
- a slice's lead (loadgen.features.slice.Leads: a shared text of its own) comes before it;
- a trace block (a Mooncake row's `hash_ids`) begins with "context" and its hash id, then filler:
  the same id is the same text in every row, so a replay reproduces the trace's cache hits.

Block texts are cached (the most recently used): they are the same for many requests.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from functools import lru_cache

from loadgen.features import leaders
from loadgen.features.slice import Asking, Lead, Leads
from loadgen.inputs.vocabulary import filled_text, number_words, prompt_text
from loadgen.scenario.model import Workload
from loadgen.traffic.schedule import PlannedRequest

__all__ = ["block_text", "request_prompt", "shared_group", "trace_prompt"]

BLOCK_MARK = "context"
# Block texts kept: a trace has many ids, reused close together; `block_tokens` words each.
_BLOCKS_KEPT = 1024


@lru_cache(maxsize=_BLOCKS_KEPT)
def block_text(hash_id: int, block_tokens: int) -> str:
    """A trace block: exactly `block_tokens` words, the same for the same id."""
    return filled_text([BLOCK_MARK, *number_words(hash_id, 4)], block_tokens, hash_id)


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
    leads = _leads(planned, workload)
    return " ".join([*(lead.text for lead in leads), own]) if leads else own


def shared_group(planned: PlannedRequest, workload: Workload) -> int | None:
    """The shared text the request began with, as its record keeps it (`prefix_group`): a trace
    row's shared first block, or a slice's lead (None: none)."""
    if planned.prefix is not None:
        return planned.prefix.group
    leads = _leads(planned, workload) if planned.dataset_row is None else []
    return leads[0].shared if leads else None


@functools.cache
def _leaders() -> tuple[tuple[str, Leads], ...]:
    return leaders()


def _leads(planned: PlannedRequest, workload: Workload) -> list[Lead]:
    """The slices' leads of a request, for those that drew it a value."""
    if not planned.drawn:
        return []
    found = []
    for name, leads in _leaders():
        drawn = planned.drawn.get(name, 0)
        if drawn:
            lead = leads.lead(workload, Asking(planned.request_class, planned.id, drawn, None))
            if lead is not None:
                found.append(lead)
    return found

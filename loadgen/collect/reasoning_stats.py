"""Reasoning streams: report.json's `metrics.ttfat_ms` and `metrics.reasoning`.

DESIGN's rule: TTFT is the first streamed token of any kind (reasoning, answer, tool-call
arguments), TTFAT the first answer token; a stream's reasoning tokens count as output tokens and
are also reported apart. The digests live in the group's `digests` (TTFAT from the scheduled send,
as `ttft_ms`; the reasoning time from the first reasoning token to the first answer token) and are
made only once a run shows reasoning or an answer that was not the first token: until then every
answer began with the first token, so the TTFAT digest starts as a copy of the TTFT digest so far
(as prefix_stats' unprefixed one does) and a plain run keeps nothing more.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loadgen.collect.columns import TIMEOUT, Columns
from loadgen.collect.digest import Digest, Percentiles
from loadgen.collect.feature_stats import (
    ChunkValues,
    FeatureStats,
    Group,
    count,
    counts_of,
    merge_counts,
    seen_counts,
)

TTFAT, REASONING = "ttfat_ms", "reasoning_ms"
# its counts' keys (feature_counts["reasoning"]): requests whose answer had reasoning, their
# reasoning tokens, and their output tokens (reasoning included).
COUNTS = ("requests", "reasoning_tokens", "output_tokens")

KEY = "reasoning"  # its object under report.json's `metrics`, and its counts' name


def add_reasoning(group: Group, cols: Columns, rows: np.ndarray, chunk: ChunkValues) -> None:
    """Take in the selected rows, before the group's `ttft_ms` digest takes this chunk (the copy
    below must hold earlier chunks only)."""
    answer, first = cols.first_answer[rows], cols.first_token[rows]
    reasoning = cols.extra["reasoning_tokens"][rows]
    shown = ~np.isnan(reasoning)
    digests = group.digests
    if TTFAT not in digests:
        differs = ~((answer == first) | (np.isnan(answer) & np.isnan(first)))
        if not shown.any() and not differs.any():
            return
        digests[TTFAT] = digests["ttft_ms"].copy(group.budget)
        digests[REASONING] = Digest(group.budget)
    ttfat = ttfat_values(cols, rows, chunk.status)
    digests[TTFAT].add(ttfat[~np.isnan(ttfat)])
    thinking = cols.extra["reasoning_ms"][rows]
    digests[REASONING].add(thinking[~np.isnan(thinking)])
    counts = counts_of(group, KEY)
    count(counts, "requests", int(shown.sum()))
    count(counts, "reasoning_tokens", int(reasoning[shown].sum()))
    count(counts, "output_tokens", int(cols.output_tokens[rows][shown].sum()))


def ttfat_values(cols: Columns, rows: np.ndarray, status: np.ndarray) -> np.ndarray:
    """TTFAT in ms from the scheduled send of the selected rows (NaN: no answer). As TTFT, a
    timed-out request without an answer counts its elapsed time (a lower bound)."""
    answer = cols.first_answer[rows]
    end = np.where(np.isnan(answer) & (status == TIMEOUT), cols.done[rows], answer)
    values: np.ndarray = (end - cols.scheduled[rows]) * 1000.0
    return values


def merge_reasoning(group: Group, other: Group) -> None:
    """Take in `other`'s reasoning figures, before the group's `ttft_ms` digest takes other's."""
    mine, theirs = group.digests, other.digests
    if TTFAT not in mine and TTFAT not in theirs:
        return
    if TTFAT not in mine:  # every request of mine so far answered with its first token
        mine[TTFAT] = mine["ttft_ms"].copy(group.budget)
        mine[REASONING] = Digest(group.budget)
    mine[TTFAT].merge(theirs[TTFAT] if TTFAT in theirs else theirs["ttft_ms"])
    if REASONING in theirs:
        mine[REASONING].merge(theirs[REASONING])
    merge_counts(group, other, KEY)


def ttfat_percentiles(group: Group, ttft: Percentiles) -> Percentiles:
    """`metrics.ttfat_ms`: TTFT's own figures in a run where every answer began with the first token."""
    digest = group.digests.get(TTFAT)
    return digest.percentiles() if digest is not None else dict(ttft)


def reasoning_metrics(group: Group, elapsed_s: float) -> dict[str, Any] | None:
    """`metrics.reasoning`; None when no request of the group showed reasoning (a run of tool
    calls tracks TTFAT without any)."""
    if TTFAT not in group.digests or not seen_counts(group, KEY).get("requests"):
        return None
    counts = seen_counts(group, KEY)
    reasoning = counts.get("reasoning_tokens", 0)
    return {
        "requests": counts.get("requests", 0),
        "reasoning_tokens": reasoning,
        "answer_tokens": group.tokens - reasoning,
        # of the output tokens of every request (a plain answer's count too)
        "reasoning_share": reasoning / group.tokens if group.tokens else None,
        "reasoning_tokens_per_s": reasoning / elapsed_s if elapsed_s > 0 else None,
        "reasoning_ms": group.digests[REASONING].percentiles(),
    }


REASONING_STATS = FeatureStats(
    KEY, add_reasoning, merge_reasoning, reasoning_metrics, legacy="reasoning_counts"
)

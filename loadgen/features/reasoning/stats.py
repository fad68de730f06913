"""Reasoning streams' figures: report.json's `metrics.reasoning`.

A stream's reasoning tokens count as output tokens (and in TTFT, whose first token they may be;
TTFAT, the first answer token, is the core's: loadgen.collect.ttfat) and are also reported
apart. Kept in a GroupStats (loadgen.collect.run_stats loops over the registered statistics) as
simple mergeable values, made only once a record with reasoning is seen (a run without any keeps
nothing more):
- its counts (`feature_counts["reasoning"]`): the requests whose answer had reasoning
  (`requests`), their reasoning tokens and their output tokens (reasoning included);
- a digest in `digests`: the reasoning time, first reasoning token → first answer token
  (`reasoning_ms`).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from loadgen.collect.columns import Columns
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

REASONING = "reasoning_ms"
COUNTS = ("requests", "reasoning_tokens", "output_tokens")  # its counts' keys

KEY = "reasoning"  # its object under report.json's `metrics`, and its counts' name


def add_reasoning(group: Group, cols: Columns, rows: np.ndarray, chunk: ChunkValues) -> None:
    """Take in the selected rows' reasoning."""
    reasoning = cols.extra["reasoning_tokens"][rows]
    shown = ~np.isnan(reasoning)
    digests = group.digests
    if REASONING not in digests:
        if not shown.any():
            return
        digests[REASONING] = Digest(group.budget)
    thinking = cols.extra["reasoning_ms"][rows]
    digests[REASONING].add(thinking[~np.isnan(thinking)])
    counts = counts_of(group, KEY)
    count(counts, "requests", int(shown.sum()))
    count(counts, "reasoning_tokens", int(reasoning[shown].sum()))
    count(counts, "output_tokens", int(cols.output_tokens[rows][shown].sum()))


def merge_reasoning(group: Group, other: Group) -> None:
    theirs = other.digests.get(REASONING)
    if theirs is not None:
        group.digests.setdefault(REASONING, Digest(group.budget)).merge(theirs)
    merge_counts(group, other, KEY)


class ReasoningPart(TypedDict):
    """`metrics.reasoning`: report.json's `Reasoning` (loadgen.features.reasoning.report.model)."""

    requests: int
    reasoning_tokens: int
    answer_tokens: int
    reasoning_share: float | None
    reasoning_tokens_per_s: float | None
    reasoning_ms: Percentiles


def reasoning_metrics(group: Group, elapsed_s: float) -> ReasoningPart | None:
    """`metrics.reasoning`; None when no request of the group showed reasoning (a run of tool
    calls tracks TTFAT without any)."""
    counts = seen_counts(group, KEY)
    if not counts.get("requests"):
        return None
    reasoning = counts.get("reasoning_tokens", 0)
    return {
        "requests": counts.get("requests", 0),
        "reasoning_tokens": reasoning,
        "answer_tokens": group.tokens - reasoning,
        # of the output tokens of every request (a plain answer's count too)
        "reasoning_share": reasoning / group.tokens if group.tokens else None,
        "reasoning_tokens_per_s": reasoning / elapsed_s if elapsed_s > 0 else None,
        "reasoning_ms": group.digests.get(REASONING, Digest(group.budget)).percentiles(),
    }


REASONING_STATS = FeatureStats(
    KEY, add_reasoning, merge_reasoning, reasoning_metrics, legacy="reasoning_counts"
)

"""Tokens counted more than one way, and how often the counts disagree: report.json's
`metrics.token_counts` (inference-perf#580 found more than half of a real server's requests
mismatched).

Output tokens are counted by the server's `usage` and by the stream's token chunks (each record
holds both: `output_tokens` is the usage, and its gaps, one fewer than its chunks); prompt tokens
by what the plan asked for (`prompt_asked`, recorded with `workload.tokenizer`) and the server's
`usage.prompt_tokens`. Only successful requests whose server sent a usage are compared; a stream
whose gaps were summarised (above ITL_LIST_LIMIT) has no chunk count left and is skipped. The
third count, the tokenizer's of the answer's text, is made after the run (loadgen.collect.retokenize)
with the same Agreement. Kept as plain mergeable counts under `feature_counts["token_counts"]`,
made only once a pair was compared, so a run without usage reports nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from loadgen.collect.columns import OK, SOURCE_CODES, Columns
from loadgen.collect.feature_stats import ChunkValues, FeatureStats, Group, count, counts_of, seen_counts
from loadgen.collect.metrics_parts import AgreementPart, TokenCountsPart
from loadgen.collect.records import ITL_LIST_LIMIT

KEY = "token_counts"
USAGE = SOURCE_CODES["usage"]
# The pairs compared here, by their prefix in the counts: (first, second) in the report's names.
USAGE_VS_CHUNKS, ASKED_VS_USAGE = "output_usage_vs_chunks", "prompt_asked_vs_usage"


def add_agreement(counts: dict[str, int], pair: str, first: np.ndarray, second: np.ndarray) -> None:
    """Count how two counts of the same requests differ (first − second: how much the first says more)."""
    if first.size == 0:
        return
    difference = (first - second).astype(np.int64)
    absolute = np.abs(difference)
    count(counts, f"{pair}:compared", int(first.size))
    count(counts, f"{pair}:mismatched", int(np.count_nonzero(difference)))
    count(counts, f"{pair}:abs_sum", int(absolute.sum()))
    count(counts, f"{pair}:sum", int(difference.sum()))
    top = f"{pair}:max_abs"
    counts[top] = max(counts.get(top, 0), int(absolute.max()))


def merge_agreements(mine: dict[str, int], theirs: Mapping[str, int]) -> None:
    """Add another group's counts: sums add, the largest difference is the larger."""
    for name, value in theirs.items():
        if name.endswith(":max_abs"):
            mine[name] = max(mine.get(name, 0), value)
        else:
            count(mine, name, value)


def agreement(counts: Mapping[str, int], pair: str) -> AgreementPart | None:
    """The report's view of one pair; None when no request had both counts."""
    compared = counts.get(f"{pair}:compared", 0)
    if not compared:
        return None
    return {
        "compared": compared,
        "mismatched": counts[f"{pair}:mismatched"],
        "mismatched_share": counts[f"{pair}:mismatched"] / compared,
        "mean_abs_difference": counts[f"{pair}:abs_sum"] / compared,
        "max_abs_difference": counts[f"{pair}:max_abs"],
        "mean_difference": counts[f"{pair}:sum"] / compared,
    }


def chunk_counts(cols: Columns) -> np.ndarray:
    """Each row's token chunks: its gaps and one (0 where no token came)."""
    gaps = np.bincount(cols.itl_owner, minlength=len(cols))
    return np.where(np.isnan(cols.first_token), 0, gaps + 1)


def add_token_counts(group: Group, cols: Columns, rows: np.ndarray, chunk: ChunkValues) -> None:
    told = rows & (cols.status == OK) & (cols.source == USAGE)  # the server sent a usage
    if not told.any():
        return
    chunks = chunk_counts(cols)
    usage = cols.output_tokens
    # streamed with tokens, its gaps listed (a summary keeps none: its chunks are unknown)
    streamed = told & (chunks > 0) & ~((chunks == 1) & (usage > ITL_LIST_LIMIT))
    asked = told & ~np.isnan(cols.prompt_asked) & ~np.isnan(cols.prompt_tokens)
    if not streamed.any() and not asked.any():
        return
    counts = counts_of(group, KEY)
    add_agreement(counts, USAGE_VS_CHUNKS, usage[streamed], chunks[streamed])
    add_agreement(counts, ASKED_VS_USAGE, cols.prompt_asked[asked], cols.prompt_tokens[asked])


def merge_token_counts(group: Group, other: Group) -> None:
    theirs = other.feature_counts.get(KEY)
    if theirs is not None:
        merge_agreements(counts_of(group, KEY), theirs)


def token_counts_metrics(group: Group, elapsed_s: float) -> TokenCountsPart | None:
    counts = seen_counts(group, KEY)
    if not counts:
        return None
    return {
        "output_usage_vs_chunks": agreement(counts, USAGE_VS_CHUNKS),
        "prompt_asked_vs_usage": agreement(counts, ASKED_VS_USAGE),
    }


TOKEN_STATS = FeatureStats(KEY, add_token_counts, merge_token_counts, token_counts_metrics)

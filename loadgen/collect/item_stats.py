"""An API of items' throughput (embeddings: the inputs of each batch): report.json's
`metrics.items`, beside the request rate, in a run whose records sent items.

Kept as plain mergeable counts under `feature_counts["items"]`, made only once a record with
items (`items` ≥ 0) is seen, so a generation run reports nothing more: the requests that sent
items, the items they sent, those of the requests that succeeded (what the server did answer)
and the input tokens of those (the server's usage). Rates are over the group's measured time,
as `achieved_rate` is.
"""

from __future__ import annotations

import numpy as np

from loadgen.collect.columns import OK, Columns
from loadgen.collect.feature_stats import (
    ChunkValues,
    FeatureStats,
    Group,
    count,
    counts_of,
    merge_counts,
    seen_counts,
)
from loadgen.collect.metrics_parts import ItemsPart

KEY = "items"


def add_items(group: Group, cols: Columns, rows: np.ndarray, chunk: ChunkValues) -> None:
    items = cols.items[rows]
    sent = items >= 0
    if not sent.any():
        return
    answered = sent & (chunk.status == OK)
    tokens = cols.prompt_tokens[rows][answered]
    counts = counts_of(group, KEY)
    count(counts, "requests", int(sent.sum()))
    count(counts, "sent", int(items[sent].sum()))
    count(counts, "answered", int(items[answered].sum()))
    count(counts, "input_tokens", int(np.nansum(tokens)))


def merge_items(group: Group, other: Group) -> None:
    merge_counts(group, other, KEY)


def items_metrics(group: Group, elapsed_s: float) -> ItemsPart | None:
    counts = seen_counts(group, KEY)
    if not counts:
        return None
    return {
        "requests": counts["requests"],
        "sent": counts["sent"],
        "answered": counts["answered"],
        "items_per_request": counts["sent"] / counts["requests"] if counts["requests"] else None,
        "items_per_s": counts["answered"] / elapsed_s if elapsed_s > 0 else None,
        "input_tokens_per_s": counts["input_tokens"] / elapsed_s if elapsed_s > 0 else None,
    }


ITEM_STATS = FeatureStats(KEY, add_items, merge_items, items_metrics)

"""What a traffic feature adds to the statistics of a group of records.

A GroupStats (loadgen.collect.run_stats) keeps the core's counts and latency digests and loops
over the features (loadgen.collect.feature_list): each takes in a chunk's rows (`add`), merges
another group's figures (`merge`, a distributed worker's), and gives its object under
report.json's `metrics` (`metrics`: None when the group saw nothing of the feature, so a run
without it reports nothing more). A feature keeps plain mergeable counts under its own key of
`feature_counts` and its digests in the group's `digests`, both made only once it is seen.
Features run before the core's digests take the chunk: a digest a feature starts as a copy of
the group's `ttft_ms` holds the earlier chunks only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from loadgen.collect.columns import Columns
from loadgen.collect.digest import Digest
from loadgen.collect.metrics_parts import FeaturePart, TtftSplitPart


class Group(Protocol):
    """The part of a GroupStats a feature reads and writes."""

    budget: int
    requests: int
    sent: int
    tokens: int
    digests: dict[str, Digest]
    feature_counts: dict[str, dict[str, int]]


@dataclass(frozen=True)
class ChunkValues:
    """What the core computed of the chunk's selected rows, shared with the features."""

    status: np.ndarray  # the rows' status codes (loadgen.collect.columns)
    latencies: Mapping[str, np.ndarray]  # each core latency metric's values, ms, NaN where none


def _no_unpaced(group: Group) -> int:
    return 0


@dataclass(frozen=True)
class FeatureStats:
    """One feature's statistics: its key (under `metrics` and `feature_counts`) and its steps."""

    key: str
    add: Callable[[Group, Columns, np.ndarray, ChunkValues], None]
    merge: Callable[[Group, Group], None]
    metrics: Callable[[Group, float], FeaturePart | None]  # (group, measured seconds)
    # Sends that followed an answer rather than the plan (a session's later turns): the achieved
    # rate counts what the arrival process set.
    unpaced_sent: Callable[[Group], int] = _no_unpaced
    # The field a summary written before the features shared `feature_counts` kept its counts in.
    legacy: str | None = None


def counts_of(group: Group, key: str) -> dict[str, int]:
    """The feature's counts in `group`, made empty on first use."""
    return group.feature_counts.setdefault(key, {})


def seen_counts(group: Group, key: str) -> Mapping[str, int]:
    """The feature's counts, empty when it was never seen (nothing is made)."""
    return group.feature_counts.get(key, {})


def count(counts: dict[str, int], key: str, value: int) -> None:
    counts[key] = counts.get(key, 0) + value


def merge_counts(group: Group, other: Group, key: str) -> None:
    """Add `other`'s counts of the feature to `group`'s (made only when `other` has some)."""
    theirs = other.feature_counts.get(key)
    if theirs is not None:
        mine = counts_of(group, key)
        for name, value in theirs.items():
            count(mine, name, value)


def short(digest: Digest) -> TtftSplitPart:
    """p50, p95, p99 of a digest (ms)."""
    percentiles = digest.percentiles()
    return {"p50": percentiles["p50"], "p95": percentiles["p95"], "p99": percentiles["p99"]}

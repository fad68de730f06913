"""Requests that offered tools (`workload.tools`): report.json's `metrics.tools`.

Plain mergeable counts in a GroupStats' `feature_counts["tools"]` (loadgen.collect.run_stats), made only
once
a record that offered tools is seen: requests that offered them, those answered with a call, the
calls made and the calls whose arguments parse as a JSON object.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from loadgen.collect.columns import Columns
from loadgen.collect.feature_stats import (
    ChunkValues,
    FeatureStats,
    Group,
    count,
    counts_of,
    merge_counts,
    seen_counts,
)

KEY = "tools"  # its object under report.json's `metrics`, and its counts' name


def add_tools(group: Group, cols: Columns, rows: np.ndarray, chunk: ChunkValues) -> None:
    calls = cols.extra["tool_calls"][rows]
    offered = ~np.isnan(calls)
    if not offered.any():
        return
    counts = counts_of(group, KEY)
    count(counts, "offered", int(offered.sum()))
    count(counts, "calling", int((calls[offered] > 0).sum()))
    count(counts, "calls", int(calls[offered].sum()))
    count(counts, "valid", int(np.nan_to_num(cols.extra["tool_calls_valid"][rows][offered]).sum()))


class ToolsPart(TypedDict):
    """`metrics.tools`: report.json's `Tools` (loadgen.report.model.metrics)."""

    requests: int
    requests_with_calls: int
    call_share: float
    calls: int
    valid_calls: int
    tool_call_valid: float | None
    calls_per_s: float | None


def merge_tools(group: Group, other: Group) -> None:
    merge_counts(group, other, KEY)


def tool_metrics(group: Group, elapsed_s: float) -> ToolsPart | None:
    """`metrics.tools`; None when no request of the group offered tools."""
    counts = seen_counts(group, KEY)
    if not counts.get("offered"):
        return None
    offered, calls = counts["offered"], counts.get("calls", 0)
    return {
        "requests": offered,
        "requests_with_calls": counts.get("calling", 0),
        "call_share": counts.get("calling", 0) / offered,
        "calls": calls,
        "valid_calls": counts.get("valid", 0),
        "tool_call_valid": counts.get("valid", 0) / calls if calls else None,
        "calls_per_s": calls / elapsed_s if elapsed_s > 0 else None,
    }


TOOL_STATS = FeatureStats(KEY, add_tools, merge_tools, tool_metrics, legacy="tool_counts")

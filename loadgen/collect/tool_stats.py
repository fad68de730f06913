"""Requests that offered tools (`workload.tools`): report.json's `metrics.tools`.

Plain mergeable counts in a GroupStats' `tool_counts` (loadgen.collect.run_stats), made only once
a record that offered tools is seen: requests that offered them, those answered with a call, the
calls made and the calls whose arguments parse as a JSON object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from loadgen.collect.columns import Columns

if TYPE_CHECKING:
    from loadgen.collect.run_stats import GroupStats


def add_tools(group: GroupStats, cols: Columns, rows: np.ndarray) -> None:
    calls = cols.tool_calls[rows]
    offered = ~np.isnan(calls)
    if not offered.any():
        return
    counts = group.tool_counts
    _count(counts, "offered", int(offered.sum()))
    _count(counts, "calling", int((calls[offered] > 0).sum()))
    _count(counts, "calls", int(calls[offered].sum()))
    _count(counts, "valid", int(np.nan_to_num(cols.tool_calls_valid[rows][offered]).sum()))


def merge_tools(group: GroupStats, other: GroupStats) -> None:
    for key, count in other.tool_counts.items():
        _count(group.tool_counts, key, count)


def tool_metrics(group: GroupStats, elapsed_s: float) -> dict[str, Any] | None:
    """`metrics.tools`; None when no request of the group offered tools."""
    counts = group.tool_counts
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


def _count(counts: dict[str, int], key: str, value: int) -> None:
    counts[key] = counts.get(key, 0) + value

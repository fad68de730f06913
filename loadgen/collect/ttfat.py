"""TTFAT, time to the first answer token: report.json's `metrics.ttfat_ms`.

DESIGN's rule: TTFT is the first streamed token of any kind (reasoning, answer, tool-call
arguments), TTFAT the first answer token; both are the core's. Its digest (`ttfat_ms` in the
group's `digests`, from the scheduled send, as `ttft_ms`) is made only once a run shows an answer
that was not the first token, or a record whose slice field marked `answer_after` is set (a whole,
unstreamed answer has no token times to show it). Until then every answer began with the first
token, so the digest starts as a copy of the TTFT digest so far (as prefix_stats' unprefixed one
does) and a plain run keeps nothing more. A FeatureStats with no `metrics` object of its own: the
group reports `ttfat_ms` beside the other latencies (ttfat_percentiles).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loadgen.collect.columns import TIMEOUT, Columns
from loadgen.collect.digest import Percentiles
from loadgen.collect.feature_stats import ChunkValues, FeatureStats, Group
from loadgen.collect.request_record import answer_after_fields

TTFAT = "ttfat_ms"


def _answer_may_be_later(cols: Columns, rows: np.ndarray) -> bool:
    """Whether a selected row shows, or a slice's answer_after field says, that its answer may
    not have been its first token (columns._first_answer's rule)."""
    answer, first = cols.first_answer[rows], cols.first_token[rows]
    if (~((answer == first) | (np.isnan(answer) & np.isnan(first)))).any():
        return True
    later = (cols.extra[name.removesuffix("_s")][rows] for name in answer_after_fields())
    return any((np.nan_to_num(values) > 0).any() for values in later)


def add_ttfat(group: Group, cols: Columns, rows: np.ndarray, chunk: ChunkValues) -> None:
    """Take in the selected rows, before the group's `ttft_ms` digest takes this chunk (the copy
    below must hold earlier chunks only)."""
    digests = group.digests
    if TTFAT not in digests:
        if not _answer_may_be_later(cols, rows):
            return
        digests[TTFAT] = digests["ttft_ms"].copy(group.budget)
    ttfat = ttfat_values(cols, rows, chunk.status)
    digests[TTFAT].add(ttfat[~np.isnan(ttfat)])


def ttfat_values(cols: Columns, rows: np.ndarray, status: np.ndarray) -> np.ndarray:
    """TTFAT in ms from the scheduled send of the selected rows (NaN: no answer). As TTFT, a
    timed-out request without an answer counts its elapsed time (a lower bound)."""
    answer = cols.first_answer[rows]
    end = np.where(np.isnan(answer) & (status == TIMEOUT), cols.done[rows], answer)
    values: np.ndarray = (end - cols.scheduled[rows]) * 1000.0
    return values


def merge_ttfat(group: Group, other: Group) -> None:
    """Take in `other`'s TTFAT, before the group's `ttft_ms` digest takes other's."""
    mine, theirs = group.digests, other.digests
    if TTFAT not in mine and TTFAT not in theirs:
        return
    if TTFAT not in mine:  # every request of mine so far answered with its first token
        mine[TTFAT] = mine["ttft_ms"].copy(group.budget)
    mine[TTFAT].merge(theirs[TTFAT] if TTFAT in theirs else theirs["ttft_ms"])


def ttfat_percentiles(group: Group, ttft: Percentiles) -> Percentiles:
    """`metrics.ttfat_ms`: TTFT's own figures in a run where every answer began with the first token."""
    digest = group.digests.get(TTFAT)
    return digest.percentiles() if digest is not None else dict(ttft)


def _no_object(group: Group, elapsed_s: float) -> dict[str, Any] | None:
    return None  # reported as `metrics.ttfat_ms` by the group itself


TTFAT_STATS = FeatureStats("ttfat", add_ttfat, merge_ttfat, _no_object)

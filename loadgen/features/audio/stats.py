"""Transcriptions' figures (`workload.audio`): report.json's `metrics.audio`.

Kept in a GroupStats as plain mergeable values, made only once a record with a recording's length
is seen (a run without transcriptions keeps nothing more): the requests that uploaded a recording
of known length (`requests`), those answered (`answered`), the audio milliseconds of each, and a
digest of each answered request's real-time factor (`audio:rtf`: its latency from the send over
its recording's length; below 1, faster than real time).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from loadgen.collect.columns import OK, Columns
from loadgen.collect.digest import Digest
from loadgen.collect.feature_stats import (
    ChunkValues,
    FeatureStats,
    Group,
    count,
    counts_of,
    merge_counts,
    seen_counts,
)

KEY = "audio"
RTF = "audio:rtf"


class RealTimePart(TypedDict):
    p50: float | None
    p95: float | None
    max: float | None


class AudioPart(TypedDict):
    """`metrics.audio`: `Audio`."""

    requests: int
    audio_s: float
    audio_s_per_request: float | None
    audio_s_per_s: float | None
    real_time_factor: RealTimePart


def add_audio(group: Group, cols: Columns, rows: np.ndarray, chunk: ChunkValues) -> None:
    seconds = cols.extra["audio_seconds"][rows]
    known = ~np.isnan(seconds)
    if not known.any():
        return
    answered = known & (chunk.status == OK)
    counts = counts_of(group, KEY)
    count(counts, "requests", int(known.sum()))
    count(counts, "answered", int(answered.sum()))
    count(counts, "ms", int(np.rint(seconds[known] * 1000).sum()))
    count(counts, "answered_ms", int(np.rint(seconds[answered] * 1000).sum()))
    latency_s = cols.done[rows][answered] - cols.sent[rows][answered]
    group.digests.setdefault(RTF, Digest(group.budget)).add(latency_s / seconds[answered])


def merge_audio(group: Group, other: Group) -> None:
    merge_counts(group, other, KEY)
    if RTF in other.digests:
        group.digests.setdefault(RTF, Digest(group.budget)).merge(other.digests[RTF])


def audio_metrics(group: Group, elapsed_s: float) -> AudioPart | None:
    counts = seen_counts(group, KEY)
    if not counts:
        return None
    rtf = group.digests[RTF].percentiles() if RTF in group.digests else {}
    requests = counts["requests"]
    return {
        "requests": requests,
        "audio_s": counts["ms"] / 1000,
        "audio_s_per_request": counts["ms"] / 1000 / requests if requests else None,
        "audio_s_per_s": counts["answered_ms"] / 1000 / elapsed_s if elapsed_s > 0 else None,
        "real_time_factor": {"p50": rtf.get("p50"), "p95": rtf.get("p95"), "max": rtf.get("max")},
    }


AUDIO_STATS = FeatureStats(KEY, add_audio, merge_audio, audio_metrics)

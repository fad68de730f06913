"""Sends that left later than the client's bound: how many, how late, and whether the lateness
was a moment (a stall) or the client falling behind (sustained).

A run whose schedule-lag p99 crosses `client.max_schedule_lag_p99` is re-judged from two views of
its records (loadgen.report.rejudge), each made here:

- `as_sent`: every late request's latencies reduced by its own lag (its due time moved to when it
  left), i.e. what the server did with it;
- `left_out`: the late requests removed.

Only requests later than the bound are changed: the others' lag is the client's ordinary cost,
inside what the bound allows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

import numpy as np

from loadgen.collect.records import RequestRecord
from loadgen.collect.request_record import RecordLine

Variant = Literal["as_sent", "left_out"]
VARIANTS: tuple[Variant, ...] = ("as_sent", "left_out")
VARIANT_WORDS: dict[Variant, str] = {
    "as_sent": "with their latencies reduced by their lag",
    "left_out": "with them left out",
}


# The client is behind, not stalled, when its lag grows: one stretch of late sends a second long
# (a stall of our own or the machine's is milliseconds), or late stretches covering a quarter of
# the measured time (a client at its limit falls behind again and again; its CPU bound says so
# too); or when most sends are late: then lateness is the client's ordinary pace (or the bound is
# below it), not a stall, and leaving the late sends out would leave little to judge. A tenth of
# the sends late is no sign: at 4 req/s, two sends one stall made late are a tenth of them; a
# machine stealing 30% of a core (measured on a shared CI runner) stalls the client 10-30 ms at a
# time, late stretches covering a few percent of the time.
SUSTAINED_STRETCH_S = 1.0
SUSTAINED_SHARE = 0.25
SUSTAINED_SEND_SHARE = 0.5
# Late sends kept for their times; a run with more is behind, whatever their times say.
MAX_KEPT = 100_000


class LateSendsData(TypedDict):
    """report.json's `client.late_sends`, less `depends` (loadgen.report.rejudge adds it)."""

    bound_ms: float
    count: int
    lag_min_ms: float | None
    lag_max_ms: float | None
    longest_stretch_s: float
    late_share: float
    send_share: float
    sustained: bool


@dataclass(frozen=True)
class LateSends:
    """The late sends of a run (past warm-up): `stretches` are the merged spans (run-clock s)
    from each late send's due time to when it left."""

    bound_ms: float
    count: int
    lag_min_ms: float | None
    lag_max_ms: float | None
    stretches: tuple[tuple[float, float], ...]
    measured_s: float  # the measured traffic time the share is of
    sends: int = 0  # every send past warm-up
    overflow: bool = False  # more than MAX_KEPT late sends
    waits: tuple[tuple[float, float], ...] = ()  # each late send's (due, left), run-clock s

    def during(self, spans: Sequence[tuple[float, float]]) -> int:
        """How many of the late sends waited through part of one of `spans` (the machine's stalls)."""
        return count_overlapping(self.waits, spans)

    @property
    def longest_s(self) -> float:
        return max((end - start for start, end in self.stretches), default=0.0)

    @property
    def late_s(self) -> float:
        return sum(end - start for start, end in self.stretches)

    @property
    def share(self) -> float:
        return self.late_s / self.measured_s if self.measured_s > 0 else 0.0

    @property
    def send_share(self) -> float:
        return self.count / self.sends if self.sends else 0.0

    @property
    def sustained(self) -> bool:
        return (
            self.overflow
            or self.longest_s >= SUSTAINED_STRETCH_S
            or self.share >= SUSTAINED_SHARE
            or self.send_share >= SUSTAINED_SEND_SHARE
        )

    def sustained_words(self) -> str:
        """Why the lateness counts as the client falling behind (only when `sustained`)."""
        if self.overflow:
            return f"over {MAX_KEPT:,} sends were late"
        if self.longest_s >= SUSTAINED_STRETCH_S:
            return f"the client was behind for {self.longest_s:.1f} s in a row"
        if self.share >= SUSTAINED_SHARE:
            return f"the client was behind for {100 * self.share:.0f}% of the measured time"
        return f"most sends were late ({100 * self.send_share:.0f}%)"

    def words(self) -> str:
        """'4 sends were 18-26 ms late'."""
        low, high = _ms(self.lag_min_ms), _ms(self.lag_max_ms)
        span = low if low == high else f"{low}–{high}"
        return f"{self.count} send{'s were' if self.count != 1 else ' was'} {span} ms late"

    def to_dict(self) -> LateSendsData:
        return {
            "bound_ms": self.bound_ms,
            "count": self.count,
            "lag_min_ms": self.lag_min_ms,
            "lag_max_ms": self.lag_max_ms,
            "longest_stretch_s": self.longest_s,
            "late_share": self.share,
            "send_share": self.send_share,
            "sustained": self.sustained,
        }


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}" if value >= 10 else f"{value:.1f}"


class LateSendScan:
    """Collects the late sends a chunk at a time (the one-pass report's chunk hook, or records)."""

    def __init__(self, bound_ms: float) -> None:
        self.bound_ms = bound_ms
        self.count = 0
        self.sends = 0
        self._due: list[np.ndarray] = []
        self._lag: list[np.ndarray] = []
        self._kept = 0

    def add(self, due_s: np.ndarray, lag_ms: np.ndarray) -> None:
        """Due times (run-clock s) and lags (ms) of records past warm-up."""
        self.sends += int(lag_ms.size)
        late = lag_ms > self.bound_ms
        count = int(late.sum())
        if not count:
            return
        self.count += count
        if self._kept < MAX_KEPT:
            self._due.append(due_s[late])
            self._lag.append(lag_ms[late])
            self._kept += count

    def offer(self, chunk: Sequence[RecordLine]) -> None:
        """A chunk of raw record dicts, as read from requests.jsonl."""
        counted = [data for data in chunk if not data.get("warmup")]
        lag = np.fromiter((data.get("lag_ms") or 0.0 for data in counted), np.float64, len(counted))
        if not (lag > self.bound_ms).any():
            self.sends += len(counted)
            return
        due = np.fromiter((data.get("scheduled_s") or 0.0 for data in counted), np.float64, len(counted))
        self.add(due, lag)

    def add_records(self, records: Iterable[RequestRecord]) -> None:
        counted = [record for record in records if not record.warmup]
        self.add(
            np.fromiter((record.scheduled_s for record in counted), np.float64, len(counted)),
            np.fromiter((record.lag_ms for record in counted), np.float64, len(counted)),
        )

    def result(self, measured_s: float) -> LateSends:
        if not self.count:
            return LateSends(self.bound_ms, 0, None, None, (), measured_s, self.sends)
        due, lag = np.concatenate(self._due), np.concatenate(self._lag)
        return LateSends(
            bound_ms=self.bound_ms,
            count=self.count,
            lag_min_ms=float(lag.min()),
            lag_max_ms=float(lag.max()),
            stretches=merge_spans(due, due + lag / 1000.0),
            measured_s=measured_s,
            sends=self.sends,
            overflow=self.count > MAX_KEPT,
            waits=tuple(zip(due.tolist(), (due + lag / 1000.0).tolist(), strict=True)),
        )


def count_overlapping(intervals: Sequence[tuple[float, float]], spans: Sequence[tuple[float, float]]) -> int:
    """How many of `intervals` overlap at least one of `spans` (each a (start, end))."""
    if not spans or not intervals:
        return 0
    starts = np.asarray([start for start, _ in spans])
    ends = np.asarray([end for _, end in spans])
    order = np.argsort(starts)
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    pairs = np.asarray(intervals)
    # the last span to start before an interval ends overlaps it when it ends after the interval began
    last = np.searchsorted(starts, pairs[:, 1], side="right") - 1
    return int(((last >= 0) & (ends[np.maximum(last, 0)] > pairs[:, 0])).sum())


def merge_spans(starts: np.ndarray, ends: np.ndarray) -> tuple[tuple[float, float], ...]:
    """The union of [start, end] spans, as disjoint spans in time order."""
    order = np.argsort(starts, kind="stable")
    merged: list[list[float]] = []
    for start, end in zip(starts[order].tolist(), ends[order].tolist(), strict=True):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return tuple((start, end) for start, end in merged)


def adjust_dicts(chunk: Sequence[RecordLine], variant: Variant, bound_ms: float) -> list[RecordLine]:
    """A chunk of record dicts in one of the views (module docstring)."""
    adjusted: list[RecordLine] = []
    for data in chunk:
        lag = data.get("lag_ms") or 0.0
        if lag <= bound_ms:
            adjusted.append(data)
        elif variant == "as_sent" and data.get("scheduled_s") is not None:
            adjusted.append({**data, "scheduled_s": data["scheduled_s"] + lag / 1000.0, "lag_ms": 0.0})
    return adjusted


def adjust_records(
    records: Iterable[RequestRecord], variant: Variant, bound_ms: float
) -> list[RequestRecord]:
    """Records in memory in one of the views (as adjust_dicts)."""
    adjusted: list[RequestRecord] = []
    for record in records:
        if record.lag_ms <= bound_ms:
            adjusted.append(record)
        elif variant == "as_sent":
            due = record.scheduled_s + record.lag_ms / 1000.0
            adjusted.append(dataclasses.replace(record, scheduled_s=due, lag_ms=0.0))
    return adjusted

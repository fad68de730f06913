"""A drill's measured part in 1-s windows: each judged by the level SLOs on its own requests.

SLO-violation seconds are the seconds of the windows in which any level SLO fails. A window
holding fewer than MIN_WINDOW_REQUESTS requests merges with the next (a p95 of three requests is
noise), and a merged window counts its full length; a trailing remainder merges into the window
before it. Pure: records in, numbers out.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loadgen.collect.records import RequestRecord
from loadgen.collect.stats import PhaseWindow, compute_metrics
from loadgen.evaluate.level_results import level_slo_spec
from loadgen.evaluate.parts import Measured
from loadgen.evaluate.slo import SLOResult, SLOSpec, check_slos

MIN_WINDOW_REQUESTS = 10
WINDOW_S = 1.0
_DIGITS = 6  # run-clock times are floats: k × 1 s added to a start drifts in the last bits


def record_time(record: RequestRecord) -> float:
    """When a record entered the load: its send, or its due time if it was never sent."""
    return record.sent_s if record.sent_s is not None else record.scheduled_s


@dataclass(frozen=True)
class Span:
    """A drill's measured part: the phase its records carry, its run-clock bounds and rate, and
    the SLOs that judge it (the scenario's level SLOs, its classes' and adapters' left out:
    level_results.level_slo_spec)."""

    phase: int
    start_s: float
    end_s: float
    rate: float
    level_slo: SLOSpec

    @classmethod
    def of(cls, phase: int, start_s: float, end_s: float, rate: float, slo: SLOSpec) -> Span:
        # The run's bounds only: a class's or an adapter's share of a 1-s window is too few
        # requests to judge on its own (a search level or a verification judges them).
        return cls(phase, start_s, end_s, rate, level_slo_spec(slo, groups=False))

    def metrics(self, records: Iterable[RequestRecord], start_s: float, end_s: float) -> Measured:
        """report.json's `metrics` of `records` (already picked by time) over [start_s, end_s)."""
        return compute_metrics(records, [PhaseWindow(self.phase, "rate", self.rate, start_s, end_s)])

    def checks(self, metrics: Measured) -> list[SLOResult]:
        """The level SLOs on one set of metrics, as a load level is judged (level_results.py)."""
        return check_slos(self.level_slo, metrics, {})


@dataclass(frozen=True)
class Window:
    """Consecutive 1-s windows merged until they hold enough requests (one, when it did)."""

    start_s: float
    end_s: float
    records: tuple[RequestRecord, ...]
    seconds: int  # 1-s windows it spans

    @property
    def merged(self) -> bool:
        return self.seconds > 1

    @property
    def length_s(self) -> float:
        return round(self.end_s - self.start_s, _DIGITS)


@dataclass(frozen=True)
class WindowVerdict:
    """One entry of a drill's `windows` in report.json: a judged window, its bounds rounded."""

    start_s: float
    end_s: float
    requests: int
    violated: bool
    failed: tuple[str, ...]
    merged: bool
    ttft_p95_ms: float | None
    errors: int


@dataclass(frozen=True)
class JudgedWindow:
    window: Window
    failed: tuple[str, ...]
    ttft_p95_ms: float | None
    errors: int

    @property
    def violated(self) -> bool:
        return bool(self.failed)

    def verdict(self) -> WindowVerdict:
        return WindowVerdict(
            start_s=round(self.window.start_s, _DIGITS),
            end_s=round(self.window.end_s, _DIGITS),
            requests=len(self.window.records),
            violated=self.violated,
            failed=self.failed,
            merged=self.window.merged,
            ttft_p95_ms=self.ttft_p95_ms,
            errors=self.errors,
        )


def second_edges(span: Span, anchor_s: float | None = None) -> list[float]:
    """The 1-s edges over the span, on a grid through `anchor_s` (default: the span's start), so
    a window begins exactly at the disruption's moment (a kill's detection): what came before
    it never shares a window with what came after. The first and last may be shorter."""
    if span.end_s - span.start_s <= 10**-_DIGITS:
        return []
    anchor = span.start_s if anchor_s is None else anchor_s
    first = math.floor(round((span.start_s - anchor) / WINDOW_S, _DIGITS)) + 1
    inner = []
    k = first
    while (edge := anchor + k * WINDOW_S) < span.end_s - 10**-_DIGITS:
        inner.append(edge)
        k += 1
    return [span.start_s, *inner, span.end_s]


def seconds_of(records: Iterable[RequestRecord], edges: Sequence[float]) -> list[list[RequestRecord]]:
    """The records of each window between `edges`. Records sent before the start or past the
    end (a client running late) go to the first or last window: every measured record is judged
    somewhere."""
    bins: list[list[RequestRecord]] = [[] for _ in edges[1:]]
    if not bins:
        return bins
    for record in records:
        index = bisect.bisect_right(edges, record_time(record)) - 1
        bins[min(max(index, 0), len(bins) - 1)].append(record)
    return bins


def merge_seconds(bins: Sequence[Sequence[RequestRecord]], edges: Sequence[float]) -> list[Window]:
    """Consecutive seconds merged until each window holds MIN_WINDOW_REQUESTS; a remainder that
    never gets there joins the window before it (or stands alone when there is none)."""
    windows: list[Window] = []
    pending: list[RequestRecord] = []
    first = 0
    for index, records in enumerate(bins):
        pending += records
        if len(pending) >= MIN_WINDOW_REQUESTS:
            windows.append(Window(edges[first], edges[index + 1], tuple(pending), index + 1 - first))
            pending, first = [], index + 1
    if first < len(bins):
        if windows:
            last = windows.pop()
            records = last.records + tuple(pending)
            windows.append(Window(last.start_s, edges[-1], records, last.seconds + len(bins) - first))
        else:
            windows.append(Window(edges[first], edges[-1], tuple(pending), len(bins) - first))
    return windows


def judge(window: Window, span: Span) -> JudgedWindow:
    metrics = span.metrics(window.records, window.start_s, window.end_s)
    failed = tuple(check.name for check in span.checks(metrics) if not check.passed)
    return JudgedWindow(window, failed, metrics["ttft_ms"].get("p95"), metrics["errors"])


def judged_windows(
    records: Sequence[RequestRecord], span: Span, anchor_s: float | None = None
) -> list[JudgedWindow]:
    """The drill's windows (on a grid through `anchor_s`), judged. None without records:
    nothing was measured to judge (the unaccounted count fails such a drill)."""
    if not records:
        return []
    edges = second_edges(span, anchor_s)
    windows = merge_seconds(seconds_of(records, edges), edges)
    return [judge(window, span) for window in windows]


def violation_s(windows: Iterable[JudgedWindow], from_s: float | None = None) -> float:
    """Seconds of the violating windows (those starting at/after `from_s`, when given)."""
    total = sum(
        judged.window.length_s
        for judged in windows
        if judged.violated and (from_s is None or judged.window.start_s >= from_s - 10**-_DIGITS)
    )
    return round(total, _DIGITS)


def time_to_recover(windows: Sequence[JudgedWindow], start_s: float | None) -> float | None:
    """From the disruption's start to the end of the last violating window (after which every
    window held): 0 when none violated; None when the last one still violated (no recovery)."""
    violating = [judged for judged in windows if judged.violated]
    if not violating:
        return 0.0
    if windows[-1].violated or start_s is None:
        return None
    return round(max(0.0, violating[-1].window.end_s - start_s), _DIGITS)


@dataclass(frozen=True)
class SecondPoint:
    """One entry of a drill's `series` in report.json: one second, never merged."""

    t_s: float
    ttft_p95_ms: float | None
    errors: int
    requests: int
    e2e_p95_ms: float | None = None  # an API of items' latency (no first token)


def series(records: Sequence[RequestRecord], span: Span) -> list[SecondPoint]:
    """Per 1-s window, never merged (charts show what happened each second)."""
    edges = second_edges(span)
    points = []
    for index, own in enumerate(seconds_of(records, edges)):
        metrics = span.metrics(own, edges[index], edges[index + 1]) if own else None
        points.append(
            SecondPoint(
                t_s=round(edges[index], _DIGITS),
                ttft_p95_ms=None if metrics is None else metrics["ttft_ms"].get("p95"),
                errors=0 if metrics is None else metrics["errors"],
                requests=len(own),
                e2e_p95_ms=None if metrics is None else metrics["e2e_ms"].get("p95"),
            )
        )
    return points

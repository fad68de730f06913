"""The maths behind the charts: records as columns, 1-s bins, in-flight means, CDFs, thinning.

All times are seconds on the run clock (as in requests.jsonl); latencies are ms. Everything is
vectorised with numpy: a 100,000-request run is binned in a fraction of a second.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from loadgen.collect.records import RequestRecord, first_answer_s
from loadgen.collect.slice_registry import SLICE_FIELDS, SLICE_GROUPS
from loadgen.collect.stats import PhaseWindow

CDF_POINTS = 300
NAN = float("nan")


@dataclass(frozen=True)
class Columns:
    """Request records as numpy columns; missing times are NaN."""

    scheduled: np.ndarray
    sent: np.ndarray
    first: np.ndarray
    done: np.ndarray
    status: np.ndarray  # "ok" | "error" | "timeout" | "cancelled"
    http_status: np.ndarray  # float, NaN where absent
    output_tokens: np.ndarray
    warmup: np.ndarray  # bool
    phase: np.ndarray
    request_class: np.ndarray
    level: np.ndarray  # float, NaN outside a search
    itl: tuple[list[float], ...]  # per-token gaps; () for a record with an ITL summary
    # The first answer token (reasoning streams): the first token unless reasoning or a tool
    # call came first; NaN where no answer came.
    answer: np.ndarray
    # The slices' numeric record fields (loadgen.features), by name; NaN where a record has none.
    extra: Mapping[str, np.ndarray]
    # The slices' label fields that group the records (SLICE_GROUPS), by name; None where none.
    labels: Mapping[str, np.ndarray]

    @classmethod
    def of(cls, records: Sequence[RequestRecord]) -> Columns:
        def times(values: list[float | None]) -> np.ndarray:
            return np.array([NAN if v is None else v for v in values], dtype=float)

        return cls(
            scheduled=np.array([r.scheduled_s for r in records], dtype=float),
            sent=times([r.sent_s for r in records]),
            first=times([r.first_token_s for r in records]),
            done=times([r.done_s for r in records]),
            status=np.array([r.status for r in records], dtype=object),
            http_status=times([None if r.http_status is None else float(r.http_status) for r in records]),
            output_tokens=np.array([r.output_tokens for r in records], dtype=float),
            warmup=np.array([r.warmup for r in records], dtype=bool),
            phase=np.array([r.phase for r in records], dtype=int),
            request_class=np.array([r.request_class for r in records], dtype=object),
            level=times([r.level for r in records]),
            itl=tuple(r.itl_ms if isinstance(r.itl_ms, list) else [] for r in records),
            answer=times([first_answer_s(r) for r in records]),
            extra={name: times([_slice_number(r, name) for r in records]) for name in _number_fields()},
            labels={grouping.field: _labels(records, grouping.field) for grouping in SLICE_GROUPS},
        )

    def __len__(self) -> int:
        return len(self.scheduled)

    def select(self, mask: np.ndarray) -> Columns:
        picked = np.flatnonzero(mask)
        return Columns(
            scheduled=self.scheduled[picked],
            sent=self.sent[picked],
            first=self.first[picked],
            done=self.done[picked],
            status=self.status[picked],
            http_status=self.http_status[picked],
            output_tokens=self.output_tokens[picked],
            warmup=self.warmup[picked],
            phase=self.phase[picked],
            request_class=self.request_class[picked],
            level=self.level[picked],
            itl=tuple(self.itl[i] for i in picked),
            answer=self.answer[picked],
            extra={name: values[picked] for name, values in self.extra.items()},
            labels={name: values[picked] for name, values in self.labels.items()},
        )

    def counted(self, windows: Sequence[PhaseWindow]) -> Columns:
        """The records the statistics use: past warm-up, in a measured phase (stats.counted_records)."""
        phases = np.array([window.index for window in windows], dtype=int)
        return self.select(~self.warmup & np.isin(self.phase, phases))

    def ttft_end(self) -> np.ndarray:
        """When TTFT ends: the first token, or the timeout for a timed-out request without one."""
        return np.where(np.isnan(self.first) & (self.status == "timeout"), self.done, self.first)

    def ttft_ms(self, from_send: bool = False) -> np.ndarray:
        return _finite((self.ttft_end() - (self.sent if from_send else self.scheduled)) * 1000.0)

    def ttfat_ms(self) -> np.ndarray:
        """Time to the first answer token from the schedule (as report.json's `ttfat_ms`)."""
        end = np.where(np.isnan(self.answer) & (self.status == "timeout"), self.done, self.answer)
        return _finite((end - self.scheduled) * 1000.0)

    def e2e_ms(self, from_send: bool = False) -> np.ndarray:
        # A cancelled request did not complete: no e2e (as in report.json).
        done = np.where(self.status == "cancelled", np.nan, self.done)
        return _finite((done - (self.sent if from_send else self.scheduled)) * 1000.0)

    def itl_ms(self) -> np.ndarray:
        """Every per-token gap, pooled (records with an ITL summary are skipped, as in stats)."""
        total = sum(len(gaps) for gaps in self.itl)
        return np.fromiter(itertools.chain.from_iterable(self.itl), dtype=float, count=total)


def _finite(values: np.ndarray) -> np.ndarray:
    finite: np.ndarray = values[np.isfinite(values)]
    return finite


@dataclass(frozen=True)
class Bins:
    """Bins [edges[i], edges[i+1]) on the run clock; `centers` are where a bin is drawn."""

    edges: np.ndarray

    @classmethod
    def covering(cls, end_s: float, width_s: float = 1.0, start_s: float = 0.0) -> Bins:
        count = max(1, int(np.ceil((end_s - start_s) / width_s - 1e-9)))
        return cls(start_s + width_s * np.arange(count + 1, dtype=float))

    @property
    def width(self) -> np.ndarray:
        return np.diff(self.edges)

    @property
    def centers(self) -> np.ndarray:
        centers: np.ndarray = (self.edges[:-1] + self.edges[1:]) / 2
        return centers

    @property
    def starts(self) -> np.ndarray:
        return self.edges[:-1]

    def index(self, times: np.ndarray) -> np.ndarray:
        """Bin of each time; -1 outside (NaN included)."""
        found = np.searchsorted(self.edges, times, side="right") - 1
        inside = np.isfinite(times) & (found >= 0) & (found < len(self.edges) - 1)
        return np.where(inside, found, -1)

    def rate(self, times: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Events (or the sum of `weights`) per second in each bin."""
        index = self.index(times)
        keep = index >= 0
        counts = np.bincount(
            index[keep], weights=None if weights is None else weights[keep], minlength=len(self.edges) - 1
        )
        rate: np.ndarray = counts.astype(float) / self.width
        return rate


def in_flight_mean(sent: np.ndarray, done: np.ndarray, bins: Bins) -> np.ndarray:
    """Time-averaged number of requests in flight per bin, from [sent, done) intervals.

    F(T) = ∫ N(t) dt up to T = Σ_{s<T} (T − s) − Σ_{d<T} (T − d); a bin's mean is ΔF / width.
    Requests without a send are left out; a request never done counts until the last edge.
    """
    keep = np.isfinite(sent)
    starts = np.sort(sent[keep])
    ends = np.sort(np.where(np.isfinite(done[keep]), done[keep], bins.edges[-1]))

    def integral(points: np.ndarray, at: np.ndarray) -> np.ndarray:
        count = np.searchsorted(points, at, side="left")
        prefix = np.concatenate(([0.0], np.cumsum(points)))
        area: np.ndarray = count * at - prefix[count]
        return area

    area = integral(starts, bins.edges) - integral(ends, bins.edges)
    mean: np.ndarray = np.diff(area) / bins.width
    return mean


def binned_percentiles(
    times: np.ndarray, values: np.ndarray, bins: Bins, quantiles: Sequence[float]
) -> dict[float, np.ndarray]:
    """Per-bin percentiles (numpy's linear interpolation) of `values` binned by `times`.

    One sort for all bins: values are ordered by (bin, value), then each percentile's rank is
    interpolated inside its bin's run. Empty bins are NaN (a gap in the line).
    """
    index = bins.index(times)
    keep = (index >= 0) & np.isfinite(values)
    index, values = index[keep], values[keep]
    order = np.lexsort((values, index))
    ordered = values[order]
    counts = np.bincount(index, minlength=len(bins.edges) - 1)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    result: dict[float, np.ndarray] = {}
    for q in quantiles:
        position = first + (q / 100.0) * np.maximum(counts - 1, 0)
        low = np.floor(position).astype(int)
        high = np.minimum(low + 1, first + np.maximum(counts - 1, 0))
        fraction = position - low
        if len(ordered):
            low_values = ordered[np.minimum(low, len(ordered) - 1)]
            high_values = ordered[np.minimum(high, len(ordered) - 1)]
            picked = low_values + (high_values - low_values) * fraction
        else:
            picked = np.zeros(len(counts))
        result[q] = np.where(counts > 0, picked, np.nan)
    return result


def cdf(values: np.ndarray, max_points: int = CDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(sorted values, fraction ≤ value), thinned to about `max_points` points.

    Points are taken evenly by rank, plus a denser sample of the top 1% (the tail is where
    p99 lives); the smallest and the largest value are always kept.
    """
    data = np.sort(values[np.isfinite(values)])
    n = len(data)
    if n == 0:
        return np.empty(0), np.empty(0)
    fractions = np.arange(1, n + 1, dtype=float) / n
    if n <= max_points:
        return data, fractions
    body = np.linspace(0, n - 1, max_points - max_points // 5)
    tail = n - np.geomspace(max(1.0, n * 0.01), 1.0, max_points // 5)
    picked = np.unique(np.concatenate((body, tail, [0, n - 1])).round().astype(int).clip(0, n - 1))
    return data[picked], fractions[picked]


def thin(x: np.ndarray, y: np.ndarray, max_points: int = 600) -> tuple[np.ndarray, np.ndarray]:
    """At most about `max_points` points, keeping each stretch's minimum and maximum (in order),
    so spikes and dips survive; NaN gaps are kept as gaps where they fall on a kept point."""
    n = len(x)
    if n <= max_points:
        return x, y
    buckets = max(1, max_points // 2)
    edges = np.linspace(0, n, buckets + 1).astype(int)
    keep: list[int] = [0, n - 1]
    for start, end in itertools.pairwise(edges):
        chunk = y[start:end]
        if end <= start or not np.isfinite(chunk).any():
            keep.append(start)
            continue
        keep.extend((start + int(np.nanargmin(chunk)), start + int(np.nanargmax(chunk))))
    picked = np.unique(np.array(keep, dtype=int))
    return x[picked], y[picked]


def theil_sen_line(
    times_s: np.ndarray, values: np.ndarray, slope_per_min: float | None
) -> tuple[np.ndarray, np.ndarray] | None:
    """The Theil–Sen line over the samples' window: the report's slope (per minute) and the
    median intercept, drawn from the first to the last sample; None without a slope."""
    if slope_per_min is None or len(times_s) < 2:
        return None
    slope = slope_per_min / 60.0
    intercept = float(np.median(values - slope * times_s))
    ends = np.array([times_s.min(), times_s.max()])
    return ends, intercept + slope * ends


def _number_fields() -> list[str]:
    """The slices' record fields read as numbers (their column kind)."""
    return [name for name, doc in SLICE_FIELDS.items() if doc.column == "number"]


def _slice_number(record: RequestRecord, name: str) -> float | None:
    """A slice's numeric field of a record (RequestRecord.extra), None where it has none."""
    value = None if record.extra is None else record.extra.get(name)
    return float(value) if isinstance(value, int | float) else None


def _labels(records: Sequence[RequestRecord], name: str) -> np.ndarray:
    """A slice's label field of each record (RequestRecord.extra), None where it has none."""
    labels = np.empty(len(records), dtype=object)  # filled, not made from a list: never 2-D
    labels[:] = [None if r.extra is None else r.extra.get(name) for r in records]
    return labels

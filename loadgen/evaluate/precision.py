"""How sure one load level's numbers are: 95% intervals of its goodput and of each per-level
SLO's statistic. Pure and seeded: `loadtest report` recomputes the same intervals from the files.

A level's requests are not independent draws: in a closed loop a user's next request waits for
its last, and in an open loop a slow stretch of the server slows every request in it. So each
measured window (one per trial) is cut into batches of equal length on the run clock, long
against a request's life (at least `LIFE_BATCHES` median lives and `MIN_BATCH_S`, at most
`MAX_BATCHES` a window), and the batches are the units of the statistics:

- **goodput** (requests/s): batch means, the mean of the batches' goodputs with a Student-t 95%
  interval over them (K batches, K − 1 degrees of freedom). It is the standard method for the
  output of a steady-state simulation: means over long enough batches are close to independent
  where single requests are not. Resampling requests instead would treat a burst as many
  independent draws and understate the spread. An open-loop level's arrivals are the plan's,
  not the server's: what the window served is its arrivals plus the requests in flight at its
  start, less those in flight at its end and those that failed. So below saturation the only
  uncertainty is those edges: the standard error is √(2·var(in flight) + failures) / window,
  the in-flight count sampled at every batch edge (two edges far apart are independent draws of
  it). Past saturation the backlog grows and the batches' goodputs (server-limited) are the
  steadier: an open-loop level takes the smaller standard error of the two.
- **each per-level SLO's statistic** (TTFT p95, error rate, …): a seeded bootstrap over the same
  batches (each resample draws K batches with replacement, a batch bringing every request and
  inter-token gap it holds), the 2.5th–97.5th percentile of the resampled statistic. A
  percentile has no closed-form interval under correlation; resampling whole batches keeps the
  correlation inside them.

Trials are more batches of the same level: the intervals pool every trial's batches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from loadgen.collect.columns import CANCELLED, OK, columns_of
from loadgen.collect.records import RequestRecord
from loadgen.collect.run_stats import latency_values
from loadgen.collect.slice_registry import SLICE_GROUPS
from loadgen.collect.stats import PhaseWindow
from loadgen.collect.ttfat import ttfat_values
from loadgen.evaluate.resampling import repeated_percentiles
from loadgen.evaluate.slo import (
    ClassSLOSpec,
    SLOResult,
    SLOSpec,
    class_prefix,
    group_prefix,
    group_slos,
    latency_limits,
)
from loadgen.evaluate.throughput import served_in_bins

CONFIDENCE = 0.95
MAX_BATCHES = 10  # per measured window: enough for the t interval, each still long
MIN_BATCH_S = 0.1
LIFE_BATCHES = 2.0  # a batch lasts at least this many median request lives
RESAMPLES = 500
_QUANTILES = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99, "p99.9": 0.999}

CheckStatus = Literal["held", "failed", "unresolved"]


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def relative_half_width(self, estimate: float) -> float | None:
        """(high − low) / 2 / estimate; None for an estimate of 0."""
        return (self.high - self.low) / 2 / estimate if estimate > 0 else None

    def as_list(self) -> list[float]:
        return [self.low, self.high]


@dataclass(frozen=True)
class Batches:
    """The batches of a level's windows: their edges on the run clock, window by window."""

    windows: tuple[PhaseWindow, ...]
    edges: tuple[np.ndarray, ...]

    @classmethod
    def of(cls, windows: Sequence[PhaseWindow], life_s: float) -> Batches:
        """Every window cut into the same number of equal batches (trials have equal windows)."""
        length = max(MIN_BATCH_S, LIFE_BATCHES * life_s)
        shortest = min((window.duration_s for window in windows), default=0.0)
        count = int(min(MAX_BATCHES, max(2, shortest // length)))
        edges = tuple(np.linspace(window.start_s, window.end_s, count + 1) for window in windows)
        return cls(tuple(windows), edges)

    @property
    def count(self) -> int:
        return sum(edges.size - 1 for edges in self.edges)

    def goodputs(self, records: Sequence[RequestRecord]) -> np.ndarray:
        """Each batch's goodput (requests/s), window after window."""
        parts = []
        for window, edges in zip(self.windows, self.edges, strict=True):
            requests, _ = served_in_bins(records, window, edges.tolist())
            parts.append(requests / np.diff(edges))
        return np.concatenate(parts) if parts else np.zeros(0)

    def edge_error(self, records: Sequence[RequestRecord]) -> float | None:
        """An open-loop level's standard error of goodput from its windows' edges (see the
        module's docstring): √(Σ 2·var(in flight at the batch edges) + failures) / Σ window."""
        variance = 0.0
        for window, edges in zip(self.windows, self.edges, strict=True):
            own = [record for record in records if record.phase == window.index]
            scheduled = np.fromiter((record.scheduled_s for record in own), float, len(own))
            done = np.fromiter(
                (np.inf if record.done_s is None else record.done_s for record in own), float, len(own)
            )
            in_flight = [int(np.sum((scheduled < edge) & (done >= edge))) for edge in edges]
            failed = sum(
                1
                for record in own
                if record.status != "ok"
                and record.done_s is not None
                and window.start_s <= record.done_s < window.end_s
            )
            variance += 2 * float(np.var(in_flight, ddof=1)) + failed
        total_s = sum(window.duration_s for window in self.windows)
        return float(np.sqrt(variance)) / total_s if total_s > 0 else None

    def owner(self, phase: np.ndarray, scheduled: np.ndarray) -> np.ndarray:
        """The batch of each request (by its phase and scheduled time), −1 for other phases. A
        counted request scheduled at its window's very edge goes to the nearest batch."""
        batch = np.full(phase.size, -1, dtype=np.int64)
        first = 0
        for window, edges in zip(self.windows, self.edges, strict=True):
            inside = phase == window.index
            count = edges.size - 1
            index = np.searchsorted(edges, scheduled[inside], side="right") - 1
            batch[inside] = first + np.clip(index, 0, count - 1)
            first += count
        return batch


def median_life_s(records: Sequence[RequestRecord]) -> float:
    """Median scheduled → done of the successful requests (0 without any)."""
    lives = [r.done_s - r.scheduled_s for r in records if r.status == "ok" and r.done_s is not None]
    return float(np.median(lives)) if lives else 0.0


def mean_interval(values: np.ndarray, other_error: float | None = None) -> Interval | None:
    """Student-t 95% interval of the mean of `values` (K − 1 degrees of freedom); None with
    fewer than 2. `other_error`: another standard error of the same mean (an open-loop level's
    edges): the smaller one is taken."""
    if values.size < 2:
        return None
    mean = float(values.mean())
    spread = float(values.std(ddof=1)) / np.sqrt(values.size)
    if other_error is not None:
        spread = min(spread, other_error)
    # scipy.special, not scipy.stats: the same t quantile (stdtrit is what stats.t.ppf calls),
    # imported here: 0.2 s (0.7 s for scipy.stats) that a run without repeated trials never needs.
    from scipy.special import stdtrit

    margin = float(stdtrit(values.size - 1, (1 + CONFIDENCE) / 2) * spread)
    return Interval(mean - margin, mean + margin)


def _draws(batches: int, seed: int) -> np.ndarray:
    """(RESAMPLES, batches): how often each batch is drawn in each resample."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, batches, size=(RESAMPLES, batches))
    return np.stack([np.bincount(row, minlength=batches) for row in picks])


def _statistics(values: np.ndarray, owner: np.ndarray, draws: np.ndarray, keys: Sequence[str]) -> np.ndarray:
    """(RESAMPLES, len(keys)): each statistic of the values with their batches drawn `draws`
    times; the percentiles are np.percentile's (linear) over the values so repeated."""
    order = np.argsort(values, kind="stable")
    values, owner = values[order], owner[order]
    quantiles = [column for column, key in enumerate(keys) if key in _QUANTILES]
    fractions = np.array([_QUANTILES[keys[column]] for column in quantiles])
    out = np.full((draws.shape[0], len(keys)), np.nan)
    for row, counts in enumerate(draws):
        weights = counts[owner]
        if not weights.any():
            continue
        out[row, quantiles] = repeated_percentiles(values, owner, counts, fractions)
        for column, key in enumerate(keys):
            if key == "mean":
                out[row, column] = float(weights @ values) / float(weights.sum())
            elif key == "max":
                out[row, column] = float(values[weights > 0].max())
    return out


def _interval(samples: np.ndarray) -> Interval | None:
    kept = samples[~np.isnan(samples)]
    if kept.size == 0:
        return None
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(kept, [tail, 100 - tail])
    return Interval(float(low), float(high))


def slo_intervals(
    counted: Sequence[RequestRecord], batches: Batches, slo: SLOSpec, seed: int = 0
) -> dict[str, Interval]:
    """The 95% interval of each per-level SLO check's statistic (keyed by the check's name, in
    its unit: ms, or % for the error and cancel_rate), by a bootstrap over the batches. A class's
    or adapter's checks on its own requests, with the same draws of batches."""
    intervals = _section_intervals(counted, batches, slo, seed)
    for name, spec in slo.classes.items():
        mine = [record for record in counted if record.request_class == name]
        found = _section_intervals(mine, batches, spec, seed)
        intervals.update({class_prefix(name) + check: interval for check, interval in found.items()})
    for grouping in SLICE_GROUPS:
        for name, spec in group_slos(slo, grouping.key).items():
            mine = [record for record in counted if (record.extra or {}).get(grouping.field) == name]
            found = _section_intervals(mine, batches, spec, seed)
            prefix = group_prefix(grouping.label, name)
            intervals.update({prefix + check: interval for check, interval in found.items()})
    return intervals


def _section_intervals(
    counted: Sequence[RequestRecord], batches: Batches, slo: ClassSLOSpec, seed: int
) -> dict[str, Interval]:
    """slo_intervals for the bounds of one section (the top level, a class, an adapter) over
    the requests it judges, keyed by the check's name within the section."""
    if batches.count < 2 or not counted:
        return {}
    cols = columns_of(counted)
    owner = batches.owner(cols.phase, cols.scheduled)
    inside = owner >= 0
    draws = _draws(batches.count, seed)
    values = latency_values(cols, inside, cols.status[inside])
    values["ttfat_ms"] = ttfat_values(cols, inside, cols.status[inside])
    owned = {"itl_ms": owner[cols.itl_owner][inside[cols.itl_owner]]}
    intervals: dict[str, Interval] = {}
    by_metric: dict[str, list[tuple[str, str]]] = {}
    for limit in latency_limits(slo):
        by_metric.setdefault(limit.metric, []).append((limit.name, limit.key))
    for metric, checks in by_metric.items():
        if metric not in values:
            continue  # a nested metric (session_e2e) is not judged per level
        data = values[metric]
        data_owner = owned.get(metric, owner[inside])
        present = ~np.isnan(data)
        if not present.any():
            continue
        keys = [key for _, key in checks]
        resampled = _statistics(data[present], data_owner[present], draws, keys)
        for column, (name, _) in enumerate(checks):
            interval = _interval(resampled[:, column])
            if interval is not None:
                intervals[name] = interval
    intervals.update(_rate_intervals(cols.status[inside], owner[inside], draws, slo))
    return intervals


def _rate_intervals(
    status: np.ndarray, owner: np.ndarray, draws: np.ndarray, slo: ClassSLOSpec
) -> dict[str, Interval]:
    """error_rate (failures of the requests not cancelled) and cancel_rate, in %."""
    batches = draws.shape[1]
    cancelled = status == CANCELLED
    failed = (status != OK) & ~cancelled

    def per_batch(mask: np.ndarray) -> np.ndarray:
        return np.bincount(owner[mask], minlength=batches).astype(float)

    requests = per_batch(np.ones(status.size, dtype=bool))
    rates: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if slo.error_rate is not None:
        rates["error_rate"] = (per_batch(failed), requests - per_batch(cancelled))
    if slo.cancel_rate is not None:
        rates["cancel_rate"] = (per_batch(cancelled), requests)
    intervals = {}
    for name, (count, base) in rates.items():
        with np.errstate(divide="ignore", invalid="ignore"):
            resampled = 100.0 * (draws @ count) / (draws @ base)
        interval = _interval(resampled)
        if interval is not None:
            intervals[name] = interval
    return intervals


def check_status(check: SLOResult, interval: Interval | None, judge_interval: bool) -> CheckStatus:
    """`held` or `failed` when the check's 95% interval lies on one side of its threshold (or,
    not judging intervals, by the point estimate); `unresolved` when it straddles it."""
    if check.observed is None:
        return "failed"
    if not judge_interval or interval is None:
        return "held" if check.passed else "failed"
    upper_bound = check.op == "<="  # the SLO bounds the statistic from above (latency, errors)
    worst, best = (interval.high, interval.low) if upper_bound else (interval.low, interval.high)

    def holds_at(value: float) -> bool:
        return value <= check.threshold if upper_bound else value >= check.threshold

    if check.passed and holds_at(worst):
        return "held"
    if not check.passed and not holds_at(best):
        return "failed"
    return "unresolved"


def check_statuses(
    checks: Sequence[SLOResult], intervals: Mapping[str, Interval], judge_interval: bool
) -> dict[str, CheckStatus]:
    return {check.name: check_status(check, intervals.get(check.name), judge_interval) for check in checks}

"""The statistics of report.json, accumulated in one pass over records in bounded memory.

`RunStats` takes records a chunk at a time (numpy columns) and keeps, for each measured phase and
each workload class, counts and one `Digest` per latency metric; the schedule lag of every record
past warm-up feeds the client-trust check. Memory depends on the number of phases and classes, not
on the number of records: a digest is exact up to its budget and a DDSketch beyond it.

The measurement rules (README, "What a run does") are applied here, vectorised:
- latency counts from the scheduled send time (`*_ms`) and, separately, from the actual send
  (`*_from_send_ms`);
- failed and timed-out requests keep their elapsed time in e2e and count in the error rate;
- a timed-out request without a first token counts its elapsed time as TTFT (a lower bound), but
  an error that never produced a token is left out of TTFT (a fast 503 must not look fast);
- a request the client cancelled (stopped early as planned, status `cancelled`) is no error: it is counted
  in `cancelled` and `cancel_rate` (of all requests), and left out of the error rate, which is
  errors over the requests that were not cancelled. Its first token counts in TTFT and its gaps in
  ITL (the server served them), its tokens in tokens/s (they were sent); it did not complete, so
  it is left out of e2e and TPOT, and its token count (chunks, with no `usage` at the end) out of
  `tokens_source`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from loadgen.collect.columns import CANCELLED, OK, SOURCE_NAMES, TIMEOUT, Columns
from loadgen.collect.digest import EXACT_BUDGET, RELATIVE_ACCURACY, Digest
from loadgen.collect.feature_list import feature_stats
from loadgen.collect.feature_stats import ChunkValues
from loadgen.collect.metrics_parts import MetricsPart, PercentileMethodPart, PhasePart, put_feature
from loadgen.collect.slice_registry import SLICE_GROUPS
from loadgen.collect.ttfat import ttfat_percentiles
from loadgen.collect.windows import PhaseWindow, target_rate

# The latency metrics of a `metrics` object, each a percentile dict.
LATENCY_METRICS = (
    "ttft_ms",
    "ttft_from_send_ms",
    "itl_ms",
    "tpot_ms",
    "e2e_ms",
    "e2e_from_send_ms",
    "schedule_lag_ms",
    "slot_wait_ms",
)


@dataclass
class GroupStats:
    """Counts and latency digests of one set of records (a phase's, a class's, or a union)."""

    budget: int = EXACT_BUDGET
    requests: int = 0
    errors: int = 0
    timeouts: int = 0
    cancelled: int = 0  # by the client, as planned: not errors
    sent: int = 0
    tokens: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    last_send: dict[int, float] = field(default_factory=dict)  # phase → latest send
    sources: set[int] = field(default_factory=set)  # tokens_source codes of records with tokens
    digests: dict[str, Digest] = field(default_factory=dict)
    # Each feature's counts, under its key (loadgen.collect.feature_list; its digests are in
    # `digests`), made only once the feature is seen.
    feature_counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.digests:
            self.digests = {name: Digest(self.budget) for name in LATENCY_METRICS}

    def add(self, cols: Columns, rows: np.ndarray) -> None:
        """Take in the rows of `cols` selected by the boolean mask `rows`."""
        count = int(rows.sum())
        if count == 0:
            return
        status = cols.status[rows]
        self.requests += count
        cancelled = status == CANCELLED
        self.errors += int(((status != OK) & ~cancelled).sum())
        self.timeouts += int((status == TIMEOUT).sum())
        self.cancelled += int(cancelled.sum())
        for index in np.flatnonzero(rows & (cols.status != OK) & (cols.status != CANCELLED)).tolist():
            key = cols.error_key[index] or "other"
            self.error_kinds[key] = self.error_kinds.get(key, 0) + 1
        sent = cols.sent[rows]
        has_sent = ~np.isnan(sent)
        self.sent += int(has_sent.sum())
        self.tokens += int(cols.output_tokens[rows].sum())
        phases = cols.phase[rows]
        paced = has_sent & (cols.turn[rows] <= 1)  # a session's later turns follow answers, not the plan
        for phase in np.unique(phases[paced]).tolist():
            latest = float(sent[paced & (phases == phase)].max())
            self.last_send[phase] = max(self.last_send.get(phase, latest), latest)
        told = (cols.output_tokens[rows] > 0) & ~cancelled  # a cancelled stream never gets its usage
        self.sources.update(np.unique(cols.source[rows][told]).tolist())
        latencies = latency_values(cols, rows, status)
        chunk = ChunkValues(status, latencies)
        for feature in feature_stats():  # before the core's digests take this chunk
            feature.add(self, cols, rows, chunk)
        for name, values in latencies.items():
            self.digests[name].add(values[~np.isnan(values)])

    def merge(self, other: GroupStats) -> None:
        self.requests += other.requests
        self.errors += other.errors
        self.timeouts += other.timeouts
        self.cancelled += other.cancelled
        self.sent += other.sent
        self.tokens += other.tokens
        for key, count in other.error_kinds.items():
            self.error_kinds[key] = self.error_kinds.get(key, 0) + count
        for phase, latest in other.last_send.items():
            self.last_send[phase] = max(self.last_send.get(phase, latest), latest)
        self.sources |= other.sources
        for feature in feature_stats():  # before the core's digests take other's
            feature.merge(self, other)
        for name in LATENCY_METRICS:
            self.digests[name].merge(other.digests[name])

    def metrics(self, windows: Sequence[PhaseWindow]) -> MetricsPart:
        """The `metrics` object of report.json for these records over `windows`."""
        elapsed = self.measured_time_s(windows)
        requests = self.requests
        outcomes = requests - self.cancelled  # a cancelled request might yet have failed: not counted
        digests = self.digests  # each of LATENCY_METRICS, in its order
        ttft_ms = digests["ttft_ms"].percentiles()
        metrics: MetricsPart = {
            "requests": requests,
            "errors": self.errors,
            "timeouts": self.timeouts,
            "errors_by_kind": dict(sorted(self.error_kinds.items())),
            "error_rate": self.errors / outcomes if outcomes else None,
            "cancelled": self.cancelled,
            "cancel_rate": self.cancelled / requests if requests else None,
            "target_rate": target_rate(windows),
            # the sends the plan paced (with sessions, sessions/s, as target_rate: turn 1's)
            "achieved_rate": (self.sent - self._unpaced_sent()) / elapsed if elapsed > 0 else None,
            "output_tokens_per_s": self.tokens / elapsed if elapsed > 0 else None,
            "ttft_ms": ttft_ms,
            "ttft_from_send_ms": digests["ttft_from_send_ms"].percentiles(),
            "itl_ms": digests["itl_ms"].percentiles(),
            "tpot_ms": digests["tpot_ms"].percentiles(),
            "e2e_ms": digests["e2e_ms"].percentiles(),
            "e2e_from_send_ms": digests["e2e_from_send_ms"].percentiles(),
            "schedule_lag_ms": digests["schedule_lag_ms"].percentiles(),
            "slot_wait_ms": digests["slot_wait_ms"].percentiles(),
            "ttfat_ms": ttfat_percentiles(self, ttft_ms),
            "tokens_source": self.tokens_source(),
            "percentile_method": self.method(),
        }
        for feature in feature_stats():
            figures = feature.metrics(self, elapsed)
            if figures is not None:  # only a run that saw the feature reports it
                put_feature(metrics, feature.key, figures)
        return metrics

    def _unpaced_sent(self) -> int:
        return sum(feature.unpaced_sent(self) for feature in feature_stats())

    def measured_time_s(self, windows: Sequence[PhaseWindow]) -> float:
        """Sum over windows of max(end, last send in that phase) − start.

        A client that falls behind sends past the window's end; stretching the window by that
        much makes its achieved rate drop instead of looking on target.
        """
        total = 0.0
        for window in windows:
            end = max(window.end_s, self.last_send.get(window.index, window.end_s))
            total += max(0.0, end - window.start_s)
        return total

    def tokens_source(self) -> str | None:
        # Only records that produced tokens say where their count came from; a failed request's
        # default "chunks" would otherwise turn every "usage" run into "mixed".
        if not self.sources:
            return SOURCE_NAMES[0] if self.tokens else None  # only cancelled streams had tokens
        return SOURCE_NAMES[next(iter(self.sources))] if len(self.sources) == 1 else "mixed"

    def method(self) -> PercentileMethodPart:
        """How these percentiles were computed: exact, or a DDSketch for the metrics past the budget."""
        sketched = [name for name in LATENCY_METRICS if self.digests[name].method == "ddsketch"]
        return {
            "method": "ddsketch" if sketched else "exact",
            "relative_error": RELATIVE_ACCURACY if sketched else 0.0,
            "exact_up_to": self.budget,
            "sketched": sketched,
        }


def latency_values(cols: Columns, rows: np.ndarray, status: np.ndarray) -> dict[str, np.ndarray]:
    """Each latency metric's values (ms, NaN where it does not apply) for the selected rows."""
    scheduled, sent = cols.scheduled[rows], cols.sent[rows]
    first, done = cols.first_token[rows], cols.done[rows]
    ended = np.where(status == CANCELLED, np.nan, done)  # a cancelled request did not complete
    # TTFT ends at the first token, or at the timeout for a timed-out request without one.
    ttft_end = np.where(np.isnan(first) & (status == TIMEOUT), done, first)
    tokens = cols.output_tokens[rows]
    tpot_rows = (status == OK) & (tokens >= 2)
    tpot = np.full(scheduled.size, np.nan)
    tpot[tpot_rows] = (done[tpot_rows] - first[tpot_rows]) * 1000.0 / (tokens[tpot_rows] - 1)
    return {
        "ttft_ms": (ttft_end - scheduled) * 1000.0,
        "ttft_from_send_ms": (ttft_end - sent) * 1000.0,
        "itl_ms": cols.itl[rows[cols.itl_owner]],
        "tpot_ms": tpot,
        "e2e_ms": (ended - scheduled) * 1000.0,
        "e2e_from_send_ms": (ended - sent) * 1000.0,
        "schedule_lag_ms": cols.lag_ms[rows],
        "slot_wait_ms": cols.slot_wait_ms[rows],
    }


class RunStats:
    """Everything report.json states about a run's records, fed a chunk at a time (`add`)."""

    def __init__(self, windows: Sequence[PhaseWindow], budget: int = EXACT_BUDGET) -> None:
        self.windows = list(windows)
        self.budget = budget
        self._measured = np.asarray(sorted({window.index for window in self.windows}), dtype=np.int64)
        self.phases: dict[int, GroupStats] = {window.index: GroupStats(budget) for window in self.windows}
        # Each class's counted records, kept apart only once a second class appears: until then
        # the one class is the whole run (most runs), whose digests would be kept twice.
        self.classes: dict[str, GroupStats] = {}
        self.first_id: dict[str, int] = {}  # each class's first request id (the classes' order)
        self._split = False
        # Each slice grouping's (SLICE_GROUPS, by key) counted records of each group, by name;
        # empty: no record was in one.
        self.groups: dict[str, dict[str, GroupStats]] = {grouping.key: {} for grouping in SLICE_GROUPS}
        self.lag = Digest(budget)  # every record past warm-up, measured phase or not
        self.records = 0

    @classmethod
    def of(cls, chunks: Iterable[Columns], windows: Sequence[PhaseWindow]) -> RunStats:
        stats = cls(windows)
        for chunk in chunks:
            stats.add(chunk)
        return stats

    def add(self, cols: Columns) -> None:
        if len(cols) == 0:
            return
        self.records += len(cols)
        past_warmup = ~cols.warmup
        self.lag.add(cols.lag_ms[past_warmup])
        counted = past_warmup & np.isin(cols.phase, self._measured)
        present = [
            (name, mine)
            for position, name in enumerate(cols.class_names)
            if (mine := cols.request_class == position).any()
        ]
        if not self._split and len({*self.first_id, *(name for name, _ in present)}) > 1:
            self._split = True
            for name in self.first_id:  # a second class: the one seen so far had every record
                self.classes[name] = self._union()
        for index, group in self.phases.items():
            group.add(cols, counted & (cols.phase == index))
        for name, mine in present:
            first = int(cols.id[mine].min())
            self.first_id[name] = min(self.first_id.get(name, first), first)
            if self._split:
                self.classes.setdefault(name, GroupStats(self.budget)).add(cols, counted & mine)
        for grouping in SLICE_GROUPS:
            labels = cols.extra[grouping.field]
            named = self.groups[grouping.key]
            for name in dict.fromkeys(label for label in labels.tolist() if label is not None):
                named.setdefault(name, GroupStats(self.budget)).add(cols, counted & (labels == name))

    def merge(self, other: RunStats) -> None:
        """Take in another RunStats over the same windows (a distributed worker's share): the
        result is what one RunStats fed both sets of records would hold."""
        self.records += other.records
        self.lag.merge(other.lag)
        if not self._split and len({*self.first_id, *other.first_id}) > 1:
            self._split = True
            for name in self.first_id:  # as in add: the one class so far had every record
                self.classes[name] = self._union()
        if self._split:
            theirs = other.classes if other._split else {name: other._union() for name in other.first_id}
            for name, group in theirs.items():
                self.classes.setdefault(name, GroupStats(self.budget)).merge(group)
        for index, group in other.phases.items():
            self.phases.setdefault(index, GroupStats(self.budget)).merge(group)
        for key, groups in other.groups.items():
            named = self.groups.setdefault(key, {})
            for name, group in groups.items():
                named.setdefault(name, GroupStats(self.budget)).merge(group)
        for name, first in other.first_id.items():
            self.first_id[name] = min(self.first_id.get(name, first), first)

    def overall(self) -> GroupStats:
        """Every counted record: the union of the measured phases."""
        if len(self.phases) == 1:
            return next(iter(self.phases.values()))
        return self._union()

    def _union(self) -> GroupStats:
        """A new GroupStats of the measured phases together (theirs are left as they are)."""
        union = GroupStats(self.budget)
        for group in self.phases.values():
            union.merge(group)
        return union

    def class_names(self, named: Sequence[str] = ()) -> list[str]:
        """Classes seen, by their first request's id, then `named` ones without any."""
        seen = sorted(self.first_id, key=self.first_id.__getitem__)
        return list(dict.fromkeys([*seen, *named]))

    def class_metrics(self, named: Sequence[str] = ()) -> dict[str, MetricsPart]:
        """Metrics of each class's counted records. A class's `target_rate` is None: classes are
        drawn per request, so no rate is set for one."""
        empty = GroupStats(self.budget)
        groups = self.classes if self._split else {name: self.overall() for name in self.first_id}
        return {
            name: {**groups.get(name, empty).metrics(self.windows), "target_rate": None}
            for name in self.class_names(named)
        }

    def group_metrics(self, key: str, named: Sequence[str] = ()) -> dict[str, MetricsPart]:
        """Metrics of each group's counted records of grouping `key`, by name (then `named` ones
        without any). `target_rate` is None: groups are drawn per request."""
        empty, groups = GroupStats(self.budget), self.groups.get(key, {})
        return {
            name: {**groups.get(name, empty).metrics(self.windows), "target_rate": None}
            for name in dict.fromkeys([*sorted(groups), *named])
        }

    def phase_list(self, overall: MetricsPart | None = None) -> list[PhasePart]:
        """The `phases` list of report.json: one entry per measured window, in the given order.
        `overall`: the whole run's metrics, already at hand; a single window's are the same."""
        phases: list[PhasePart] = []
        reuse = overall if len(self.windows) == 1 else None
        for window in self.windows:
            metrics = reuse if reuse is not None else self.phases[window.index].metrics([window])
            phases.append(
                {
                    "index": window.index,
                    "kind": window.kind,
                    "target_rate": window.target_rate,
                    "achieved_rate": metrics["achieved_rate"],
                    "requests": metrics["requests"],
                    "metrics": metrics,
                }
            )
        return phases

"""From records to load-level results: the pure half of the search (no clocks, no I/O).

A search run is a sequence of level runs. Each has a measured window (its warm-up cut off) and
tags its records with its own phase index, so the same functions serve the live search (which
picks the next level from them) and `loadtest report` (which recomputes them from the files).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from kernel.strict import StrictModel
from loadgen.collect.records import RequestRecord
from loadgen.collect.slice_registry import SLICE_GROUPS
from loadgen.collect.stats import PhaseWindow, counted_records, run_stats
from loadgen.evaluate.curve import LevelResult, Over
from loadgen.evaluate.parts import Measured
from loadgen.evaluate.precision import Batches, check_statuses, mean_interval, median_life_s, slo_intervals
from loadgen.evaluate.slo import ClassSLOSpec, GroupedMetrics, SLOResult, SLOSpec, check_slos, group_slos
from loadgen.evaluate.throughput import goodput, served
from loadgen.rundir.run_json import LevelEntry

LevelRole = Literal["search", "verify", "verify_one_fewer", "drill"]
# Fewer completions than this in a half window and drift is not judged (too noisy to tell).
MIN_DRIFT_COMPLETIONS = 20
# SLOs that judge one load level. The rest judge the whole run: tokens/s and request-rate floors
# would fail every low level by design; memory growth and cold start belong to the server.
_LEVEL_SLO_FIELDS = ("ttft", "ttfat", "itl", "tpot", "e2e", "error_rate", "cancel_rate")
GroupMetrics = Mapping[str, Measured]  # each class's (or adapter's) report.json metrics


@dataclass(frozen=True)
class LevelWindow:
    """One level run (one trial of a level), as saved in run.json."""

    index: int  # the phase index its records carry
    level: float
    over: Over
    start_s: float  # measured window, seconds since the run's start
    end_s: float
    target_rate: float | None  # requests/s for rate levels; None for concurrency levels
    trial: int = 0
    role: LevelRole = "search"
    replicas: int = 1
    extended: bool = False  # the window was moved past a first, still-drifting one
    cpu_percent: float | None = None  # the load generator's CPU use during this level

    def __post_init__(self) -> None:
        object.__setattr__(self, "over", Over(self.over))  # run.json (and a test) give its value

    def phase_window(self) -> PhaseWindow:
        return PhaseWindow(self.index, self.over, self.target_rate or 0.0, self.start_s, self.end_s)

    def to_dict(self) -> LevelEntry:
        """One entry of run.json's `levels`: the fields, in their order."""
        return {
            "index": self.index,
            "level": self.level,
            "over": self.over,
            "start_s": self.start_s,
            "end_s": self.end_s,
            "target_rate": self.target_rate,
            "trial": self.trial,
            "role": self.role,
            "replicas": self.replicas,
            "extended": self.extended,
            "cpu_percent": self.cpu_percent,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LevelWindow:
        """An entry of run.json's `levels` read back (keys it does not know are left out)."""
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in data.items() if key in known})


def mark_unmeasured(records: Iterable[RequestRecord], windows: Sequence[LevelWindow]) -> list[RequestRecord]:
    """Records of an extended level sent before its (moved) window count as warm-up."""
    starts = {window.index: window.start_s for window in windows if window.extended}
    if not starts:
        return list(records)
    return [
        replace(record, warmup=True)
        if record.phase in starts and not record.warmup and record.scheduled_s < starts[record.phase]
        else record
        for record in records
    ]


def level_slo_spec(spec: SLOSpec, groups: bool = True) -> SLOSpec:
    """The part of the scenario's SLOs that one load level is judged by: the latency and rate
    bounds, and (`groups`) those of each class and each slice's group (an adapter) on its own requests."""

    def kept(section: ClassSLOSpec) -> dict[str, StrictModel]:
        return {name: value for name in _LEVEL_SLO_FIELDS if (value := getattr(section, name)) is not None}

    def kept_each(sections: Mapping[str, ClassSLOSpec]) -> dict[str, dict[str, StrictModel]]:
        return {name: bounds for name, section in sections.items() if (bounds := kept(section))}

    level = kept(spec)
    if not groups:
        return SLOSpec.model_validate(level)
    grouped = {grouping.key: kept_each(group_slos(spec, grouping.key)) for grouping in SLICE_GROUPS}
    return SLOSpec.model_validate({**level, "classes": kept_each(spec.classes), **grouped})


def completion_drift(records: Iterable[RequestRecord], window: PhaseWindow) -> tuple[float | None, bool]:
    """(|b − a| / max(a, b), significant) for what the window's two halves served (throughput.py).

    Drift is None with too few completions to tell. It is significant only when the difference
    is also beyond Poisson noise (3 standard deviations of b − a, i.e. 3·sqrt(a + b)): a short
    level's halves differ by 10% by chance alone, and batches finishing together make steps.
    """
    records = list(records)
    middle = (window.start_s + window.end_s) / 2
    first, _ = served(records, window, window.start_s, middle)
    second, _ = served(records, window, middle, window.end_s)
    if min(first, second) < MIN_DRIFT_COMPLETIONS:
        return None, False
    difference = abs(second - first)
    return difference / max(first, second), difference > 3 * math.sqrt(first + second)


def is_drifting(records: Iterable[RequestRecord], window: PhaseWindow, max_drift: float) -> bool:
    drift, significant = completion_drift(records, window)
    return drift is not None and significant and drift > max_drift


def _percentile_subset(values: Mapping[str, float | None]) -> dict[str, float]:
    keys = ("p50", "p90", "p95", "p99", "mean", "max")
    return {key: value for key in keys if (value := values.get(key)) is not None}


def level_result(
    windows: Sequence[LevelWindow],
    records: Iterable[RequestRecord],
    slo: SLOSpec,
    max_drift: float,
    judge_intervals: bool = False,
    seed: int = 0,
) -> tuple[LevelResult, list[SLOResult]]:
    """One level (all its trials pooled): the `LevelResult` the policy and the knee read, and the
    level's SLO checks. Throughput is the goodput (what the windows served, throughput.py), and
    latencies those of the requests sent in the windows. The goodput's 95% interval and each
    check's come from the windows' batches (precision.py); `judge_intervals` (a search with a
    `precision`): a check holds or fails only when its interval lies on one side of its threshold,
    else it is unresolved; without, the point estimate decides."""
    if not windows:
        raise ValueError("a level needs at least one window")
    phase_windows = [window.phase_window() for window in windows]
    records = list(records)
    counted = counted_records(mark_unmeasured(records, windows), phase_windows)
    stats = run_stats(counted, phase_windows)
    metrics = stats.overall().metrics(phase_windows)
    # A class's or adapter's bounds on its own requests: a level that kept the run's TTFT p95
    # while one class's broke is past that class's SLO, and so past the capacity at SLO.
    level_slo = level_slo_spec(slo)
    classes = stats.class_metrics(list(level_slo.classes)) if level_slo.classes else {}
    groups = {
        grouping.key: stats.group_metrics(grouping.key, list(named))
        for grouping in SLICE_GROUPS
        if (named := group_slos(level_slo, grouping.key))
    }
    level_slo = _sent_any(level_slo, classes, groups)
    checks = check_slos(level_slo, metrics, {}, classes, groups)
    trials = [goodput(records, window) for window in phase_windows]
    total_s = sum(window.duration_s for window in phase_windows)
    throughput = sum(rps * w.duration_s for (rps, _), w in zip(trials, phase_windows, strict=True)) / total_s
    tokens = sum(tps * w.duration_s for (_, tps), w in zip(trials, phase_windows, strict=True)) / total_s
    drifts = [completion_drift(records, window) for window in phase_windows]
    judged = [drift for drift, _ in drifts if drift is not None]
    drift = max(judged) if judged else None
    moving = any(is_drifting(records, window, max_drift) for window in phase_windows)
    batches = Batches.of(phase_windows, median_life_s(counted))
    batch_rps = batches.goodputs(records)
    open_loop = not windows[0].over.closed_loop  # arrivals are the plan's: see precision.py
    interval = mean_interval(batch_rps, batches.edge_error(records) if open_loop else None)
    statuses = check_statuses(checks, slo_intervals(counted, batches, level_slo, seed), judge_intervals)
    result = LevelResult(
        level=windows[0].level,
        throughput_rps=throughput,
        output_tokens_per_s=tokens,
        ttft_ms=_percentile_subset(metrics["ttft_ms"]),
        itl_ms=_percentile_subset(metrics["itl_ms"]),
        e2e_ms=_percentile_subset(metrics["e2e_ms"]),
        error_rate=metrics["error_rate"] or 0.0,
        # A level that measured nothing holds nothing, SLOs or not.
        slo_passed=metrics["requests"] > 0 and all(status == "held" for status in statuses.values()),
        failed_slos=tuple(name for name, status in statuses.items() if status == "failed"),
        trial_rps=tuple(rps for rps, _ in trials) if len(trials) > 1 else (),
        drift=drift,
        steady=None if drift is None else not moving,
        requests=metrics["requests"],
        sessions_per_s=_sessions_per_s(counted, total_s),
        items_per_s=metrics["items"]["items_per_s"] if "items" in metrics else None,
        ci95=None if interval is None else (max(0.0, interval.low), interval.high),
        batch_rps=tuple(float(value) for value in batch_rps),
        trials=len(windows),
        unresolved_slos=tuple(name for name, status in statuses.items() if status == "unresolved"),
    )
    return result, checks


def _sent_any(spec: SLOSpec, classes: GroupMetrics, groups: GroupedMetrics) -> SLOSpec:
    """`spec` without the classes and groups (adapters) the level sent no request of: nothing of theirs
    to judge there. A rare class is often absent from a short low level, and failing it there
    ("not measured") would fail the search's safest levels; the whole run's check still fails
    a class that never had a request."""

    def sent(sections: dict[str, ClassSLOSpec], metrics: GroupMetrics) -> dict[str, ClassSLOSpec]:
        return {name: bounds for name, bounds in sections.items() if metrics[name]["requests"]}

    update = {"classes": sent(spec.classes, classes)}
    for grouping in SLICE_GROUPS:
        update[grouping.key] = sent(group_slos(spec, grouping.key), groups.get(grouping.key, {}))
    return spec.model_copy(update=update)


def _sessions_per_s(counted: Sequence[RequestRecord], total_s: float) -> float | None:
    """Sessions started (turn 1 sent) in the measured windows per second; None without sessions."""
    if total_s <= 0 or not any(record.turn is not None for record in counted):
        return None
    return sum(1 for record in counted if record.turn == 1) / total_s


def group_levels(windows: Iterable[LevelWindow], role: LevelRole = "search") -> list[list[LevelWindow]]:
    """The windows of one role grouped by level (trials together), in the order levels first ran."""
    groups: dict[float, list[LevelWindow]] = {}
    for window in windows:
        if window.role == role:
            groups.setdefault(window.level, []).append(window)
    return list(groups.values())


def search_results(
    windows: Sequence[LevelWindow],
    records: Sequence[RequestRecord],
    slo: SLOSpec,
    max_drift: float,
    judge_intervals: bool = False,
    seed: int = 0,
) -> list[LevelResult]:
    """Every searched level's result, in the order the levels were first run (judged as the
    live search judged them: `judge_intervals` and `seed` as in `level_result`)."""
    return [
        level_result(group, records, slo, max_drift, judge_intervals, seed)[0]
        for group in group_levels(windows)
    ]

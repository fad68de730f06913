"""A drill's verdict (report.json `replicas.verified.drills`) from its setup (run.json's
meta.verify["drills"]) and the records of its phase. Pure: no clocks, no I/O.

A drill passes when the SLO-violation seconds it cost stay within its `max_violation_s` (for a
kill, counted from the balancer's detection on: what went before is the kill itself), every
request it released has a record, and a rolling restart finished.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from loadgen.collect.records import RequestRecord
from loadgen.evaluate.drill_events import (
    DrillSetup,
    Event,
    FleetCounts,
    LostRequests,
    ScaleStep,
    disruption,
    down_intervals,
    find,
    fleet,
    lost_to_kill,
    lost_to_restarts,
    scale_steps,
    survivor_records,
)
from loadgen.evaluate.drill_windows import (
    SecondPoint,
    Span,
    WindowVerdict,
    judged_windows,
    record_time,
    series,
    time_to_recover,
    violation_s,
)
from loadgen.evaluate.slo import SLOResult, SLOSpec
from loadgen.fmt import format_number


@dataclass(frozen=True)
class SteadyP95:
    """A drill's `ttft_p95_ms` or `e2e_p95_ms`: the p95 of the verification level (no disruption)
    and over the disruption, ms."""

    steady: float | None
    disruption: float | None


@dataclass(frozen=True)
class Disruption:
    """A drill's `disruption` on the run clock; `end_s` None when the fleet never came back."""

    start_s: float
    end_s: float | None


@dataclass(frozen=True)
class Survivors:
    """A drill's `survivors`: the level SLOs on the other slots' requests while one was out of
    rotation (`held` None when none was)."""

    held: bool | None
    checks: tuple[SLOResult, ...]


@dataclass(frozen=True)
class DrillResult:
    """One drill's evaluation (the drill contract's "Evaluation" object): one entry of report.json's
    `replicas.verified.drills`."""

    name: str
    kind: str
    replicas: int | None
    from_replicas: int | None
    passed: bool
    reason: str | None
    violation_s: float
    violation_s_after_detection: float
    max_violation_s: float
    windows: tuple[WindowVerdict, ...]
    merged_windows: int
    errors: Mapping[str, int]
    lost: LostRequests | None
    in_flight_at_kill: int | None
    ttft_p95_ms: SteadyP95
    # e2e too: an API of items' whole answers have no first token, so it is their latency
    e2e_p95_ms: SteadyP95
    disruption: Disruption | None
    time_to_detect_s: float | None
    time_to_recover_s: float | None
    replacement_cold_start_s: tuple[float, ...]
    survivors: Survivors
    scale: tuple[ScaleStep, ...] | None
    unaccounted: int
    unfinished: str | None
    fleet: tuple[FleetCounts, ...]
    per_replica: Mapping[str, int]
    series: tuple[SecondPoint, ...]


def evaluate_drills(
    setups: Sequence[DrillSetup],
    records: Sequence[RequestRecord],
    slo: SLOSpec,
    steady_ttft_p95_ms: float | None,
    steady_e2e_p95_ms: float | None = None,
) -> list[DrillResult]:
    """Every drill's evaluation, in the setups' order."""
    return [evaluate_drill(setup, records, slo, steady_ttft_p95_ms, steady_e2e_p95_ms) for setup in setups]


def evaluate_drill(
    setup: DrillSetup,
    records: Sequence[RequestRecord],
    slo: SLOSpec,
    steady_ttft_p95_ms: float | None,
    steady_e2e_p95_ms: float | None = None,
) -> DrillResult:
    """One drill's evaluation (the drill contract's "Evaluation" object)."""
    span = Span.of(setup.phase, setup.start_s, setup.end_s, setup.rate, slo)
    kind, events = setup.kind, setup.events
    phase_records = [record for record in records if record.phase == span.phase]
    measured = [record for record in phase_records if not record.warmup]
    detected = _detection(kind, events)
    bounds = disruption(kind, events, span.start_s)
    # Windows cut at the detection (a kill) or the disruption's start: no window mixes before and after.
    anchor = detected.t_s if detected is not None else bounds[0] if bounds is not None else None
    windows = judged_windows(measured, span, anchor)
    total_s = violation_s(windows)
    # A kill nobody detected forgives nothing: every violating second counts.
    after_s = total_s if kind != "kill" or detected is None else violation_s(windows, detected.t_s)
    unaccounted = setup.planned_requests - len(phase_records)
    max_s = setup.max_violation_s
    reason = _reason(setup, after_s, unaccounted)
    kill = find(events, "kill") if kind == "kill" else None
    during = _disruption_p95(measured, span, bounds)
    return DrillResult(
        name=setup.name,
        kind=kind,
        replicas=setup.replicas,
        from_replicas=setup.from_replicas,
        passed=reason is None,
        reason=reason,
        violation_s=total_s,
        violation_s_after_detection=after_s,
        max_violation_s=max_s,
        windows=tuple(judged.verdict() for judged in windows),
        merged_windows=sum(1 for judged in windows if judged.window.merged),
        errors=_errors(measured, span),
        # Every record of the phase, warm-up too: what was in flight at a kill is what it cost.
        lost=_lost(kind, phase_records, events),
        in_flight_at_kill=None if kill is None else kill.in_flight,
        ttft_p95_ms=SteadyP95(steady=steady_ttft_p95_ms, disruption=during.get("ttft_ms")),
        e2e_p95_ms=SteadyP95(steady=steady_e2e_p95_ms, disruption=during.get("e2e_ms")),
        disruption=None if bounds is None else Disruption(start_s=bounds[0], end_s=bounds[1]),
        time_to_detect_s=None if kill is None or detected is None else round(detected.t_s - kill.t_s, 6),
        time_to_recover_s=time_to_recover(windows, None if bounds is None else bounds[0]),
        replacement_cold_start_s=setup.replacement_cold_start_s,
        survivors=_survivors(measured, events, span),
        scale=tuple(scale_steps(events, setup.initial)) if kind == "scale_up" else None,
        unaccounted=unaccounted,
        unfinished=setup.unfinished,
        fleet=tuple(fleet(setup.initial, events, span.start_s)),
        per_replica=_per_replica(measured),
        series=tuple(series(measured, span)),
    )


def _detection(kind: str, events: Sequence[Event]) -> Event | None:
    """A kill's detection: the balancer taking the killed slot out of rotation."""
    kill = find(events, "kill") if kind == "kill" else None
    return None if kill is None else find(events, "out", kill.replica, kill.t_s)


def _reason(setup: DrillSetup, after_s: float, unaccounted: int) -> str | None:
    """One line naming the drill and each number that failed it; None when it passed."""
    parts = []
    if setup.unfinished:
        parts.append(setup.unfinished)
    max_s = setup.max_violation_s
    if after_s > max_s:
        since = " after detection" if setup.kind == "kill" else ""
        parts.append(f"{format_number(after_s)} s over the SLO{since} (max {format_number(max_s)} s)")
    if unaccounted > 0:
        parts.append(f"{unaccounted} request{'s' if unaccounted != 1 else ''} unaccounted for")
    elif unaccounted < 0:
        parts.append(f"{-unaccounted} more record{'s' if unaccounted != -1 else ''} than requests released")
    return f"drill {setup.name}: {'; '.join(parts)}" if parts else None


def _errors(measured: Sequence[RequestRecord], span: Span) -> dict[str, int]:
    if not measured:
        return {}
    by_kind: dict[str, int] = span.metrics(measured, span.start_s, span.end_s)["errors_by_kind"]
    return by_kind


def _lost(kind: str, records: Sequence[RequestRecord], events: Sequence[Event]) -> LostRequests | None:
    if kind == "kill":
        return lost_to_kill(records, events)
    return lost_to_restarts(records, events) if kind == "rolling_restart" else None


def _disruption_p95(
    measured: Sequence[RequestRecord], span: Span, bounds: tuple[float, float | None] | None
) -> dict[str, float | None]:
    """TTFT and e2e p95 (`ttft_ms`, `e2e_ms`) of the requests sent while the disruption lasted
    (to the drill's end if it did); empty without a disruption or requests in it."""
    if bounds is None:
        return {}
    start, end = bounds[0], span.end_s if bounds[1] is None else bounds[1]
    during = [record for record in measured if start <= record_time(record) < end]
    if not during:
        return {}
    metrics = span.metrics(during, start, end)
    return {key: metrics[key].get("p95") for key in ("ttft_ms", "e2e_ms")}


def _survivors(measured: Sequence[RequestRecord], events: Sequence[Event], span: Span) -> Survivors:
    """The level SLOs on the requests the other slots served while one was out of rotation:
    held None when no slot was out (or nothing was sent meanwhile)."""
    intervals = down_intervals(events, span.end_s)
    kept = survivor_records(measured, intervals)
    if not kept:
        return Survivors(held=None, checks=())
    start = max(span.start_s, min(interval[1] for interval in intervals))
    end = min(span.end_s, max(interval[2] for interval in intervals))
    checks = span.checks(span.metrics(kept, start, max(start, end)))
    return Survivors(held=all(check.passed for check in checks), checks=tuple(checks))


def _per_replica(measured: Sequence[RequestRecord]) -> dict[str, int]:
    counts = Counter(record.replica for record in measured if record.replica is not None)
    return {str(slot): counts[slot] for slot in sorted(counts)}

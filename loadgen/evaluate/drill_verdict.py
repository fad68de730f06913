"""A drill's verdict (report.json `replicas.verified.drills`) from its setup (run.json's
meta.verify["drills"]) and the records of its phase. Pure: no clocks, no I/O.

A drill passes when the SLO-violation seconds it cost stay within its `max_violation_s` (for a
kill, counted from the balancer's detection on: what went before is the kill itself), every
request it released has a record, and a rolling restart finished.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from loadgen.collect.records import RequestRecord
from loadgen.evaluate.drill_events import (
    Event,
    disruption,
    down_intervals,
    events_of,
    find,
    fleet,
    lost_to_kill,
    lost_to_restarts,
    scale_steps,
    survivor_records,
)
from loadgen.evaluate.drill_windows import (
    Span,
    judged_windows,
    record_time,
    series,
    time_to_recover,
    violation_s,
)
from loadgen.evaluate.slo import SLOSpec
from loadgen.fmt import format_number


def evaluate_drills(
    setups: Sequence[Mapping[str, Any]],
    records: Sequence[RequestRecord],
    slo: SLOSpec,
    steady_ttft_p95_ms: float | None,
) -> list[dict[str, Any]]:
    """Every drill's evaluation, in the setups' order."""
    return [evaluate_drill(setup, records, slo, steady_ttft_p95_ms) for setup in setups]


def evaluate_drill(
    setup: Mapping[str, Any],
    records: Sequence[RequestRecord],
    slo: SLOSpec,
    steady_ttft_p95_ms: float | None,
) -> dict[str, Any]:
    """One drill's evaluation (the drill contract's "Evaluation" object)."""
    span = Span.of(setup, slo)
    kind = str(setup["kind"])
    events = events_of(setup)
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
    unaccounted = int(setup.get("planned_requests") or 0) - len(phase_records)
    unfinished: str | None = setup.get("unfinished")
    max_s = float(setup.get("max_violation_s") or 0.0)
    reason = _reason(setup, kind, after_s, max_s, unaccounted, unfinished)
    kill = find(events, "kill") if kind == "kill" else None
    initial: Mapping[str, Sequence[int]] = setup.get("initial") or {}
    return {
        "name": setup.get("name") or kind,
        "kind": kind,
        "replicas": setup.get("replicas"),
        "from_replicas": setup.get("from_replicas"),
        "passed": reason is None,
        "reason": reason,
        "violation_s": total_s,
        "violation_s_after_detection": after_s,
        "max_violation_s": max_s,
        "windows": [judged.to_dict() for judged in windows],
        "merged_windows": sum(1 for judged in windows if judged.window.merged),
        "errors": _errors(measured, span),
        # Every record of the phase, warm-up too: what was in flight at a kill is what it cost.
        "lost": _lost(kind, phase_records, events),
        "in_flight_at_kill": None if kill is None else kill.in_flight,
        "ttft_p95_ms": {"steady": steady_ttft_p95_ms, "disruption": _disruption_ttft(measured, span, bounds)},
        "disruption": None if bounds is None else {"start_s": bounds[0], "end_s": bounds[1]},
        "time_to_detect_s": None if kill is None or detected is None else round(detected.t_s - kill.t_s, 6),
        "time_to_recover_s": time_to_recover(windows, None if bounds is None else bounds[0]),
        "replacement_cold_start_s": _cold_starts(setup),
        "survivors": _survivors(measured, events, span),
        "scale": scale_steps(events, initial) if kind == "scale_up" else None,
        "unaccounted": unaccounted,
        "unfinished": unfinished,
        "fleet": fleet(initial, events, span.start_s),
        "per_replica": _per_replica(measured),
        "series": series(measured, span),
    }


def _detection(kind: str, events: Sequence[Event]) -> Event | None:
    """A kill's detection: the balancer taking the killed slot out of rotation."""
    kill = find(events, "kill") if kind == "kill" else None
    return None if kill is None else find(events, "out", kill.replica, kill.t_s)


def _reason(
    setup: Mapping[str, Any],
    kind: str,
    after_s: float,
    max_s: float,
    unaccounted: int,
    unfinished: str | None,
) -> str | None:
    """One line naming the drill and each number that failed it; None when it passed."""
    parts = []
    if unfinished:
        parts.append(unfinished)
    if after_s > max_s:
        since = " after detection" if kind == "kill" else ""
        parts.append(f"{format_number(after_s)} s over the SLO{since} (max {format_number(max_s)} s)")
    if unaccounted > 0:
        parts.append(f"{unaccounted} request{'s' if unaccounted != 1 else ''} unaccounted for")
    elif unaccounted < 0:
        parts.append(f"{-unaccounted} more record{'s' if unaccounted != -1 else ''} than requests released")
    return f"drill {setup.get('name') or kind}: {'; '.join(parts)}" if parts else None


def _errors(measured: Sequence[RequestRecord], span: Span) -> dict[str, int]:
    if not measured:
        return {}
    by_kind: dict[str, int] = span.metrics(measured, span.start_s, span.end_s)["errors_by_kind"]
    return by_kind


def _lost(kind: str, records: Sequence[RequestRecord], events: Sequence[Event]) -> dict[str, int] | None:
    if kind == "kill":
        return lost_to_kill(records, events)
    return lost_to_restarts(records, events) if kind == "rolling_restart" else None


def _disruption_ttft(
    measured: Sequence[RequestRecord], span: Span, bounds: tuple[float, float | None] | None
) -> float | None:
    """TTFT p95 of the requests sent while the disruption lasted (to the drill's end if it did)."""
    if bounds is None:
        return None
    start, end = bounds[0], span.end_s if bounds[1] is None else bounds[1]
    during = [record for record in measured if start <= record_time(record) < end]
    if not during:
        return None
    p95: float | None = span.metrics(during, start, end)["ttft_ms"].get("p95")
    return p95


def _cold_starts(setup: Mapping[str, Any]) -> list[float]:
    starts = setup.get("replica_starts") or []
    return [float(start["cold_start_s"]) for start in starts if start.get("cold_start_s") is not None]


def _survivors(measured: Sequence[RequestRecord], events: Sequence[Event], span: Span) -> dict[str, Any]:
    """The level SLOs on the requests the other slots served while one was out of rotation:
    held None when no slot was out (or nothing was sent meanwhile)."""
    intervals = down_intervals(events, span.end_s)
    kept = survivor_records(measured, intervals)
    if not kept:
        return {"held": None, "checks": []}
    start = max(span.start_s, min(interval[1] for interval in intervals))
    end = min(span.end_s, max(interval[2] for interval in intervals))
    checks = span.checks(span.metrics(kept, start, max(start, end)))
    return {"held": all(check.passed for check in checks), "checks": [check.to_dict() for check in checks]}


def _per_replica(measured: Sequence[RequestRecord]) -> dict[str, int]:
    counts = Counter(record.replica for record in measured if record.replica is not None)
    return {str(slot): counts[slot] for slot in sorted(counts)}

"""Reading the drills' evaluation (report.json `replicas.verified.drills`, loadgen.evaluate.drill_verdict)
for the gate and every report format: which drills failed, and each one's numbers in words.

One place for these words, so the verdict, report.md, junit.xml, report.html and the environment
comparison say the same thing about a drill.
"""

from __future__ import annotations

from collections.abc import Sequence

from loadgen.fmt import format_number
from loadgen.report.model import Report
from loadgen.report.model.drills import Drill


def drills_of(report: Report) -> list[Drill]:
    """The evaluated drills of a search report (empty for a plain run or a run without drills)."""
    verified = report.replicas.verified if report.replicas else None
    return list(verified.drills or []) if verified else []


def failed_drills(drills: Sequence[Drill]) -> list[Drill]:
    return [drill for drill in drills if not drill.passed]


def seconds(value: float | None) -> str:
    """'3 s', '0.25 s', '–' for a missing value."""
    return "–" if value is None else f"{format_number(float(value))} s"


def _over_budget(drill: Drill) -> bool:
    return drill.violation_s_after_detection > drill.max_violation_s


def failure_words(drill: Drill) -> str:
    """What broke, short and without the budget: 'kill: 3 s over the SLO after detection'.

    Built from the numbers (not by cutting up `reason`), in the order the evaluation judges them:
    the violation budget, requests unaccounted for, a rollout that did not finish."""
    name = drill.name or drill.kind
    if _over_budget(drill):
        after = " after detection" if drill.kind == "kill" else ""
        return f"{name}: {format_number(drill.violation_s_after_detection)} s over the SLO{after}"
    if drill.unaccounted:
        return f"{name}: {drill.unaccounted} request{'s' if drill.unaccounted != 1 else ''} unaccounted for"
    if drill.unfinished:
        return f"{name}: unfinished ({drill.unfinished})"
    return f"{name}: {drill.reason or 'failed'}"


def failure_line(drill: Drill) -> str:
    """The gate's line for a failed drill: its `reason`, or one built from the numbers."""
    if drill.reason:
        return drill.reason
    budget = f" (max {format_number(drill.max_violation_s)} s)"
    return f"drill {failure_words(drill)}{budget if _over_budget(drill) else ''}"


def violation_words(drill: Drill) -> str:
    """'3 / 4 / max 0': SLO-violation seconds after detection / in all / the budget."""
    after = format_number(drill.violation_s_after_detection)
    return f"{after} / {format_number(drill.violation_s)} / max {format_number(drill.max_violation_s)}"


def lost_parts(drill: Drill) -> str:
    """What the lost requests were: 'in flight at the kill, 4 of 4; 2 sent before detection' for a
    kill; 'failed on the restarted replicas while draining' for a rollout; '' otherwise."""
    lost = drill.lost
    if lost is None or drill.kind == "scale_up":
        return ""
    if drill.kind == "rolling_restart":
        return "failed on the restarted replicas while draining"
    at_kill = drill.in_flight_at_kill
    of = f" of {at_kill} at the kill" if at_kill is not None else ""
    return f"{lost.in_flight} in flight{of}, {lost.before_detection} before detection"


def lost_words(drill: Drill) -> str:
    """'6 (4 in flight of 4 at the kill, 2 before detection)', '0', or '–' when not counted."""
    lost = drill.lost
    if lost is None:
        return "–"
    parts = lost_parts(drill)
    return f"{lost.total} ({parts})" if lost.total and parts and drill.kind == "kill" else str(lost.total)


def _no_first_token(drill: Drill) -> bool:
    """Whole answers only (an API of items): no TTFT at all, so the drill's latency is e2e."""
    ttft = drill.ttft_p95_ms
    return ttft.steady is None and ttft.disruption is None and drill.e2e_p95_ms is not None


def latency_name(drills: Sequence[Drill]) -> str:
    """'TTFT', or 'e2e' where none of the drills had a first token to time (ttft_words' figures)."""
    return "e2e" if drills and all(_no_first_token(one) for one in drills) else "TTFT"


def ttft_words(drill: Drill) -> str:
    """'85 → 412 ms': TTFT p95 at the steady verify level, then during the disruption (e2e p95
    where no request had a first token: latency_name says which)."""

    def ms(value: float | None) -> str:
        return "–" if value is None else format_number(round(value))

    pair = drill.e2e_p95_ms if _no_first_token(drill) and drill.e2e_p95_ms is not None else drill.ttft_p95_ms
    return f"{ms(pair.steady)} → {ms(pair.disruption)} ms"


def cold_start_words(drill: Drill) -> str:
    """'2.1, 2.3 s', or '–' when nothing was replaced."""
    starts = drill.replacement_cold_start_s
    return ", ".join(format_number(s) for s in starts) + " s" if starts else "–"


def survivors_words(drill: Drill) -> str:
    """'held', 'FAILED (ttft p95)', or '–' when no replica was out of rotation."""
    held = drill.survivors.held
    if held is None:
        return "–"
    if held:
        return "held"
    failed = [check.name for check in drill.survivors.checks if not check.passed]
    return f"FAILED ({', '.join(failed)})" if failed else "FAILED"


def scale_words(drill: Drill) -> str:
    """scale_up: each added replica's decision → serving, '3.2, 4.1 s'; '–' for other drills."""
    values = [scale.decision_to_serving_s for scale in drill.scale or []]
    return ", ".join(format_number(v) for v in values) + " s" if values else "–"


def errors_words(drill: Drill) -> str:
    """'connection 5, http 1', or 'none'."""
    errors = {kind: count for kind, count in drill.errors.model_dump().items() if count}
    return ", ".join(f"{kind} {count}" for kind, count in sorted(errors.items())) or "none"


def passed_summary(drills: Sequence[Drill]) -> str:
    """'drills: kill passed, rolling_restart passed' (the summary line's part for passing drills)."""
    return "drills: " + ", ".join(f"{drill.name} passed" for drill in drills)

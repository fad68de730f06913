"""Reading the drills' evaluation (report.json `replicas.verified.drills`, loadgen.evaluate.drills)
for the gate and every report format: which drills failed, and each one's numbers in words.

One place for these words, so the verdict, report.md, junit.xml, report.html and the environment
comparison say the same thing about a drill.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadgen.fmt import format_number

Drill = Mapping[str, Any]


def drills_of(report: Mapping[str, Any]) -> list[Drill]:
    """The evaluated drills of a search report (empty for a plain run or a run without drills)."""
    verified = (report.get("replicas") or {}).get("verified") or {}
    return list(verified.get("drills") or [])


def failed_drills(drills: Sequence[Drill]) -> list[Drill]:
    # `passed` is False only when evaluated and failed; anything else never fails the gate.
    return [drill for drill in drills if drill.get("passed") is False]


def seconds(value: Any) -> str:
    """'3 s', '0.25 s', '–' for a missing value."""
    return "–" if value is None else f"{format_number(float(value))} s"


def _over_slo(drill: Drill) -> float:
    return float(drill.get("violation_s_after_detection") or 0.0)


def _over_budget(drill: Drill) -> bool:
    return _over_slo(drill) > float(drill.get("max_violation_s") or 0.0)


def failure_words(drill: Drill) -> str:
    """What broke, short and without the budget: 'kill: 3 s over the SLO after detection'.

    Built from the numbers (not by cutting up `reason`), in the order the evaluation judges them:
    the violation budget, requests unaccounted for, a rollout that did not finish."""
    name = str(drill.get("name") or drill.get("kind") or "drill")
    if _over_budget(drill):
        after = " after detection" if drill.get("kind") == "kill" else ""
        return f"{name}: {format_number(_over_slo(drill))} s over the SLO{after}"
    unaccounted = int(drill.get("unaccounted") or 0)
    if unaccounted:
        return f"{name}: {unaccounted} request{'s' if unaccounted != 1 else ''} unaccounted for"
    if drill.get("unfinished"):
        return f"{name}: unfinished ({drill['unfinished']})"
    return f"{name}: {drill.get('reason') or 'failed'}"


def failure_line(drill: Drill) -> str:
    """The gate's line for a failed drill: its `reason`, or one built from the numbers."""
    if drill.get("reason"):
        return str(drill["reason"])
    budget = f" (max {format_number(float(drill.get('max_violation_s') or 0.0))} s)"
    return f"drill {failure_words(drill)}{budget if _over_budget(drill) else ''}"


def violation_words(drill: Drill) -> str:
    """'3 / 4 / max 0': SLO-violation seconds after detection / in all / the budget."""
    after = format_number(_over_slo(drill))
    total = format_number(float(drill.get("violation_s") or 0.0))
    return f"{after} / {total} / max {format_number(float(drill.get('max_violation_s') or 0.0))}"


def lost_parts(drill: Drill) -> str:
    """What the lost requests were: 'in flight at the kill, 4 of 4; 2 sent before detection' for a
    kill; 'failed on the restarted replicas while draining' for a rollout; '' otherwise."""
    lost = drill.get("lost") or {}
    if drill.get("kind") == "rolling_restart" and lost:
        return "failed on the restarted replicas while draining"
    if drill.get("kind") != "kill" or not lost:
        return ""
    parts = []
    if lost.get("in_flight") is not None:
        at_kill = drill.get("in_flight_at_kill")
        of = f" of {at_kill} at the kill" if at_kill is not None else ""
        parts.append(f"{lost['in_flight']} in flight{of}")
    if lost.get("before_detection") is not None:
        parts.append(f"{lost['before_detection']} before detection")
    return ", ".join(parts)


def lost_words(drill: Drill) -> str:
    """'6 (4 in flight of 4 at the kill, 2 before detection)', '0', or '–' when not counted."""
    lost = drill.get("lost")
    if not lost:
        return "–"
    total, parts = int(lost.get("total") or 0), lost_parts(drill)
    return f"{total} ({parts})" if total and parts and drill.get("kind") == "kill" else str(total)


def ttft_words(drill: Drill) -> str:
    """'85 → 412 ms': TTFT p95 at the steady verify level, then during the disruption."""
    ttft = drill.get("ttft_p95_ms") or {}

    def ms(value: Any) -> str:
        return "–" if value is None else format_number(round(float(value)))

    return f"{ms(ttft.get('steady'))} → {ms(ttft.get('disruption'))} ms"


def cold_start_words(drill: Drill) -> str:
    """'2.1, 2.3 s', or '–' when nothing was replaced."""
    starts = drill.get("replacement_cold_start_s") or []
    return ", ".join(format_number(float(s)) for s in starts) + " s" if starts else "–"


def survivors_words(drill: Drill) -> str:
    """'held', 'FAILED (ttft p95)', or '–' when no replica was out of rotation."""
    survivors = drill.get("survivors") or {}
    held = survivors.get("held")
    if held is None:
        return "–"
    if held:
        return "held"
    failed = [str(c.get("name")) for c in survivors.get("checks") or [] if c.get("passed") is False]
    return f"FAILED ({', '.join(failed)})" if failed else "FAILED"


def scale_words(drill: Drill) -> str:
    """scale_up: each added replica's decision → serving, '3.2, 4.1 s'; '–' for other drills."""
    scale = drill.get("scale") or []
    values = [s.get("decision_to_serving_s") for s in scale]
    return ", ".join("–" if v is None else format_number(float(v)) for v in values) + " s" if values else "–"


def errors_words(drill: Drill) -> str:
    """'connection 5, http 1', or 'none'."""
    errors = {kind: count for kind, count in (drill.get("errors") or {}).items() if count}
    return ", ".join(f"{kind} {count}" for kind, count in sorted(errors.items())) or "none"


def passed_summary(drills: Sequence[Drill]) -> str:
    """'drills: kill passed, rolling_restart passed' (the summary line's part for passing drills)."""
    return "drills: " + ", ".join(f"{drill.get('name')} passed" for drill in drills)

"""report.md's evaluator sections: the load curve with its knee, capacity at SLO, the replica plan,
its verification and drills. Empty for a plain run (no `knee`, `capacity` or `replicas`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadgen.evaluate.capacity import capacity_words
from loadgen.fmt import format_number
from loadgen.report import drill_facts as drill


def _num(value: Any, unit: str = "") -> str:
    if value is None:
        return "–"
    return f"{format_number(float(value))}{' ' + unit if unit else ''}"


def _pair(values: Mapping[str, Any] | None) -> str:
    values = values or {}
    return f"{_num(values.get('p50'))} / {_num(values.get('p95'))}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(row) for row in rows), ""]


def _steady(level: Mapping[str, Any]) -> str:
    if level.get("steady") is None:
        return "–"
    return "yes" if level["steady"] else f"no ({format_number(100 * float(level['drift']))}% drift)"


def curve_lines(knee: Mapping[str, Any]) -> list[str]:
    over = knee["over"]
    # levels whose users or arrivals hold sessions: each level's achieved sessions/s beside its req/s
    sessions = any(level.get("sessions_per_s") is not None for level in knee.get("levels", []))
    lines = ["## Load curve and knee", ""]
    if knee.get("level") is None:
        lines.append(
            f"No knee found: p95 latency never grew faster than throughput over the {over} levels run."
        )
    else:
        lines.append(
            f"Knee at {over} **{_num(knee['level'])}**{' sessions/s' if sessions and over == 'rate' else ''} "
            f"({_num(knee.get('throughput_rps'), 'req/s')}): "
            f"from there on {knee.get('latency', 'e2e p95')} grows faster than throughput "
            "(elasticity > 1) and throughput gains flatten."
        )
    kneed = knee.get("kneed_level")
    agreement = "agrees" if knee.get("agree") else "differs"
    lines += [
        f"Cross-check (kneed on {knee.get('kneed_on', 'throughput vs level')}): {_num(kneed)} — {agreement}.",
        "",
    ]
    rows = [
        [
            _num(level["level"]),
            *([_num(level.get("sessions_per_s"))] if sessions else []),
            _num(level["throughput_rps"]),
            sureness(level),
            _num(level["output_tokens_per_s"]),
            _pair(level.get("ttft_ms")),
            _pair(level.get("itl_ms")),
            _pair(level.get("e2e_ms")),
            _num(100 * float(level.get("error_rate") or 0.0), "%"),
            slo_words(level),
            _steady(level),
        ]
        for level in knee.get("levels", [])
    ]
    level = f"{over} (sessions/s)" if sessions and over == "rate" else over
    header = [level, *(["sessions/s"] if sessions else []), "req/s", "95% CI (trials)", "tok/s"]
    header += ["TTFT p50/p95 ms", "ITL p50/p95 ms", "e2e p50/p95 ms", "errors"]
    return [*lines, *_table([*header, "SLOs", "steady"], rows)]


def sureness(level: Mapping[str, Any]) -> str:
    """A level's goodput interval and trials: '55.1–58.9 (±3.3%, 2)'."""
    ci, precision, trials = level.get("ci95"), level.get("precision"), level.get("trials")
    if not ci:
        return f"– ({trials})" if trials else "–"
    spread = f"±{100 * float(precision):.1f}%, " if precision is not None else ""
    return f"{_num(ci[0])}–{_num(ci[1])} ({spread}{trials})"


def slo_words(level: Mapping[str, Any]) -> str:
    """held, failed: <checks>, or unresolved: <checks> (an interval still straddles its SLO)."""
    if level["slo_passed"]:
        return "held"
    if level.get("slo_verdict") == "unresolved":
        return "unresolved: " + ", ".join(level.get("unresolved_slos") or [])
    return "failed: " + ", ".join(level.get("failed_slos") or [])


def capacity_lines(capacity: Mapping[str, Any]) -> list[str]:
    ci = capacity.get("ci95")
    interval = f", 95% CI {_num(ci[0])}–{_num(ci[1])} req/s" if ci else ""
    trials = capacity.get("trials")
    if ci and trials:
        interval += f" ({trials} trial{'s' if trials != 1 else ''})"
    limiting = capacity.get("limiting_slo")
    limit = f"; the next level up broke {limiting}" if limiting else ""
    lines = [
        "## Capacity at SLO",
        "",
        f"{capacity_words(capacity)} ({_num(capacity.get('output_tokens_per_s'), 'tok/s')}) "
        f"per replica, at level {_num(capacity.get('level'))}{interval}{limit}.",
    ]
    grid = capacity.get("grid")
    if grid and grid.get("note"):
        lines.append(f"The grid: {grid['note']}.")
    elif grid:
        within = "within" if grid.get("within_precision") else "wider than"
        lines.append(
            f"The next level run was {_num(grid['next_level'])}, {100 * float(grid['step']):.1f}% above: "
            f"{within} the search's precision."
        )
    return [*lines, ""]


def _verify_row(label: str, check: Mapping[str, Any] | None) -> list[str]:
    if check is None:
        return [label, "–", "–", "–", "–", "not run"]
    return [
        label,
        str(check["replicas"]),
        _num(check.get("rate_rps")),
        _num((check.get("ttft_ms") or {}).get("p95")),
        _num((check.get("e2e_ms") or {}).get("p95")),
        "held" if check["passed"] else "failed",
    ]


def replica_lines(replicas: Mapping[str, Any]) -> list[str]:
    lines = ["## Replica plan", ""]
    if replicas.get("count") is None:
        return [*lines, f"No plan: {replicas.get('error', 'no capacity measured')}.", ""]
    sized = "capacity × target utilisation, plus redundancy"
    if replicas.get("plan_on") == "lower":
        sized = "the lower bound of the capacity's 95% interval × target utilisation, plus redundancy"
    lines.append(
        f"**{replicas.get('summary') or str(replicas['count']) + ' replicas'}** for a peak of "
        f"{_num(replicas['peak_rate'], replicas.get('unit', 'req/s'))}: "
        f"{replicas['formula']} ({sized})."
    )
    if replicas.get("monthly_cost") is not None:
        lines.append(
            f"Cost: {_num(replicas.get('cost_per_million_tokens'))} per million output tokens at capacity, "
            f"{_num(replicas['monthly_cost'])} per month for the plan."
        )
    lines.append("")
    verified = replicas.get("verified")
    if not verified:
        return lines
    if verified.get("skipped"):
        return [*lines, f"Verification skipped: {verified['skipped']}.", ""]
    rows = [_verify_row("plan", verified.get("at_plan")), _verify_row("one fewer", verified.get("one_fewer"))]
    verdict = "held" if verified["passed"] else "did NOT hold"
    lines += [f"Verified at the peak rate, spread round robin: the plan {verdict}.", ""]
    sent = f"{replicas.get('unit', 'req/s')} sent"
    lines += _table(["run", "replicas", sent, "TTFT p95 ms", "e2e p95 ms", "SLOs"], rows)
    return lines + drill_lines(verified.get("drills") or [])


def _drill_row(one: Mapping[str, Any], scale_up: bool) -> list[str]:
    return [
        str(one.get("name")),
        str(one.get("kind")),
        "yes" if one.get("passed") else "**NO**",
        drill.violation_words(one),
        drill.seconds(one.get("time_to_detect_s")),
        drill.seconds(one.get("time_to_recover_s")),
        drill.lost_words(one),
        drill.ttft_words(one),
        drill.cold_start_words(one),
        drill.survivors_words(one),
        str(one.get("unaccounted", "–")),
        *([drill.scale_words(one)] if scale_up else []),
    ]


def drill_lines(drills: Sequence[Mapping[str, Any]]) -> list[str]:
    """The drills after the verification: a row each, then each failed drill's reason."""
    if not drills:
        return []
    failed = drill.failed_drills(drills)
    lines = [
        "## Drills",
        "",
        f"{len(drills) - len(failed)} of {len(drills)} drill{'s' if len(drills) != 1 else ''} passed, "
        "each a load level at the peak with a disruption in it. Violation: seconds over a per-level "
        "SLO from the balancer's detection on / in all / the drill's budget.",
        "",
    ]
    # The decision → serving column only where a scale-up ran: empty for every other kind.
    scale_up = any(one.get("kind") == "scale_up" for one in drills)
    header = ["drill", "kind", "passed", "violation s (after detection / total / max)"]
    header += ["time to detect", "time to recover", "lost requests", "TTFT p95 steady → disruption"]
    header += ["replacement cold start", "survivors", "unaccounted"]
    header += ["scale-up decision → serving"] if scale_up else []
    lines += _table(header, [_drill_row(one, scale_up) for one in drills])
    if failed:
        lines += ["Failed:", "", *(f"- {drill.failure_line(one)}" for one in failed), ""]
    return lines


def evaluation_lines(report: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    if report.get("knee"):
        lines += curve_lines(report["knee"])
    if report.get("capacity"):
        lines += capacity_lines(report["capacity"])
    if report.get("replicas"):
        lines += replica_lines(report["replicas"])
    return lines

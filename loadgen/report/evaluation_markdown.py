"""report.md's evaluator sections: the load curve with its knee, capacity at SLO, the replica plan,
its verification and drills. Empty for a plain run (no `knee`, `capacity` or `replicas`)."""

from __future__ import annotations

from collections.abc import Sequence

from loadgen.evaluate.curve import Over
from loadgen.fmt import format_number
from loadgen.report import drill_facts as drill
from loadgen.report.model import Report
from loadgen.report.model.drills import Drill
from loadgen.report.model.evaluation import Capacity, Knee, KneeLevel, Replicas, VerifyRun
from loadgen.report.model.metrics import LevelPercentiles
from loadgen.report.words import capacity_words


def _num(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    return f"{format_number(float(value))}{' ' + unit if unit else ''}"


def _pair(values: LevelPercentiles | None) -> str:
    values = values or LevelPercentiles()
    return f"{_num(values.p50)} / {_num(values.p95)}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(row) for row in rows), ""]


def _steady(level: KneeLevel) -> str:
    if level.steady is None:
        return "–"
    return "yes" if level.steady else f"no ({format_number(100 * float(level.drift or 0.0))}% drift)"


def curve_lines(knee: Knee) -> list[str]:
    over = knee.over
    # levels whose users or arrivals hold sessions: each level's achieved sessions/s beside its req/s
    sessions = any(level.sessions_per_s is not None for level in knee.levels)
    lines = ["## Load curve and knee", ""]
    if knee.level is None:
        lines.append(
            f"No knee found: p95 latency never grew faster than throughput over the {over} levels run."
        )
    else:
        lines.append(
            f"Knee at {over} **{_num(knee.level)}**{' sessions/s' if sessions and over == 'rate' else ''} "
            f"({_num(knee.throughput_rps, 'req/s')}): "
            f"from there on {knee.latency} grows faster than throughput "
            "(elasticity > 1) and throughput gains flatten."
        )
    agreement = "agrees" if knee.agree else "differs"
    lines += [f"Cross-check (kneed on {knee.kneed_on}): {_num(knee.kneed_level)} — {agreement}.", ""]
    # Whole answers only (an API of items): items/s instead of tokens/s, and no token times
    whole = all(level.items_per_s is not None and not level.output_tokens_per_s for level in knee.levels)
    rows = [
        [
            _num(level.level),
            *([_num(level.sessions_per_s)] if sessions else []),
            _num(level.throughput_rps),
            sureness(level),
            *([_num(level.items_per_s)] if whole else [_num(level.output_tokens_per_s)]),
            *([] if whole else [_pair(level.ttft_ms), _pair(level.itl_ms)]),
            _pair(level.e2e_ms),
            _num(100 * level.error_rate, "%"),
            slo_words(level),
            _steady(level),
        ]
        for level in knee.levels
    ]
    level = f"{over} (sessions/s)" if sessions and over == Over.RATE.value else over
    header = [level, *(["sessions/s"] if sessions else []), "req/s", "95% CI (trials)"]
    header += ["items/s"] if whole else ["tok/s", "TTFT p50/p95 ms", "ITL p50/p95 ms"]
    header += ["e2e p50/p95 ms", "errors"]
    return [*lines, *_table([*header, "SLOs", "steady"], rows)]


def sureness(level: KneeLevel) -> str:
    """A level's goodput interval and trials: '55.1–58.9 (±3.3%, 2)'."""
    ci, precision, trials = level.ci95, level.precision, level.trials
    if not ci:
        return f"– ({trials})" if trials else "–"
    spread = f"±{100 * precision:.1f}%, " if precision is not None else ""
    return f"{_num(ci[0])}–{_num(ci[1])} ({spread}{trials})"


def slo_words(level: KneeLevel) -> str:
    """held, failed: <checks>, or unresolved: <checks> (an interval still straddles its SLO)."""
    if level.slo_passed:
        return "held"
    if level.slo_verdict == "unresolved":
        return "unresolved: " + ", ".join(level.unresolved_slos)
    return "failed: " + ", ".join(level.failed_slos)


def _beside(capacity: Capacity) -> str:
    """What the capacity carries beside its requests: items/s for an API of items, else tokens/s."""
    if capacity.items_per_s is not None:
        return _num(capacity.items_per_s, "items/s")
    return _num(capacity.output_tokens_per_s, "tok/s")


def capacity_lines(capacity: Capacity) -> list[str]:
    ci = capacity.ci95
    interval = f", 95% CI {_num(ci[0])}–{_num(ci[1])} req/s" if ci else ""
    trials = capacity.trials
    if ci and trials:
        interval += f" ({trials} trial{'s' if trials != 1 else ''})"
    limiting = capacity.limiting_slo
    limit = f"; the next level up broke {limiting}" if limiting else ""
    lines = [
        "## Capacity at SLO",
        "",
        f"{capacity_words(capacity)} ({_beside(capacity)}) "
        f"per replica, at level {_num(capacity.level)}{interval}{limit}.",
    ]
    grid = capacity.grid
    if grid and grid.note:
        lines.append(f"The grid: {grid.note}.")
    elif grid:
        within = "within" if grid.within_precision else "wider than"
        lines.append(
            f"The next level run was {_num(grid.next_level)}, {100 * grid.step:.1f}% above: "
            f"{within} the search's precision."
        )
    return [*lines, ""]


def _verify_row(label: str, check: VerifyRun | None, ttft: bool) -> list[str]:
    if check is None:
        return [label, "–", "–", *(["–"] if ttft else []), "–", "not run"]
    return [
        label,
        str(check.replicas),
        _num(check.rate_rps),
        *([_num(check.ttft_ms.p95)] if ttft else []),
        _num(check.e2e_ms.p95),
        "held" if check.passed else "failed",
    ]


def replica_lines(replicas: Replicas) -> list[str]:
    lines = ["## Replica plan", ""]
    if replicas.count is None:
        return [*lines, f"No plan: {replicas.error or 'no capacity measured'}.", ""]
    sized = "capacity × target utilisation, plus redundancy"
    if replicas.plan_on == "lower":
        sized = "the lower bound of the capacity's 95% interval × target utilisation, plus redundancy"
    lines.append(
        f"**{replicas.summary or str(replicas.count) + ' replicas'}** for a peak of "
        f"{_num(replicas.peak_rate, replicas.unit)}: {replicas.formula} ({sized})."
    )
    if replicas.monthly_cost is not None and replicas.cost_per_million_tokens is None:
        lines.append(f"Cost: {_num(replicas.monthly_cost)} per month for the plan.")  # no output tokens
    elif replicas.monthly_cost is not None:
        lines.append(
            f"Cost: {_num(replicas.cost_per_million_tokens)} per million output tokens at capacity, "
            f"{_num(replicas.monthly_cost)} per month for the plan."
        )
    lines.append("")
    verified = replicas.verified
    if not verified:
        return lines
    if verified.skipped:
        return [*lines, f"Verification skipped: {verified.skipped}.", ""]
    # Whole answers (an API of items) have no first token: no TTFT column
    ttft = any(
        check is not None and check.ttft_ms.p95 is not None
        for check in (verified.at_plan, verified.one_fewer)
    )
    rows = [_verify_row("plan", verified.at_plan, ttft), _verify_row("one fewer", verified.one_fewer, ttft)]
    verdict = "held" if verified.passed else "did NOT hold"
    lines += [f"Verified at the peak rate, spread round robin: the plan {verdict}.", ""]
    sent = f"{replicas.unit} sent"
    lines += _table(["run", "replicas", sent, *(["TTFT p95 ms"] if ttft else []), "e2e p95 ms", "SLOs"], rows)
    return lines + drill_lines(verified.drills or [])


def _drill_row(one: Drill, scale_up: bool) -> list[str]:
    return [
        one.name,
        one.kind,
        "yes" if one.passed else "**NO**",
        drill.violation_words(one),
        drill.seconds(one.time_to_detect_s),
        drill.seconds(one.time_to_recover_s),
        drill.lost_words(one),
        drill.ttft_words(one),
        drill.cold_start_words(one),
        drill.survivors_words(one),
        str(one.unaccounted),
        *([drill.scale_words(one)] if scale_up else []),
    ]


def drill_lines(drills: Sequence[Drill]) -> list[str]:
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
    scale_up = any(one.kind == "scale_up" for one in drills)
    header = ["drill", "kind", "passed", "violation s (after detection / total / max)"]
    latency = f"{drill.latency_name(drills)} p95 steady → disruption"
    header += ["time to detect", "time to recover", "lost requests", latency]
    header += ["replacement cold start", "survivors", "unaccounted"]
    header += ["scale-up decision → serving"] if scale_up else []
    lines += _table(header, [_drill_row(one, scale_up) for one in drills])
    if failed:
        lines += ["Failed:", "", *(f"- {drill.failure_line(one)}" for one in failed), ""]
    return lines


def evaluation_lines(report: Report) -> list[str]:
    lines: list[str] = []
    if report.knee:
        lines += curve_lines(report.knee)
    if report.capacity:
        lines += capacity_lines(report.capacity)
    if report.replicas:
        lines += replica_lines(report.replicas)
    return lines

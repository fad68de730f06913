"""A search run's decision: capacity at SLO, knee, replica plan, verification (and its drills), and
the curves (throughput and p95 latency against the level) with the knee and capacity marked."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from loadgen.evaluate.curve import Over
from loadgen.report.drill_facts import failed_drills
from loadgen.report.evaluation_markdown import slo_words
from loadgen.report.html import slo_lines
from loadgen.report.html.charts import Chart, Marker, Series, line_chart
from loadgen.report.html.page import Card, CellStatus, cards, note, status_of, table
from loadgen.report.html.summary_section import num
from loadgen.report.html.timeseries_section import wide_range
from loadgen.report.model import Report
from loadgen.report.model.evaluation import Capacity, KneeLevel, Replicas, VerifyRun

KNEE_COLOR = "#6A1B9A"
CAPACITY_COLOR = "#1b7f3b"


SESSIONS = "sessions"  # what `over` reads for rate levels whose arrivals are sessions


def level_over(report: Report) -> str:
    """What the levels count: concurrency, rate (req/s), or sessions (a rate search of sessions)."""
    op = report.operating_point
    over = report.knee.over if report.knee else op.over if op else "level"
    sessions = report.capacity is not None and report.capacity.sessions_per_s is not None
    return SESSIONS if over == Over.RATE.value and sessions else over


def level_axis(over: str) -> str:
    if over == SESSIONS:
        return "offered session rate (sessions/s)"
    return "concurrency (closed-loop users)" if over == Over.CONCURRENCY else "offered rate (req/s)"


def level_name(over: str, level: float | None) -> str:
    if over == SESSIONS:
        return f"{num(level)} sessions/s"
    return f"concurrency {num(level)}" if over == Over.CONCURRENCY else f"{num(level)} req/s"


def _verification(replicas: Replicas | None) -> Card:
    verified = replicas.verified if replicas else None
    if not verified:
        return Card("verification", "not run", "verify: false")
    if verified.skipped:
        return Card("verification", "skipped", verified.skipped, "warn")
    plan, fewer = verified.at_plan, verified.one_fewer
    parts = [f"×{plan.replicas if plan else None}: TTFT p95 {num(plan.ttft_ms.p95 if plan else None, 'ms')}"]
    if fewer:
        held = "held" if fewer.passed else "failed"
        parts.append(f"×{fewer.replicas} {held} (TTFT p95 {num(fewer.ttft_ms.p95, 'ms')})")
    drills = verified.drills or []
    failed = failed_drills(drills)
    if drills:  # a drill the plan did not survive fails the run like the plan itself
        said = [f"{d.name} {'passed' if d.passed else 'FAILED'}" for d in drills]
        parts.append("drills: " + ", ".join(said))
    passed = bool(verified.passed) and not failed
    held = "held" if verified.passed else "FAILED"
    if verified.passed and failed:
        held = f"held, {'a drill' if len(failed) == 1 else 'drills'} FAILED"
    value = f"{plan.replicas if plan else verified.replicas} replicas {held}"
    return Card("verification", value, "; ".join(parts), status_of(passed), big=True)


def _capacity_note(capacity: Capacity | None, over: str) -> str:
    if capacity is None or capacity.level is None:
        said = "no level held every SLO"
    else:
        said = f"at {level_name(over, capacity.level)}"
    if capacity is None:
        return said
    if capacity.sessions_per_s is not None:  # the headline is sessions/s: requests/s too
        said += f" · {num(capacity.rate_rps, 'req/s')}"
    if capacity.ci95:
        said += f" · 95% CI {num(capacity.ci95[0])}–{num(capacity.ci95[1])}"
    if capacity.limiting_slo:
        said += f" · next level broke {capacity.limiting_slo}"
    return said


def decision_cards(report: Report) -> str:
    """The four numbers a search is run for, large."""
    knee, capacity, replicas = report.knee, report.capacity, report.replicas
    over = level_over(report)
    held: CellStatus = "pass" if capacity and capacity.rate_rps else "fail"
    knee_level = knee.level if knee else None
    knee_value = level_name(over, knee_level) if knee_level is not None else "none found"
    knee_note = (
        f"{num(knee.throughput_rps if knee else None, 'req/s')}; "
        f"kneed: {num(knee.kneed_level if knee else None)}"
    )
    count = replicas.count if replicas else None
    plan_value = f"{count} replicas" if count is not None else "no plan"
    plan_note = ""
    if replicas is not None:
        plan_note = replicas.formula or replicas.error or ""
        if replicas.plan_on == "lower" and replicas.count_at_point is not None:
            plan_note += (
                f" · on the capacity's 95% lower bound; {replicas.count_at_point} at the point estimate"
            )
        if replicas.monthly_cost is not None:
            plan_note += f" · {num(replicas.monthly_cost)}/month"
    return cards(
        [
            Card(
                "capacity at SLO (per replica)",
                _capacity_value(capacity),
                _capacity_note(capacity, over),
                held,
                True,
            ),
            Card("knee", knee_value, knee_note, big=True),
            Card("replica plan", plan_value, plan_note, big=True),
            _verification(replicas),
        ],
        even=True,
    )


def _capacity_value(capacity: Capacity | None) -> str:
    if capacity is not None and capacity.sessions_per_s is not None:
        return num(capacity.sessions_per_s, "sessions/s")
    return num(capacity.rate_rps if capacity else None, "req/s")


def _levels(report: Report) -> list[KneeLevel]:
    return sorted(report.knee.levels, key=lambda lv: lv.level) if report.knee else []


def _p95(value: float | None) -> float:
    return float("nan") if value is None else value


def _markers(report: Report, y_of: Mapping[float, float], over: str) -> list[Marker]:
    knee, capacity = report.knee, report.capacity
    markers = []
    if knee is not None and knee.level is not None and knee.level in y_of:
        label = f"knee: {level_name(over, knee.level)}"
        markers.append(Marker("knee", knee.level, y_of[knee.level], label, KNEE_COLOR))
    if capacity is not None and capacity.level is not None and capacity.level in y_of:
        label = f"capacity {_capacity_value(capacity)}"
        markers.append(Marker("capacity", capacity.level, y_of[capacity.level], label, CAPACITY_COLOR))
    return markers


def search_charts(report: Report) -> list[Chart]:
    """Throughput vs level (trial min–max whiskers, capacity CI) and TTFT/e2e p95 vs level."""
    levels = _levels(report)
    if not levels:
        return []
    over = level_over(report)
    x = np.array([lv.level for lv in levels], dtype=float)
    rps = np.array([lv.throughput_rps for lv in levels], dtype=float)
    whiskers = None
    if any(lv.ci95 for lv in levels):  # each level's 95% interval (batch means, all trials)
        low = [(lv.ci95 or [r, r])[0] for lv, r in zip(levels, rps, strict=True)]
        high = [(lv.ci95 or [r, r])[1] for lv, r in zip(levels, rps, strict=True)]
        whiskers = (low, high)
    failed = np.array([not lv.slo_passed for lv in levels])
    series = [
        Series("throughput", x, rps, label="goodput (all trials)", style="linepoints", whiskers=whiskers)
    ]
    if failed.any():
        series.append(
            Series(
                "slo-failed",
                x[failed],
                rps[failed],
                label="a level SLO failed",
                color="#C62828",
                style="points",
            )
        )
    capacity = report.capacity
    if capacity is not None and capacity.ci95 and capacity.level is not None:
        series.append(
            Series(
                "capacity-ci",
                [capacity.level],
                [capacity.rate_rps],
                label="capacity 95% CI",
                color=CAPACITY_COLOR,
                style="points",
                whiskers=([capacity.ci95[0]], [capacity.ci95[1]]),
            )
        )
    throughput = line_chart(
        "search-throughput",
        "Throughput vs load level",
        level_axis(over),
        "goodput (req/s)",
        series,
        markers=_markers(report, dict(zip(x.tolist(), rps.tolist(), strict=True)), over),
        y_min=0,
        caption="Successful completions per second inside each level's window"
        + ("; whiskers: its 95% interval (batch means over every trial)." if whiskers else "."),
    )
    ttft = np.array([_p95(lv.ttft_ms.p95) for lv in levels])
    e2e = np.array([_p95(lv.e2e_ms.p95) for lv in levels])
    latency = line_chart(
        "search-latency",
        "p95 latency vs load level",
        level_axis(over),
        "ms",
        [
            Series("ttft-p95", x, ttft, label="TTFT p95", style="linepoints"),
            Series("e2e-p95", x, e2e, label="e2e p95", style="linepoints"),
        ],
        thresholds=slo_lines.thresholds(report.slo, ["ttft", "e2e"]),
        markers=_markers(report, dict(zip(x.tolist(), ttft.tolist(), strict=True)), over),
        log_y=wide_range([ttft, e2e]),
        caption="From the scheduled send, over each level's measured window (all trials).",
    )
    return [throughput, latency]


def _steady(lv: KneeLevel) -> str:
    if lv.steady is None:
        return "–"
    return "yes" if lv.steady else f"no ({num(100 * (lv.drift or 0.0))}% drift)"


def level_table(report: Report) -> str:
    levels = _levels(report)
    if not levels or report.knee is None:
        return note("No level was measured.")
    over = level_over(report)
    sessions = any(lv.sessions_per_s is not None for lv in levels)  # rate or users
    rows, statuses = [], []
    for lv in levels:
        trials = lv.trial_rps
        rows.append(
            [
                num(lv.level),
                *([num(lv.sessions_per_s)] if sessions else []),
                num(lv.throughput_rps),
                _interval(lv),
                str(lv.trials or max(1, len(trials))),
                " / ".join(num(t) for t in trials) if len(trials) > 1 else "",
                num(lv.output_tokens_per_s),
                num(lv.ttft_ms.p95),
                num(lv.e2e_ms.p95),
                num(100 * lv.error_rate, "%"),
                slo_words(lv),
                _steady(lv),
            ]
        )
        statuses.append("warn" if lv.slo_verdict == "unresolved" else status_of(lv.slo_passed))
    headers = [
        "sessions/s offered" if over == SESSIONS else report.knee.over,
        *(["sessions/s"] if sessions else []),
        "req/s",
        "95% CI req/s",
        "trials",
        "trials req/s",
        "tok/s",
        "TTFT p95 ms",
        "e2e p95 ms",
        "errors",
        "SLOs",
        "steady",
    ]
    return table(headers, rows, statuses, status_column=headers.index("SLOs"))


def _interval(level: KneeLevel) -> str:
    """'55.1–58.9 (±3.3%)', or – without an interval."""
    ci, precision = level.ci95, level.precision
    if not ci:
        return "–"
    spread = f" (±{100 * precision:.1f}%)" if precision is not None else ""
    return f"{num(ci[0])}–{num(ci[1])}{spread}"


def _verify_row(label: str, check: VerifyRun | None, unit: str) -> list[str]:
    if not check:
        return [label, "–", "–", "–", "–", "–", "–", "not run"]
    achieved = num(check.achieved_rate, "req/s")
    if check.sessions_per_s is not None:
        achieved = f"{num(check.sessions_per_s, 'sessions/s')} ({achieved})"
    return [
        label,
        str(check.replicas),
        num(check.rate_rps, unit),
        achieved,
        num(check.ttft_ms.p95, "ms"),
        num(check.e2e_ms.p95, "ms"),
        num(100 * check.error_rate, "%"),
        "held" if check.passed else "FAILED",
    ]


def plan_block(report: Report) -> str:
    """The replica arithmetic and what the verification measured."""
    replicas = report.replicas
    if not replicas:
        return note("No replica plan (no capacity section in the scenario).")
    if replicas.count is None:
        return note(f"No plan: {replicas.error or 'no capacity measured'}.")
    unit = replicas.unit  # sessions/s when the levels' arrivals are sessions
    on_lower = replicas.plan_on == "lower"
    rows = [
        ["peak rate", num(replicas.peak_rate, unit)],
        [
            "capacity per replica" + (" (lower bound of its 95% interval)" if on_lower else ""),
            num(replicas.capacity_rps, unit),
        ],
        ["target utilisation", num(100 * replicas.target_utilization, "%")],
        ["redundancy", num(replicas.redundancy)],
        ["replicas", f"{replicas.count} = {replicas.formula}"],
    ]
    if on_lower and replicas.count_at_point is not None:
        rows.insert(2, ["capacity per replica (point estimate)", num(replicas.capacity_point, unit)])
        rows.append(["replicas at the point estimate", str(replicas.count_at_point)])
    if replicas.monthly_cost is not None:
        rows += [
            ["cost per million output tokens", num(replicas.cost_per_million_tokens)],
            ["cost per month (plan)", num(replicas.monthly_cost)],
        ]
    html = table(["replica arithmetic", ""], rows)
    verified = replicas.verified
    if verified is not None and verified.skipped:
        return html + note(f"Verification skipped: {verified.skipped}.")
    if verified is not None:
        checks = [("plan", verified.at_plan), ("one fewer", verified.one_fewer)]
        statuses: list[CellStatus] = [status_of(c.passed) if c else "none" for _, c in checks]
        html += "<h3>Verification at the peak rate (round robin over the replicas)</h3>"
        html += table(
            ["run", "replicas", "offered", "achieved", "TTFT p95", "e2e p95", "errors", "SLOs"],
            [_verify_row(label, check, unit) for label, check in checks],
            statuses,
            status_column=7,
        )
        html += note("One fewer is reported (what the arithmetic expects) but does not gate the verdict.")
    return html


def decision_headline(report: Report) -> str:
    knee = report.knee
    over = level_over(report)
    parts = [f"capacity {_capacity_value(report.capacity)}"]
    if knee is not None and knee.level is not None:
        parts.append(f"knee at {level_name(over, knee.level)}")
    return " · ".join(parts)

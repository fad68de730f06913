"""A search run's decision: capacity at SLO, knee, replica plan, verification (and its drills), and
the curves (throughput and p95 latency against the level) with the knee and capacity marked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from loadgen.evaluate.curve import Over
from loadgen.report.drill_facts import failed_drills
from loadgen.report.evaluation_markdown import slo_words
from loadgen.report.html import slo_lines
from loadgen.report.html.charts import Chart, Marker, Series, line_chart
from loadgen.report.html.page import Card, CellStatus, cards, note, status_of, table
from loadgen.report.html.summary_section import num
from loadgen.report.html.timeseries_section import wide_range

KNEE_COLOR = "#6A1B9A"
CAPACITY_COLOR = "#1b7f3b"


SESSIONS = "sessions"  # what `over` reads for rate levels whose arrivals are sessions


def level_over(report: Mapping[str, Any]) -> str:
    """What the levels count: concurrency, rate (req/s), or sessions (a rate search of sessions)."""
    knee = report.get("knee") or {}
    over = str(knee.get("over") or (report.get("operating_point") or {}).get("over") or "level")
    sessions = (report.get("capacity") or {}).get("sessions_per_s") is not None
    return SESSIONS if over == "rate" and sessions else over


def level_axis(over: str) -> str:
    if over == SESSIONS:
        return "offered session rate (sessions/s)"
    return "concurrency (closed-loop users)" if over == Over.CONCURRENCY else "offered rate (req/s)"


def level_name(over: str, level: Any) -> str:
    if over == SESSIONS:
        return f"{num(level)} sessions/s"
    return f"concurrency {num(level)}" if over == Over.CONCURRENCY else f"{num(level)} req/s"


def _verification(replicas: Mapping[str, Any]) -> Card:
    verified = replicas.get("verified") or {}
    if not verified:
        return Card("verification", "not run", "verify: false")
    if verified.get("skipped"):
        return Card("verification", "skipped", str(verified["skipped"]), "warn")
    plan = verified.get("at_plan") or {}
    fewer = verified.get("one_fewer") or {}
    parts = [f"×{plan.get('replicas')}: TTFT p95 {num((plan.get('ttft_ms') or {}).get('p95'), 'ms')}"]
    if fewer:
        held = "held" if fewer.get("passed") else "failed"
        parts.append(
            f"×{fewer.get('replicas')} {held} (TTFT p95 {num((fewer.get('ttft_ms') or {}).get('p95'), 'ms')})"
        )
    drills = verified.get("drills") or []
    failed = failed_drills(drills)
    if drills:  # a drill the plan did not survive fails the run like the plan itself
        said = [f"{d.get('name')} {'FAILED' if d.get('passed') is False else 'passed'}" for d in drills]
        parts.append("drills: " + ", ".join(said))
    passed = bool(verified.get("passed")) and not failed
    held = "held" if verified.get("passed") else "FAILED"
    if verified.get("passed") and failed:
        held = f"held, {'a drill' if len(failed) == 1 else 'drills'} FAILED"
    value = f"{plan.get('replicas', verified.get('replicas'))} replicas {held}"
    return Card("verification", value, "; ".join(parts), status_of(passed), big=True)


def decision_cards(report: Mapping[str, Any]) -> str:
    """The four numbers a search is run for, large."""
    knee = report.get("knee") or {}
    capacity = report.get("capacity") or {}
    replicas = report.get("replicas") or {}
    over = level_over(report)
    ci = capacity.get("ci95")
    held: CellStatus = "pass" if capacity.get("rate_rps") else "fail"
    capacity_note = (
        f"at {level_name(over, capacity.get('level'))}"
        if capacity.get("level") is not None
        else "no level held every SLO"
    )
    if capacity.get("sessions_per_s") is not None:  # the headline is sessions/s: requests/s too
        capacity_note += f" · {num(capacity.get('rate_rps'), 'req/s')}"
    if ci:
        capacity_note += f" · 95% CI {num(ci[0])}–{num(ci[1])}"
    if capacity.get("limiting_slo"):
        capacity_note += f" · next level broke {capacity['limiting_slo']}"
    knee_value = level_name(over, knee["level"]) if knee.get("level") is not None else "none found"
    knee_note = f"{num(knee.get('throughput_rps'), 'req/s')}; kneed: {num(knee.get('kneed_level'))}"
    plan_value = f"{replicas['count']} replicas" if replicas.get("count") is not None else "no plan"
    plan_note = str(replicas.get("formula") or replicas.get("error") or "")
    if replicas.get("plan_on") == "lower" and replicas.get("count_at_point") is not None:
        at_point = replicas["count_at_point"]
        plan_note += f" · on the capacity's 95% lower bound; {at_point} at the point estimate"
    if replicas.get("monthly_cost") is not None:
        plan_note += f" · {num(replicas['monthly_cost'])}/month"
    return cards(
        [
            Card(
                "capacity at SLO (per replica)",
                _capacity_value(capacity),
                capacity_note,
                held,
                True,
            ),
            Card("knee", knee_value, knee_note, big=True),
            Card("replica plan", plan_value, plan_note, big=True),
            _verification(replicas),
        ],
        even=True,
    )


def _capacity_value(capacity: Mapping[str, Any]) -> str:
    if capacity.get("sessions_per_s") is not None:
        return num(capacity.get("sessions_per_s"), "sessions/s")
    return num(capacity.get("rate_rps"), "req/s")


def _levels(knee: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return sorted(
        (lv for lv in knee.get("levels") or [] if lv.get("level") is not None), key=lambda lv: lv["level"]
    )


def _p95(level: Mapping[str, Any], key: str) -> float:
    value = (level.get(key) or {}).get("p95")
    return float("nan") if value is None else float(value)


def _markers(report: Mapping[str, Any], y_of: Mapping[float, float], over: str) -> list[Marker]:
    knee = report.get("knee") or {}
    capacity = report.get("capacity") or {}
    markers = []
    if knee.get("level") is not None and knee["level"] in y_of:
        markers.append(
            Marker(
                "knee",
                knee["level"],
                y_of[knee["level"]],
                f"knee: {level_name(over, knee['level'])}",
                KNEE_COLOR,
            )
        )
    if capacity.get("level") is not None and capacity["level"] in y_of:
        label = f"capacity {_capacity_value(capacity)}"
        markers.append(Marker("capacity", capacity["level"], y_of[capacity["level"]], label, CAPACITY_COLOR))
    return markers


def search_charts(report: Mapping[str, Any]) -> list[Chart]:
    """Throughput vs level (trial min–max whiskers, capacity CI) and TTFT/e2e p95 vs level."""
    knee = report.get("knee") or {}
    levels = _levels(knee)
    if not levels:
        return []
    over = level_over(report)
    x = np.array([lv["level"] for lv in levels], dtype=float)
    rps = np.array([lv.get("throughput_rps") or 0.0 for lv in levels], dtype=float)
    whiskers = None
    if any(lv.get("ci95") for lv in levels):  # each level's 95% interval (batch means, all trials)
        low = [(lv.get("ci95") or [r, r])[0] for lv, r in zip(levels, rps, strict=True)]
        high = [(lv.get("ci95") or [r, r])[1] for lv, r in zip(levels, rps, strict=True)]
        whiskers = (low, high)
    failed = np.array([not lv.get("slo_passed") for lv in levels])
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
    capacity = report.get("capacity") or {}
    ci = capacity.get("ci95")
    if ci and capacity.get("level") is not None:
        series.append(
            Series(
                "capacity-ci",
                [capacity["level"]],
                [capacity["rate_rps"]],
                label="capacity 95% CI",
                color=CAPACITY_COLOR,
                style="points",
                whiskers=([ci[0]], [ci[1]]),
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
    ttft = np.array([_p95(lv, "ttft_ms") for lv in levels])
    e2e = np.array([_p95(lv, "e2e_ms") for lv in levels])
    latency = line_chart(
        "search-latency",
        "p95 latency vs load level",
        level_axis(over),
        "ms",
        [
            Series("ttft-p95", x, ttft, label="TTFT p95", style="linepoints"),
            Series("e2e-p95", x, e2e, label="e2e p95", style="linepoints"),
        ],
        thresholds=slo_lines.thresholds(report.get("slo") or [], ["ttft", "e2e"]),
        markers=_markers(report, dict(zip(x.tolist(), ttft.tolist(), strict=True)), over),
        log_y=wide_range([ttft, e2e]),
        caption="From the scheduled send, over each level's measured window (all trials).",
    )
    return [throughput, latency]


def level_table(report: Mapping[str, Any]) -> str:
    knee = report.get("knee") or {}
    levels = _levels(knee)
    if not levels:
        return note("No level was measured.")
    over = level_over(report)
    sessions = any(lv.get("sessions_per_s") is not None for lv in levels)  # rate or users
    rows, statuses = [], []
    for lv in levels:
        steady = (
            "–"
            if lv.get("steady") is None
            else "yes"
            if lv["steady"]
            else f"no ({num(100 * float(lv.get('drift') or 0))}% drift)"
        )
        trials = lv.get("trial_rps") or []
        unresolved = lv.get("slo_verdict") == "unresolved"
        rows.append(
            [
                num(lv["level"]),
                *([num(lv.get("sessions_per_s"))] if sessions else []),
                num(lv.get("throughput_rps")),
                _interval(lv),
                str(lv.get("trials") or max(1, len(trials))),
                " / ".join(num(t) for t in trials) if len(trials) > 1 else "",
                num(lv.get("output_tokens_per_s")),
                num(_p95(lv, "ttft_ms")),
                num(_p95(lv, "e2e_ms")),
                num(100 * float(lv.get("error_rate") or 0.0), "%"),
                slo_words(lv),
                steady,
            ]
        )
        statuses.append("warn" if unresolved else status_of(bool(lv.get("slo_passed"))))
    headers = [
        "sessions/s offered" if over == SESSIONS else str(knee.get("over") or "level"),
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


def _interval(level: Mapping[str, Any]) -> str:
    """'55.1–58.9 (±3.3%)', or – without an interval."""
    ci, precision = level.get("ci95"), level.get("precision")
    if not ci:
        return "–"
    spread = f" (±{100 * float(precision):.1f}%)" if precision is not None else ""
    return f"{num(ci[0])}–{num(ci[1])}{spread}"


def _verify_row(label: str, check: Mapping[str, Any] | None, unit: str) -> list[str]:
    if not check:
        return [label, "–", "–", "–", "–", "–", "–", "not run"]
    achieved = num(check.get("achieved_rate"), "req/s")
    if check.get("sessions_per_s") is not None:
        achieved = f"{num(check.get('sessions_per_s'), 'sessions/s')} ({achieved})"
    return [
        label,
        str(check.get("replicas")),
        num(check.get("rate_rps"), unit),
        achieved,
        num((check.get("ttft_ms") or {}).get("p95"), "ms"),
        num((check.get("e2e_ms") or {}).get("p95"), "ms"),
        "–" if check.get("error_rate") is None else num(100 * float(check["error_rate"]), "%"),
        "held" if check.get("passed") else "FAILED",
    ]


def plan_block(report: Mapping[str, Any]) -> str:
    """The replica arithmetic and what the verification measured."""
    replicas = report.get("replicas") or {}
    if not replicas:
        return note("No replica plan (no capacity section in the scenario).")
    if replicas.get("count") is None:
        return note(f"No plan: {replicas.get('error', 'no capacity measured')}.")
    unit = str(replicas.get("unit") or "req/s")  # sessions/s when the levels' arrivals are sessions
    on_lower = replicas.get("plan_on") == "lower"
    rows = [
        ["peak rate", num(replicas.get("peak_rate"), unit)],
        [
            "capacity per replica" + (" (lower bound of its 95% interval)" if on_lower else ""),
            num(replicas.get("capacity_rps"), unit),
        ],
        ["target utilisation", num(100 * float(replicas.get("target_utilization") or 0), "%")],
        ["redundancy", num(replicas.get("redundancy"))],
        ["replicas", f"{replicas['count']} = {replicas.get('formula')}"],
    ]
    if on_lower and replicas.get("count_at_point") is not None:
        rows.insert(2, ["capacity per replica (point estimate)", num(replicas.get("capacity_point"), unit)])
        rows.append(["replicas at the point estimate", str(replicas["count_at_point"])])
    if replicas.get("monthly_cost") is not None:
        rows += [
            ["cost per million output tokens", num(replicas.get("cost_per_million_tokens"))],
            ["cost per month (plan)", num(replicas.get("monthly_cost"))],
        ]
    html = table(["replica arithmetic", ""], rows)
    verified = replicas.get("verified") or {}
    if verified.get("skipped"):
        return html + note(f"Verification skipped: {verified['skipped']}.")
    if verified:
        checks = [("plan", verified.get("at_plan")), ("one fewer", verified.get("one_fewer"))]
        statuses: list[CellStatus] = [status_of(c.get("passed")) if c else "none" for _, c in checks]
        html += "<h3>Verification at the peak rate (round robin over the replicas)</h3>"
        html += table(
            ["run", "replicas", "offered", "achieved", "TTFT p95", "e2e p95", "errors", "SLOs"],
            [_verify_row(label, check, unit) for label, check in checks],
            statuses,
            status_column=7,
        )
        html += note("One fewer is reported (what the arithmetic expects) but does not gate the verdict.")
    return html


def decision_headline(report: Mapping[str, Any]) -> str:
    capacity = report.get("capacity") or {}
    knee = report.get("knee") or {}
    over = level_over(report)
    parts = [f"capacity {_capacity_value(capacity)}"]
    if knee.get("level") is not None:
        parts.append(f"knee at {level_name(over, knee['level'])}")
    return " · ".join(parts)

"""comparison.html: the environment comparison as one self-contained page.

First screen: the recommendation (or why there is none), its replica count and cost, then the
overlaid throughput–latency curves of every environment with each one's capacity point and the
SLO line, and the monthly cost of each plan as bars. Below: the full table, why each other
environment lost, and links to every environment's own report.html.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loadgen.environments.energy_basis import labelled
from loadgen.environments.ranking import FIRST, money
from loadgen.environments.render import (
    COLUMNS,
    ENERGY_COLUMNS,
    columns,
    energy_rows,
    ranking_line,
    table_rows,
)
from loadgen.fmt import format_number
from loadgen.report.html.charts import PALETTE, Chart, Marker, Series, Threshold, bar_chart, line_chart
from loadgen.report.html.page import (
    Banner,
    Card,
    CellStatus,
    Section,
    cards,
    escape,
    grid,
    note,
    render_page,
    table,
)

FILENAME = "comparison.html"
_BANNER = {"recommend": ("pass", "RECOMMEND"), "none": ("fail", "NONE"), "error": ("error", "INCOMPLETE")}
_ROW_STATUS: dict[str, CellStatus] = {
    "recommended": "pass",
    "meets": "none",
    "fails": "fail",
    "failed": "warn",
    "left out": "none",
}
_BAR_COLOR = {"recommended": "#1b7f3b", "meets": "#0072B2", "fails": "#C62828"}


def _banner(comparison: Mapping[str, Any]) -> Banner:
    verdict, label = _BANNER.get(str(comparison["verdict"]), ("error", "ERROR"))
    recommendation = comparison.get("recommendation")
    if recommendation is not None:
        headline = f"Deploy on {recommendation['environment']}: {recommendation['replicas']} replicas"
        if recommendation.get("monthly_cost") is not None:
            headline += f" · {money(recommendation['monthly_cost'])} a month"
        if recommendation.get("too_close"):
            other = recommendation.get("runner_up")
            headline = f"Too close to call: {recommendation['environment']}" + (
                f" or {other}" if other else ""
            )
    else:
        headline = "No environment meets every SLO" if verdict == "fail" else "The comparison is incomplete"
    if recommendation is not None and recommendation.get("too_close"):
        label = "TOO CLOSE"  # a recommendation still (exit 0), but not one to take on trust
    compared = len(comparison["environments"])
    return Banner(
        verdict, headline, str(comparison["reason"]), meta=f"{compared} environments compared", label=label
    )


def _decision_cards(comparison: Mapping[str, Any]) -> str:
    rows = {row["name"]: row for row in comparison["environments"]}
    recommendation = comparison.get("recommendation")
    basis = comparison.get("plan_basis") or {}
    peak = f"for {format_number(basis['peak_rate'])} {basis.get('unit', 'req/s')}" if basis else "no plan"
    if recommendation is None:
        return cards([Card("recommendation", "none", str(comparison["reason"]), "fail", big=True)], even=True)
    winner = rows[recommendation["environment"]]
    spare = f" + {basis['redundancy']} spare" if basis.get("redundancy") else ""
    per_m = winner.get("cost_per_million_tokens")
    return cards(
        [
            Card("deploy on", winner["name"], winner.get("notes") or "", "pass", big=True),
            Card(
                "replicas",
                str(winner["replicas"]),
                f"{peak} at {format_number(basis['target_utilization'] * 100)}%{spare}"
                + _point_words(winner),
                big=True,
            ),
            _sure_card(recommendation),
            Card(
                "cost a month",
                money(winner["monthly_cost"]),
                f"{money(per_m)} per million output tokens" if per_m is not None else "no price given",
                big=True,
            ),
            Card(
                "capacity at SLO",
                f"{format_number(round(winner['capacity_rps'], 1))} req/s",
                _capacity_note(winner),
                big=True,
            ),
            _energy_card(winner),
        ],
        even=True,
    )


def _energy_card(row: Mapping[str, Any]) -> Card:
    """The winner's energy per million output tokens at capacity, labelled measured or declared."""
    energy = row.get("energy") or {}
    basis = energy.get("basis")
    if basis is None:
        return Card("energy", "–", energy.get("not_measured") or "not measured, no power: declared")
    value = labelled(energy.get("kwh_per_million_tokens"), basis)
    detail = f"kWh per million output tokens · {labelled(energy.get('tokens_per_joule'), basis)} tok/J"
    return Card("energy at capacity", value, detail, "warn" if basis == "declared" else "none", big=True)


def energy_chart(comparison: Mapping[str, Any]) -> Chart | None:
    """kWh per million output tokens at capacity per environment; the label says measured or declared."""
    rows = [
        row
        for row in comparison["environments"]
        if (row.get("energy") or {}).get("kwh_per_million_tokens") is not None
    ]
    if not rows:
        return None
    return bar_chart(
        "energy",
        "Energy per million output tokens at capacity",
        [f"{row['name']} ({row['energy']['basis']})" for row in rows],
        [row["energy"]["kwh_per_million_tokens"] for row in rows],
        colors=[_BAR_COLOR.get(row["status"], "#9e9e9e") for row in rows],
        value_label="kWh per million output tokens",
        value_format=lambda value: f"{value:.3g}",
        caption="Measured: the counted devices at the capacity level (Zeus). Declared: power: "
        "watts_per_replica ÷ the capacity's output tokens/s. "
        + str((comparison.get("ranking") or {}).get("energy_note") or ""),
    )


def _capacity_note(row: Mapping[str, Any]) -> str:
    note = "per replica"
    ci = row.get("capacity_ci95")
    if ci:
        note += f" · 95% interval {format_number(round(ci[0], 1))}–{format_number(round(ci[1], 1))}"
    return note + f" · {format_number(round(row['output_tokens_per_s'] or 0))} tok/s"


def _point_words(row: Mapping[str, Any]) -> str:
    at_point = row.get("replicas_at_point")
    if row.get("plan_on") != "lower" or at_point is None:
        return ""
    return f" · on the capacity's 95% lower bound; {at_point} at the point estimate"


def _sure_card(recommendation: Mapping[str, Any]) -> Card:
    """How sure: the share of resamples in which the recommendation is still the cheapest."""
    share = recommendation.get("confidence")
    if share is None:
        return Card("how sure", "–", "no capacity interval to resample")
    required = f"{recommendation.get('required_confidence', 0.9):.0%}"
    if not recommendation.get("too_close"):
        first = FIRST.get(recommendation.get("by") or "cost", "the cheapest").removeprefix("the ")
        return Card("how sure", f"{share:.0%}", f"of resamples {first} (needs {required})", "pass", big=True)
    other = recommendation.get("runner_up")
    detail = f"below {required}: too close to call"
    if other is not None:
        detail += f"; {other} cheapest in {recommendation.get('runner_up_share') or 0:.0%}"
    return Card("how sure", f"{share:.0%}", detail, "warn", big=True)


def _slo_threshold(comparison: Mapping[str, Any], name: str) -> list[Threshold]:
    for slo in comparison.get("slo") or []:
        if slo["name"] == name and slo.get("threshold") is not None:
            label = f"SLO {name} ≤ {format_number(slo['threshold'])} {slo.get('unit') or ''}".rstrip()
            return [Threshold(name, float(slo["threshold"]), "y", label)]
    return []


def curve_chart(comparison: Mapping[str, Any], chart_id: str, key: str, slo_name: str) -> Chart | None:
    """p95 latency against throughput per environment, each with its capacity point."""
    series, markers = [], []
    for number, row in enumerate(comparison["environments"]):
        curve = sorted(
            (point for point in row.get("curve") or [] if point.get(key) is not None),
            key=lambda point: point["level"],
        )
        if not curve:
            continue
        color = PALETTE[number % len(PALETTE)]
        x = [point["throughput_rps"] for point in curve]
        y = [point[key] for point in curve]
        series.append(Series(row["name"], x, y, label=row["name"], color=color, style="linepoints"))
        at = [point for point in curve if point["level"] == row.get("capacity_level")]
        if row.get("capacity_rps") and at:
            label = f"{row['name']}: {format_number(row['capacity_rps'])} req/s"
            markers.append(
                Marker(f"capacity-{row['name']}", at[0]["throughput_rps"], at[0][key], label, color)
            )
    if not series:
        return None
    return line_chart(
        chart_id,
        f"{slo_name} against throughput",
        "throughput (successful req/s)",
        f"{slo_name} (ms)",
        series,
        thresholds=_slo_threshold(comparison, slo_name.lower()),
        markers=markers,
        log_y=True,
        x_min=0,
        caption="One point per load level searched; the marked point is each environment's capacity "
        "at SLO (the highest level at which every SLO held).",
    )


def cost_chart(comparison: Mapping[str, Any]) -> Chart | None:
    """The monthly cost of each environment's plan (only those that could be planned)."""
    planned = [row for row in comparison["environments"] if row.get("monthly_cost") is not None]
    if not planned:
        return None
    costs = [row["monthly_cost"] for row in planned]
    at_point = [
        row["monthly_cost_at_point"] if row.get("monthly_cost_at_point") is not None else row["monthly_cost"]
        for row in planned
    ]
    return bar_chart(
        "cost",
        "Cost a month of each plan",
        [f"{row['name']} ×{row['replicas']}" for row in planned],
        costs,
        colors=[_BAR_COLOR.get(row["status"], "#9e9e9e") for row in planned],
        value_label="cost a month",
        caption="Replicas × price per replica-hour × 730 h, each plan sized on the lower bound of its "
        "capacity's 95% interval; whiskers reach down to the cost at the point estimate. Green: "
        "recommended; blue: meets every SLO but dearer; red: fails an SLO.",
        whiskers=(at_point, costs),
    )


def _table(comparison: Mapping[str, Any]) -> str:
    rows = table_rows(comparison)
    statuses = [_ROW_STATUS.get(status, "none") for status, _ in rows]
    headers = columns(comparison)
    return table(headers, [cells for _, cells in rows], statuses, status_column=len(COLUMNS) - 1)


def _energy_table(comparison: Mapping[str, Any]) -> str:
    """Measured and declared figures side by side, never merged."""
    return table(list(ENERGY_COLUMNS), energy_rows(comparison))


def _reasons(comparison: Mapping[str, Any]) -> str:
    items = [
        f"<li><b>{escape(row['name'])}</b>: {escape(row['lost_because'])}</li>"
        for row in comparison["environments"]
        if row["status"] != "recommended" and row.get("lost_because")
    ]
    return f"<ul>{''.join(items)}</ul>" if items else note("Every environment was compared; none lost.")


def _links(comparison: Mapping[str, Any], out_dir: Path) -> str:
    items = []
    for row in comparison["environments"]:
        run_dir = row.get("run_dir")
        if not run_dir:
            continue
        folder = Path(run_dir) if Path(run_dir).is_absolute() else out_dir / run_dir
        report = folder / "report.html"
        if report.exists():
            href, notes = escape(os.path.relpath(report, out_dir)), escape(row.get("notes") or "")
            items.append(f'<li><a href="{href}">{escape(row["name"])}</a>: {notes}</li>')
    return f"<ul>{''.join(items)}</ul>" if items else note("No environment has a report.html.")


def render_comparison_html(comparison: Mapping[str, Any], out_dir: Path) -> str:
    ttft = curve_chart(comparison, "curve-ttft", "ttft_p95_ms", "TTFT p95")
    e2e = curve_chart(comparison, "curve-e2e", "e2e_p95_ms", "e2e p95")
    cost = cost_chart(comparison)
    energy = energy_chart(comparison)
    first = [chart.html() for chart in (ttft, cost, energy) if chart is not None]
    itl = curve_chart(comparison, "curve-itl", "itl_p95_ms", "ITL p95")
    later = [chart.html() for chart in (e2e, itl) if chart is not None]
    basis = comparison.get("plan_basis")
    basis_text = (
        f"Every plan is sized for {format_number(basis['peak_rate'])} {basis.get('unit', 'req/s')} at "
        f"{format_number(basis['target_utilization'] * 100)}% target utilisation"
        f"{' + ' + str(basis['redundancy']) + ' spare' if basis['redundancy'] else ''}: "
        "ceil(peak / (capacity × utilisation)) + redundancy."
        if basis
        else "No replica plan: no run had a capacity: section."
    )
    decision = _decision_cards(comparison) + note(basis_text) + note(ranking_line(comparison) + ".")
    sections = [
        Section("Decision", decision + grid(first), "decision"),
        Section("Every environment", _table(comparison) + grid(later), "table"),
        Section("Energy at capacity", _energy_table(comparison), "energy"),
        Section("Why not the others", _reasons(comparison), "reasons"),
        Section("Each environment's own report", _links(comparison, out_dir), "links"),
    ]
    return render_page(f"environments: {comparison['name']}", _banner(comparison), sections)


def write_comparison_html(comparison: Mapping[str, Any], out_dir: Path) -> Path:
    path = out_dir / FILENAME
    path.write_text(render_comparison_html(comparison, out_dir), encoding="utf-8")
    return path

"""comparison.html: the environment comparison as one self-contained page.

First screen: the recommendation (or why there is none), its replica count and cost, then the
overlaid throughput–latency curves of every environment with each one's capacity point and the
SLO line, and the monthly cost of each plan as bars. Below: the full table, why each other
environment lost, and links to every environment's own report.html.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from loadgen.environments.comparison_model import (
    Comparison,
    CurvePoint,
    EnvironmentRow,
    Recommendation,
    Status,
    Verdict,
)
from loadgen.environments.comparison_text import (
    COLUMNS,
    ENERGY_COLUMNS,
    columns,
    energy_rows,
    ranking_line,
    table_rows,
)
from loadgen.environments.energy_basis import labelled
from loadgen.environments.ranking import FIRST, money
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
_BANNER: dict[Verdict, tuple[str, str]] = {
    "recommend": ("pass", "RECOMMEND"),
    "none": ("fail", "NONE"),
    "error": ("error", "INCOMPLETE"),
}
_ROW_STATUS: dict[Status, CellStatus] = {
    "recommended": "pass",
    "meets": "none",
    "fails": "fail",
    "failed": "warn",
    "left out": "none",
}
_BAR_COLOR: dict[Status, str] = {"recommended": "#1b7f3b", "meets": "#0072B2", "fails": "#C62828"}


def _banner(comparison: Comparison) -> Banner:
    verdict, label = _BANNER.get(comparison.verdict, ("error", "ERROR"))
    recommendation = comparison.recommendation
    if recommendation is not None:
        headline = f"Deploy on {recommendation.environment}: {recommendation.replicas} replicas"
        if recommendation.monthly_cost is not None:
            headline += f" · {money(recommendation.monthly_cost)} a month"
        if recommendation.too_close:
            other = recommendation.runner_up
            headline = f"Too close to call: {recommendation.environment}" + (f" or {other}" if other else "")
    else:
        headline = "No environment meets every SLO" if verdict == "fail" else "The comparison is incomplete"
    if recommendation is not None and recommendation.too_close:
        label = "TOO CLOSE"  # a recommendation still (exit 0), but not one to take on trust
    compared = len(comparison.environments)
    return Banner(
        verdict, headline, str(comparison.reason), meta=f"{compared} environments compared", label=label
    )


def _decision_cards(comparison: Comparison) -> str:
    rows = {row.name: row for row in comparison.environments}
    recommendation = comparison.recommendation
    basis = comparison.plan_basis
    if recommendation is None or basis is None:  # a recommendation has a plan basis
        return cards([Card("recommendation", "none", str(comparison.reason), "fail", big=True)], even=True)
    peak = f"for {format_number(basis.peak_rate)} {basis.unit}"
    winner = rows[recommendation.environment]
    spare = f" + {basis.redundancy} spare" if basis.redundancy else ""
    per_m = winner.cost_per_million_tokens
    return cards(
        [
            Card("deploy on", winner.name, winner.notes or "", "pass", big=True),
            Card(
                "replicas",
                str(winner.replicas),
                f"{peak} at {format_number(basis.target_utilization * 100)}%{spare}" + _point_words(winner),
                big=True,
            ),
            _sure_card(recommendation),
            Card(
                "cost a month",
                money(winner.monthly_cost),
                f"{money(per_m)} per million output tokens" if per_m is not None else "no price given",
                big=True,
            ),
            Card(
                "capacity at SLO",
                f"{format_number(round(winner.capacity_rps or 0.0, 1))} req/s",
                _capacity_note(winner),
                big=True,
            ),
            _energy_card(winner),
        ],
        even=True,
    )


def _energy_card(row: EnvironmentRow) -> Card:
    """The winner's energy per million output tokens at capacity, labelled measured or declared."""
    energy = row.energy
    basis = energy.basis
    if basis is None:
        return Card("energy", "–", energy.not_measured or "not measured, no power: declared")
    value = labelled(energy.kwh_per_million_tokens, basis)
    detail = f"kWh per million output tokens · {labelled(energy.tokens_per_joule, basis)} tok/J"
    return Card("energy at capacity", value, detail, "warn" if basis == "declared" else "none", big=True)


def energy_chart(comparison: Comparison) -> Chart | None:
    """kWh per million output tokens at capacity per environment; the label says measured or declared."""
    rows = [
        (row, kwh)
        for row in comparison.environments
        if (kwh := row.energy.kwh_per_million_tokens) is not None
    ]
    if not rows:
        return None
    return bar_chart(
        "energy",
        "Energy per million output tokens at capacity",
        [f"{row.name} ({row.energy.basis})" for row, _ in rows],
        [kwh for _, kwh in rows],
        colors=[_BAR_COLOR.get(row.status, "#9e9e9e") for row, _ in rows],
        value_label="kWh per million output tokens",
        value_format=lambda value: f"{value:.3g}",
        caption="Measured: the counted devices at the capacity level (Zeus). Declared: power: "
        "watts_per_replica ÷ the capacity's output tokens/s. " + comparison.ranking.energy_note,
    )


def _capacity_note(row: EnvironmentRow) -> str:
    note = "per replica"
    ci = row.capacity_ci95
    if ci:
        note += f" · 95% interval {format_number(round(ci[0], 1))}–{format_number(round(ci[1], 1))}"
    if row.whole_answers:  # an API of items: what it served beside its requests
        return note + f" · {format_number(round(row.items_per_s or 0))} items/s"
    return note + f" · {format_number(round(row.output_tokens_per_s or 0))} tok/s"


def _point_words(row: EnvironmentRow) -> str:
    at_point = row.replicas_at_point
    if row.plan_on != "lower" or at_point is None:
        return ""
    return f" · on the capacity's 95% lower bound; {at_point} at the point estimate"


def _sure_card(recommendation: Recommendation) -> Card:
    """How sure: the share of resamples in which the recommendation is still the cheapest."""
    share = recommendation.confidence
    if share is None:
        return Card("how sure", "–", "no capacity interval to resample")
    required = f"{recommendation.required_confidence:.0%}"
    if not recommendation.too_close:
        first = FIRST[recommendation.by].removeprefix("the ")
        return Card("how sure", f"{share:.0%}", f"of resamples {first} (needs {required})", "pass", big=True)
    other = recommendation.runner_up
    detail = f"below {required}: too close to call"
    if other is not None:
        detail += f"; {other} cheapest in {recommendation.runner_up_share or 0:.0%}"
    return Card("how sure", f"{share:.0%}", detail, "warn", big=True)


def _slo_threshold(comparison: Comparison, name: str) -> list[Threshold]:
    for slo in comparison.slo:
        if slo.name == name:
            label = f"SLO {name} ≤ {format_number(slo.threshold)} {slo.unit or ''}".rstrip()
            return [Threshold(name, float(slo.threshold), "y", label)]
    return []


def curve_chart(
    comparison: Comparison, chart_id: str, p95: Callable[[CurvePoint], float | None], slo_name: str
) -> Chart | None:
    """p95 latency (`p95` of each point) against throughput per environment, each with its
    capacity point."""
    series, markers = [], []
    for number, row in enumerate(comparison.environments):
        curve = sorted(
            ((point, value) for point in row.curve if (value := p95(point)) is not None),
            key=lambda found: found[0].level,
        )
        if not curve:
            continue
        color = PALETTE[number % len(PALETTE)]
        x = [point.throughput_rps for point, _ in curve]
        y = [value for _, value in curve]
        series.append(Series(row.name, x, y, label=row.name, color=color, style="linepoints"))
        at = [(point, value) for point, value in curve if point.level == row.capacity_level]
        if row.capacity_rps and at:
            label = f"{row.name}: {format_number(row.capacity_rps)} req/s"
            markers.append(Marker(f"capacity-{row.name}", at[0][0].throughput_rps, at[0][1], label, color))
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


def cost_chart(comparison: Comparison) -> Chart | None:
    """The monthly cost of each environment's plan (only those that could be planned)."""
    planned = [(row, cost) for row in comparison.environments if (cost := row.monthly_cost) is not None]
    if not planned:
        return None
    costs = [cost for _, cost in planned]
    at_point = [
        row.monthly_cost_at_point if row.monthly_cost_at_point is not None else cost for row, cost in planned
    ]
    return bar_chart(
        "cost",
        "Cost a month of each plan",
        [f"{row.name} ×{row.replicas}" for row, _ in planned],
        costs,
        colors=[_BAR_COLOR.get(row.status, "#9e9e9e") for row, _ in planned],
        value_label="cost a month",
        caption="Replicas × price per replica-hour × 730 h, each plan sized on the lower bound of its "
        "capacity's 95% interval; whiskers reach down to the cost at the point estimate. Green: "
        "recommended; blue: meets every SLO but dearer; red: fails an SLO.",
        whiskers=(at_point, costs),
    )


def _table(comparison: Comparison) -> str:
    rows = table_rows(comparison)
    statuses = [_ROW_STATUS.get(status, "none") for status, _ in rows]
    headers = columns(comparison)
    return table(headers, [cells for _, cells in rows], statuses, status_column=len(COLUMNS) - 1)


def _energy_table(comparison: Comparison) -> str:
    """Measured and declared figures side by side, never merged."""
    return table(list(ENERGY_COLUMNS), energy_rows(comparison))


def _reasons(comparison: Comparison) -> str:
    items = [
        f"<li><b>{escape(row.name)}</b>: {escape(row.lost_because)}</li>"
        for row in comparison.environments
        if row.status != "recommended" and row.lost_because
    ]
    return f"<ul>{''.join(items)}</ul>" if items else note("Every environment was compared; none lost.")


def _links(comparison: Comparison, out_dir: Path) -> str:
    items = []
    for row in comparison.environments:
        run_dir = row.run_dir
        if not run_dir:
            continue
        folder = Path(run_dir) if Path(run_dir).is_absolute() else out_dir / run_dir
        report = folder / "report.html"
        if report.exists():
            href, notes = escape(os.path.relpath(report, out_dir)), escape(row.notes or "")
            items.append(f'<li><a href="{href}">{escape(row.name)}</a>: {notes}</li>')
    return f"<ul>{''.join(items)}</ul>" if items else note("No environment has a report.html.")


def render_comparison_html(comparison: Comparison, out_dir: Path) -> str:
    ttft = curve_chart(comparison, "curve-ttft", lambda point: point.ttft_p95_ms, "TTFT p95")
    e2e = curve_chart(comparison, "curve-e2e", lambda point: point.e2e_p95_ms, "e2e p95")
    cost = cost_chart(comparison)
    energy = energy_chart(comparison)
    lead, e2e = (ttft, e2e) if ttft is not None else (e2e, None)  # whole answers: no TTFT, e2e leads
    first = [chart.html() for chart in (lead, cost, energy) if chart is not None]
    itl = curve_chart(comparison, "curve-itl", lambda point: point.itl_p95_ms, "ITL p95")
    later = [chart.html() for chart in (e2e, itl) if chart is not None]
    basis = comparison.plan_basis
    basis_text = (
        f"Every plan is sized for {format_number(basis.peak_rate)} {basis.unit} at "
        f"{format_number(basis.target_utilization * 100)}% target utilisation"
        f"{' + ' + str(basis.redundancy) + ' spare' if basis.redundancy else ''}: "
        "ceil(peak / (capacity × utilisation)) + redundancy."
        if basis is not None
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
    return render_page(f"environments: {comparison.name}", _banner(comparison), sections)


def write_comparison_html(comparison: Comparison, out_dir: Path) -> Path:
    path = out_dir / FILENAME
    path.write_text(render_comparison_html(comparison, out_dir), encoding="utf-8")
    return path

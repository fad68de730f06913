"""The environment comparison as the terminal shows it, as comparison.md and as comparison.json."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from loadgen.environments.comparison_model import Comparison, EnvironmentRow, RankBy, Status, Verdict
from loadgen.environments.energy_basis import labelled
from loadgen.environments.ranking import FIRST, money
from loadgen.fmt import format_number

_STATUS_STYLE: dict[Status, str] = {
    "recommended": "bold green",
    "meets": "",
    "fails": "red",
    "failed": "bold red",
    "left out": "dim",
}
_HEADLINE: dict[Verdict, str] = {
    "recommend": "RECOMMENDATION",
    "none": "NO ENVIRONMENT MEETS THE SLOs",
    "error": "INCOMPLETE",
}


def _num(value: float | None) -> str:
    """Three significant figures or so, for tables: 18.7, 299, 54.2, 0.82."""
    if value is None:
        return "–"
    size = abs(float(value))
    digits = 0 if size >= 100 else 1 if size >= 10 else 2
    return format_number(round(float(value), digits))


def _capacity(row: EnvironmentRow) -> str:
    text = _num(row.capacity_rps)
    ci = row.capacity_ci95
    if ci:
        text += f" [{_num(ci[0])}, {_num(ci[1])}]"
    return text


def _knee(row: EnvironmentRow) -> str:
    return _num(row.knee_level)


def _replicas(row: EnvironmentRow) -> str:
    """The planned count, with the point estimate's in brackets where it differs: '6 (5)'."""
    text = _num(row.replicas)
    at_point = row.replicas_at_point
    if row.plan_on == "lower" and at_point is not None and at_point != row.replicas:
        text += f" ({at_point})"
    return text


def _share(row: EnvironmentRow) -> str:
    share = row.cheapest_share
    return "–" if share is None else f"{share:.0%}"


def _energy_cells(row: EnvironmentRow) -> list[str]:
    """kWh per million output tokens, labelled measured or declared, and the plan's energy a
    month (its cost where a price per kWh was given); tokens per joule are in energy_rows."""
    energy = row.energy
    month = "–"
    if energy.monthly_energy_cost is not None:
        month = money(energy.monthly_energy_cost)
    elif energy.monthly_kwh is not None:
        month = f"{energy.monthly_kwh:,.0f} kWh"
    return [labelled(energy.kwh_per_million_tokens, energy.basis), month]


def _whole_answers(comparison: Comparison) -> bool:
    """Every environment measured served only whole answers of items (embeddings, rerank): its
    throughput column is items/s, not tokens/s."""
    measured = [row for row in comparison.environments if row.capacity_rps is not None]
    return bool(measured) and all(row.whole_answers for row in measured)


def table_rows(comparison: Comparison) -> list[tuple[Status, list[str]]]:
    """(status, cells) per environment, in the comparison's order, for every text format."""
    rows = []
    whole = _whole_answers(comparison)
    for row in comparison.environments:
        cells = [
            row.name,
            _capacity(row),
            _knee(row),
            _num(row.items_per_s if whole else row.output_tokens_per_s),
            _num(row.ttft_p95_ms),
            _num(row.itl_p95_ms),
            _num(row.e2e_p95_ms),
            _num(row.cold_start_s),
            _num(row.memory_growth_mb_per_min),
            _replicas(row),
            money(row.monthly_cost),
            money(_per_million_items(row) if whole else row.cost_per_million_tokens),
            *_energy_cells(row),
            _share(row),
            row.status,
        ]
        rows.append((row.status, cells))
    return rows


def _per_million_items(row: EnvironmentRow) -> float | None:
    """What a million items (inferences, inputs) cost on one replica at capacity: cost/h ÷
    (items/s × 3600) × 10⁶, as a million output tokens' is for generation."""
    if row.cost_per_replica_hour is None or not row.items_per_s:
        return None
    return round(row.cost_per_replica_hour / (row.items_per_s * 3600.0) * 1e6, 4)


COLUMNS: Sequence[str] = (
    "environment",
    "capacity req/s",
    "knee",
    "tok/s",
    "TTFT p95 ms",
    "ITL p95 ms",
    "e2e p95 ms",
    "cold start s",
    "mem MB/min",
    "replicas",
    "per month",
    "per M tok",
    "kWh per M tok",
    "energy a month",
    "cheapest in",
    "status",
)
# The share column says what the resamples rank by (`recommend.by`).
_SHARE_HEADER: dict[RankBy, str] = {
    "cost": "cheapest in",
    "energy": "most efficient in",
    "cost_with_energy": "cheapest with energy in",
}


def columns(comparison: Comparison) -> list[str]:
    """The table's headers for this comparison (the share column follows `recommend.by`)."""
    share = _SHARE_HEADER[comparison.ranking.by]
    throughput = "items/s" if _whole_answers(comparison) else "tok/s"
    per_million = "per M items" if throughput == "items/s" else "per M tok"
    renamed = {"cheapest in": share, "tok/s": throughput, "per M tok": per_million}
    return [renamed.get(name, name) for name in COLUMNS]


ENERGY_COLUMNS: Sequence[str] = (
    "environment",
    "measured kWh/M tok",
    "measured tok/J",
    "measured W",
    "declared kWh/M tok",
    "declared tok/J",
    "declared W",
    "declared source",
)


def _sig(value: float | None) -> str:
    """Three significant figures: energy per token spans orders of magnitude (0.0434, 0.105)."""
    return "–" if value is None else f"{value:.3g}"


def energy_rows(comparison: Comparison) -> list[list[str]]:
    """Each environment's measured and declared figures at capacity, side by side, never merged;
    a row without measured figures says why in their place."""
    rows = []
    for row in comparison.environments:
        energy = row.energy
        measured, declared = energy.measured, energy.declared
        if measured:
            seen = [_sig(measured.kwh_per_million_tokens), _sig(measured.tokens_per_joule)]
            seen.append(_sig(measured.watts_per_replica))
        else:
            seen = [str(energy.not_measured or "not measured"), "–", "–"]
        said = ["–", "–", "–", "–"]
        if declared:
            said = [_sig(declared.kwh_per_million_tokens), _sig(declared.tokens_per_joule)]
            said += [_sig(declared.watts_per_replica), str(declared.source or "")]
        rows.append([row.name, *seen, *said])
    return rows


def ranking_line(comparison: Comparison) -> str:
    """What ranked the environments, and whether the energy figures are measured or declared."""
    ranking = comparison.ranking
    by, note, price = ranking.by, ranking.energy_note, ranking.price_per_kwh
    if by == "energy":
        what = "energy per million output tokens at capacity (recommend.by: energy)"
    elif by == "cost_with_energy":
        what = (
            f"replica cost plus energy at {money(price)} per kWh, each replica drawing its power at "
            "capacity all month (recommend.by: cost_with_energy)"
        )
    else:
        what = "replica cost a month (recommend.by: cost; energy is shown, not ranked)"
    return f"ranked by {what}; {note}" if note else f"ranked by {what}"


def _reasons(comparison: Comparison) -> list[tuple[str, str]]:
    """(environment, why it lost) for every environment but the recommendation."""
    return [
        (row.name, row.lost_because)
        for row in comparison.environments
        if row.status != "recommended" and row.lost_because
    ]


def _basis_line(comparison: Comparison) -> str:
    basis = comparison.plan_basis
    by = comparison.ranking.by
    if basis is None:
        return "no replica plan: no run had a capacity: section"
    spare = f" + {basis.redundancy} spare" if basis.redundancy else ""
    sized = (
        "sized on the lower bound of each capacity's 95% interval (in brackets: at the point estimate)"
        if basis.plan_on == "lower"
        else "sized on each capacity's point estimate"
    )
    return (
        f"plans for a peak of {format_number(basis.peak_rate)} {basis.unit} at "
        f"{format_number(basis.target_utilization * 100)}% target utilisation{spare}, {sized}; "
        "capacity and latencies at SLO (the highest load level at which every SLO held); "
        f"{_SHARE_HEADER[by]}: the share of resamples of the capacities in which "
        f"that plan is {FIRST[by]}"
    )


# The terminal's narrower table: the three p95 latencies share a column, so do the two costs.
_TERMINAL_COLUMNS: Sequence[str] = (
    "environment",
    "capacity\nreq/s",
    "knee",
    "tok/s",
    "p95 ms\nTTFT/ITL/e2e",
    "cold\nstart s",
    "memory\nMB/min",
    "replicas",
    "cost a month\n(per M tok)",
    "energy\nkWh/M tok",
    "first\nin",
    "status",
)

# The terminal's headers that an API of items (only whole answers) names per item.
_PER_ITEM_HEADERS = {"tok/s": "items/s", "cost a month\n(per M tok)": "cost a month\n(per M items)"}


def _terminal_cells(cells: Sequence[str]) -> list[str]:
    name, capacity, knee, tokens, ttft, itl, e2e, cold, memory, replicas, month, per_m, *rest = cells
    kwh, _, share, status = rest
    cost = month if per_m == "–" else f"{month} ({per_m})"
    latency = f"{ttft}/{itl}/{e2e}"
    return [name, capacity, knee, tokens, latency, cold, memory, replicas, cost, kwh, share, status]


def print_environments(comparison: Comparison, console: Console) -> None:
    table = Table(title=f"environments: {comparison.name}", title_justify="left")
    last = len(_TERMINAL_COLUMNS) - 1
    whole = _whole_answers(comparison)
    for index, column in enumerate(_TERMINAL_COLUMNS):
        if whole:  # an API of items: its throughput and price per item
            column = _PER_ITEM_HEADERS.get(column, column)
        table.add_column(
            column, justify="left" if index in (0, last) else "right", no_wrap=index in (0, last)
        )
    for status, cells in table_rows(comparison):
        table.add_row(*_terminal_cells(cells), style=_STATUS_STYLE[status] or None)
    console.print(table)
    console.print(_basis_line(comparison), markup=False, soft_wrap=True)
    console.print(ranking_line(comparison), markup=False, soft_wrap=True)
    for name, why in _reasons(comparison):
        console.print(f"  {name}: {why}", markup=False, soft_wrap=True)
    headline = _HEADLINE[comparison.verdict]
    console.print(f"{headline}: {comparison.reason}", markup=False, soft_wrap=True)


def render_markdown(comparison: Comparison) -> str:
    lines = [
        f"# Environments: {comparison.name}",
        "",
        f"**{_HEADLINE[comparison.verdict]}**: {comparison.reason}",
        "",
        _basis_line(comparison) + ".",
        "",
        ranking_line(comparison) + ".",
        "",
        "| " + " | ".join(columns(comparison)) + " |",
        "| "
        + " | ".join("---" if i in (0, len(COLUMNS) - 1) else "---:" for i in range(len(COLUMNS)))
        + " |",
    ]
    for status, cells in table_rows(comparison):
        if status == "recommended":
            cells = [f"**{cell}**" for cell in cells]
        lines.append("| " + " | ".join(cells) + " |")
    reasons = _reasons(comparison)
    if reasons:
        lines += ["", "## Why not the others", ""]
        lines += [f"- **{name}**: {why}" for name, why in reasons]
    lines += [
        "",
        "## Energy at capacity",
        "",
        "Measured (Zeus: NVML, amdsmi, RAPL) and declared (`power:`) figures are kept apart; the "
        "table above shows the one the ranking uses, labelled.",
        "",
        "| " + " | ".join(ENERGY_COLUMNS) + " |",
        "| " + " | ".join(["---"] * len(ENERGY_COLUMNS)) + " |",
        *("| " + " | ".join(cells) + " |" for cells in energy_rows(comparison)),
    ]
    notes = [(row.name, row.notes) for row in comparison.environments if row.notes]
    if notes:
        lines += ["", "## Environments", ""]
        lines += [f"- **{name}**: {text}" for name, text in notes]
    if comparison.slo:
        lines += ["", "## SLOs", ""]
        for slo in comparison.slo:
            unit = slo.unit or ""
            lines.append(f"- {slo.name} {slo.op} {_num(slo.threshold)} {unit}".rstrip())
    return "\n".join(lines) + "\n"

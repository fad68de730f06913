"""Render a release-gate comparison: a rich table (with each latency row's minimum detectable
effect, `mde`), one summary line, optional JSON."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from loadgen.compare.compare_power import format_mde
from loadgen.compare.gate import Comparison, Row, format_change
from loadgen.fmt import format_number

_STYLES = {
    "regression": "bold red",
    "improvement": "green",
    "not significant": "yellow",
    "inconclusive": "magenta",
    "ok": "",
    "n/a": "dim",
}


def _value(row: Row, value: float | None) -> str:
    if value is None:
        return "—"
    if row.metric == "error rate":
        return f"{format_number(value * 100)}%"
    return f"{format_number(value)} {row.unit}".strip()


def _p_value(p_value: float | None) -> str:
    if p_value is None:
        return "—"
    return "<0.001" if p_value < 0.001 else f"{p_value:.3f}"


def comparison_table(comparison: Comparison) -> Table:
    table = Table()
    for name, justify in (
        ("metric", "left"),
        ("baseline", "right"),
        ("current", "right"),
        ("change", "right"),
        ("p-value", "right"),
        ("mde", "right"),
        ("verdict", "left"),
    ):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in comparison.rows:
        style = _STYLES[row.verdict]
        table.add_row(
            row.metric,
            _value(row, row.baseline),
            _value(row, row.current),
            format_change(row.change),
            _p_value(row.p_value),
            format_mde(row.mde),
            f"[{style}]{row.verdict}[/]" if style else row.verdict,
        )
    return table


def print_comparison(comparison: Comparison, console: Console, baseline: str, current: str) -> None:
    console.print(f"baseline: {baseline}\ncurrent:  {current}", markup=False, soft_wrap=True)
    console.print(comparison_table(comparison))
    for note in comparison.notes:
        console.print(f"note: {note}", markup=False, soft_wrap=True)
    console.print(comparison.headline(), markup=False, soft_wrap=True)


def write_comparison_json(comparison: Comparison, path: Path) -> None:
    path.write_text(json.dumps(comparison.to_dict(), indent=2) + "\n", encoding="utf-8")

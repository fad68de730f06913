"""The end-of-run summary on the terminal: key numbers and one line per SLO."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from loadgen.fmt import format_number


def print_summary(report: dict[str, Any], console: Console) -> None:
    metrics = report["metrics"]
    ttft, e2e = metrics.get("ttft_ms") or {}, metrics.get("e2e_ms") or {}
    console.print(
        f"{metrics.get('requests', 0)} requests · {_num(metrics.get('achieved_rate'))} of "
        f"{_num(metrics.get('target_rate'))} req/s · {_num(metrics.get('output_tokens_per_s'))} tok/s · "
        f"TTFT p50/p95 {_num(ttft.get('p50'))}/{_num(ttft.get('p95'))} ms · "
        f"e2e p95 {_num(e2e.get('p95'))} ms · errors {metrics.get('errors', 0)}"
    )
    if not report.get("slo"):
        return
    table = Table(show_header=True, header_style="bold")
    for column in ("SLO", "observed", "threshold", "result"):
        table.add_column(column, justify="left" if column == "SLO" else "right")
    for slo in report["slo"]:
        unit = slo.get("unit", "")
        observed = (
            f"{_num(slo.get('observed'))} {unit}" if slo.get("observed") is not None else "not measured"
        )
        result = "[green]pass[/green]" if slo["passed"] else "[red]FAIL[/red]"
        table.add_row(
            slo["name"], observed, f"{slo.get('op', '')} {_num(slo.get('threshold'))} {unit}", result
        )
    console.print(table)


def _num(value: object) -> str:
    return format_number(float(value)) if isinstance(value, int | float) else "–"

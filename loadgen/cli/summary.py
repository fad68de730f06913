"""The end-of-run summary on the terminal: key numbers and one line per SLO."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from loadgen.fmt import format_number
from loadgen.report.energy_words import energy_line
from loadgen.report.model import Report


def print_summary(report: Report, console: Console) -> None:
    metrics = report.metrics
    ttft, e2e = metrics.ttft_ms, metrics.e2e_ms
    console.print(
        f"{metrics.requests} requests · {_num(metrics.achieved_rate)} of "
        f"{_num(metrics.target_rate)} req/s · {_num(metrics.output_tokens_per_s)} tok/s · "
        f"TTFT p50/p95 {_num(ttft.p50)}/{_num(ttft.p95)} ms · "
        f"e2e p95 {_num(e2e.p95)} ms · errors {metrics.errors}"
    )
    energy = energy_line(report.energy)
    if energy is not None:
        console.print(energy, markup=False, soft_wrap=True)
    if not report.slo:
        return
    table = Table(show_header=True, header_style="bold")
    for column in ("SLO", "observed", "threshold", "result"):
        table.add_column(column, justify="left" if column == "SLO" else "right")
    for slo in report.slo:
        observed = f"{_num(slo.observed)} {slo.unit}" if slo.observed is not None else "not measured"
        result = "[green]pass[/green]" if slo.passed else "[red]FAIL[/red]"
        table.add_row(slo.name, observed, f"{slo.op} {_num(slo.threshold)} {slo.unit}", result)
    console.print(table)


def _num(value: float | None) -> str:
    return "–" if value is None else format_number(float(value))

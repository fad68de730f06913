"""report.md's Energy section: the headline line, then each window's figures."""

from __future__ import annotations

from collections.abc import Sequence

from loadgen.fmt import format_number
from loadgen.report.energy_words import energy_line, sig, window_cells
from loadgen.report.model.energy import Energy


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(row) for row in rows), ""]


_FIGURES = ("s", "J", "W mean", "J/request", "J/token", "J/token above idle", "tokens/J")


def energy_lines(energy: Energy | None) -> list[str]:
    """The section; a run folder of an older version has none."""
    line = energy_line(energy)
    if energy is None or line is None:
        return []
    lines = ["## Energy", "", line, ""]
    if not energy.measured:
        return lines
    lines.append(f"Counted: {', '.join(energy.devices)} ({energy.how}; {energy.source or 'zeus'}).")
    if energy.idle is not None:
        idle = energy.idle
        lines.append(f"Idle before the traffic: {sig(idle.watts, 'W')} over {sig(idle.window_s, 's')}.")
    if energy.whole_run is not None:
        whole = energy.whole_run
        mean = sig(whole.mean_watts, "W")
        lines.append(f"Whole run: {sig(whole.joules, 'J')} over {sig(whole.span_s, 's')} ({mean} mean).")
    lines += ["", *(f"- {note}" for note in energy.notes), ""]
    if energy.levels:
        rows = [
            [format_number(level.level), sig(level.goodput_rps), sig(level.output_tokens_per_s),
             "held" if level.slo_passed else "failed", *window_cells(level.energy)]
            for level in energy.levels
        ]  # fmt: skip
        lines += _table(["level", "goodput req/s", "tok/s", "SLOs", *_FIGURES], rows)
    elif energy.phases:
        rows = [[str(window.phase), *window_cells(window)] for window in energy.phases]
        lines += _table(["phase", *_FIGURES], rows)
    return lines

"""report.md's Energy section: the headline line, then each window's figures."""

from __future__ import annotations

from collections.abc import Sequence

from loadgen.fmt import format_number
from loadgen.report.energy_words import energy_line, energy_table, sig
from loadgen.report.model.energy import Energy


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(row) for row in rows), ""]


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
    found = energy_table(energy, format_number)
    if found is not None:
        lines += _table(*found)
    return lines

"""Energy in words, said the same way by report.md, report.html and the terminal summary."""

from __future__ import annotations

from collections.abc import Callable

from loadgen.report.model.energy import Energy, EnergyWindow


def sig(value: float | None, unit: str = "") -> str:
    """Three significant figures, never in exponent form: 0.000412, 351, 3500."""
    if value is None:
        return "–"
    text = f"{value:.3g}"
    if "e" in text:  # 3.5e+03 → 3500, 4.1e-05 → 0.000041
        text = f"{value:.6f}".rstrip("0").rstrip(".") if abs(value) < 1 else f"{value:.0f}"
    return f"{text} {unit}".rstrip()


def headline_window(energy: Energy) -> tuple[str, EnergyWindow | None]:
    """(what the headline figures cover, their window): the capacity level of a search, else the
    measured traffic."""
    if energy.capacity is not None:
        return "at capacity", energy.capacity
    if energy.levels:
        return "at the operating point", energy.measured_window
    return "over the measured traffic", energy.measured_window


def energy_line(energy: Energy | None) -> str | None:
    """One line: the figures, or why there are none (None for a run folder of an older version)."""
    if energy is None:
        return None
    if not energy.measured:
        return "energy: off" if energy.setting == "off" else f"energy: not measured ({energy.reason})"
    where, window = headline_window(energy)
    devices = ", ".join(energy.devices)
    if window is None:
        return f"energy: measured on {devices}, but the samples do not cover the measured window"
    parts = [
        f"energy {where}: {sig(window.joules_per_output_token, 'J')} per output token "
        f"({sig(window.tokens_per_joule)} tokens/J)",
        f"{sig(window.joules_per_request, 'J')} per request",
        f"{sig(window.mean_watts, 'W')} mean on {devices}",
    ]
    if window.above_idle_joules_per_output_token is not None and window.idle_watts is not None:
        parts.append(
            f"{sig(window.above_idle_joules_per_output_token, 'J')} per token above idle "
            f"({sig(window.idle_watts, 'W')})"
        )
    return ", ".join(parts)


def window_cells(window: EnergyWindow) -> list[str]:
    """A window's figures in the column order of report.md's and report.html's energy tables."""
    return [
        sig(window.window_s),
        sig(window.joules),
        sig(window.mean_watts),
        sig(window.joules_per_request),
        sig(window.joules_per_output_token),
        sig(window.above_idle_joules_per_output_token),
        sig(window.tokens_per_joule),
    ]


WINDOW_FIGURES = ("s", "J", "W mean", "J/request", "J/token", "J/token above idle", "tokens/J")


def energy_table(
    energy: Energy, level_text: Callable[[float], str]
) -> tuple[list[str], list[list[str]]] | None:
    """The header and rows of the energy table of report.md and report.html: one row a searched
    level (its load written by `level_text`), else one a phase; None with neither."""
    if energy.levels:
        rows = [
            [level_text(level.level), sig(level.goodput_rps), sig(level.output_tokens_per_s),
             "held" if level.slo_passed else "failed", *window_cells(level.energy)]
            for level in energy.levels
        ]  # fmt: skip
        return ["level", "goodput req/s", "tok/s", "SLOs", *WINDOW_FIGURES], rows
    if energy.phases:
        return ["phase", *WINDOW_FIGURES], [
            [str(window.phase), *window_cells(window)] for window in energy.phases
        ]
    return None

"""Number formatting shared by messages and reports."""

from __future__ import annotations


def format_number(value: float) -> str:
    """At most 3 decimals, no trailing zeros: 812.0 → '812', 0.0125 → '0.013'."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def format_figure(value: float | None, unit: str = "") -> str:
    """A figure as report.md writes one: '–' when missing, then its unit ('%' unspaced)."""
    if value is None:
        return "–"
    return f"{format_number(float(value))}{'' if unit == '%' else ' '}{unit}".rstrip()

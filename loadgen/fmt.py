"""Number formatting shared by messages and reports."""

from __future__ import annotations


def format_number(value: float) -> str:
    """At most 3 decimals, no trailing zeros: 812.0 → '812', 0.0125 → '0.013'."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text

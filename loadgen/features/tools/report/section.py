"""Tool calls' report section, as loadgen.report asks it of a slice (SliceSection): report.md's
line under "Key numbers", report.html's card among the key numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from loadgen.features.tools.report.model import FIELD
from loadgen.fmt import format_figure as _md
from loadgen.report.html.page import Card
from loadgen.report.slice_sections import SliceSection

if TYPE_CHECKING:
    from loadgen.report.model.metrics import Metrics


def _percent(share: float | None) -> float | None:
    return None if share is None else 100 * share


def _key_lines(metrics: Metrics) -> list[str]:
    """How many answers called a tool, and whether the calls' arguments parse."""
    tools = FIELD.of(metrics)
    if not tools:
        return []
    return [
        f"- Tool calls: {tools.requests_with_calls} of {tools.requests} requests answered with a "
        "call · "
        f"{tools.calls} calls ({_md(tools.calls_per_s, 'calls/s')}), "
        f"{_md(_percent(tools.tool_call_valid), '%')} with valid JSON arguments"
    ]


def _cards(metrics: Metrics) -> list[Card]:
    """The share of calls whose arguments parse; a warning below all of them."""
    from loadgen.report.html.summary_section import num  # matplotlib: report.html's only

    tools = FIELD.of(metrics)
    if not tools:
        return []
    valid = tools.tool_call_valid
    status: Literal["none", "warn"] = "none" if valid is None or valid >= 1.0 else "warn"
    shown = "–" if valid is None else num(float(valid) * 100, "%")
    return [
        Card(
            "tool calls valid",
            shown,
            f"{num(tools.calls)} calls in {num(tools.requests_with_calls)} of {num(tools.requests)} answers",
            status=status,
        )
    ]


SECTION = SliceSection(key_lines=_key_lines, cards=_cards)

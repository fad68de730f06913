"""Reasoning streams' report section, as loadgen.report asks it of a slice (SliceSection):
report.md's lines under "Key numbers", report.html's "Reasoning" section; and, where the run
reasoned, TTFAT in the latency table (it then differs from TTFT)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from loadgen.features.reasoning.report.markdown import reasoning_lines
from loadgen.features.reasoning.report.model import FIELD
from loadgen.report.html.page import Section
from loadgen.report.slice_sections import SliceSection

if TYPE_CHECKING:
    from loadgen.report.html.series import Columns
    from loadgen.report.model.metrics import Metrics, SLOCheck


def _sections(metrics: Metrics, counted: Columns, slos: Sequence[SLOCheck]) -> list[Section]:
    from loadgen.features.reasoning.report.html import reasoning_body  # matplotlib: report.html's only

    reasoning = FIELD.of(metrics)
    if not reasoning:
        return []
    return [Section("Reasoning", reasoning_body(metrics, reasoning, counted, slos), "reasoning")]


def _answer_later(metrics: Metrics) -> bool:
    return FIELD.of(metrics) is not None


SECTION = SliceSection(key_lines=reasoning_lines, sections=_sections, answer_later=_answer_later)

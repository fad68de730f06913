"""The slices' report sections: what report.md and report.html show of a slice's `metrics.<key>`
(its model: loadgen/report/slice_fields.py). A slice with a report side (`Slice.report`) gives a
`SliceSection` as `<report>.section`'s SECTION; the writers loop over them, in SLICES order, at
fixed places of the page, and never name a slice.

The report sides sit in a layer above loadgen.report, so they are imported by name, at first use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loadgen.report.slice_fields import report_parts

if TYPE_CHECKING:
    from loadgen.report.html.page import Card, Section
    from loadgen.report.html.series import Columns
    from loadgen.report.model.metrics import Metrics, SLOCheck


def _no_lines(metrics: Metrics) -> list[str]:
    return []


def _no_cards(metrics: Metrics) -> list[Card]:
    return []


def _never(metrics: Metrics) -> bool:
    return False


def _no_sections(metrics: Metrics, counted: Columns, slos: Sequence[SLOCheck]) -> list[Section]:
    return []


@dataclass(frozen=True)
class SliceSection:
    """A slice's parts of the reports, each given the run's (or the operating point's) `metrics`
    and empty where the run has none of the feature:
    - `key_lines`: report.md's bullets under "Key numbers", after the core's run-wide figures;
    - `lines`: report.md's own subsection, under "Latency" after the core's (classes, sessions);
    - `cards`: report.html's key-number cards on the first screen, after the error rates;
    - `sections`: report.html's sections (title, body, anchor), after the latency distributions
      and the core's per-feature sections, before the prefix cache; `counted`: the measured
      records' columns, `slos`: the checks, for a chart that draws them;
    - `answer_later`: whether the slice's part says answers came after a first token of
      another kind, so that TTFAT, the core's, differs from TTFT and report.md's latency table
      shows it."""

    key_lines: Callable[[Metrics], list[str]] = _no_lines
    lines: Callable[[Metrics], list[str]] = _no_lines
    cards: Callable[[Metrics], list[Card]] = _no_cards
    sections: Callable[[Metrics, Columns, Sequence[SLOCheck]], list[Section]] = _no_sections
    answer_later: Callable[[Metrics], bool] = _never


@functools.cache
def slice_sections() -> tuple[SliceSection, ...]:
    """The slices' sections, in SLICES order."""
    return report_parts("section", "SECTION", SliceSection)


def key_lines(metrics: Metrics) -> list[str]:
    return [line for section in slice_sections() for line in section.key_lines(metrics)]


def section_lines(metrics: Metrics) -> list[str]:
    return [line for section in slice_sections() for line in section.lines(metrics)]


def key_cards(metrics: Metrics) -> list[Card]:
    return [card for section in slice_sections() for card in section.cards(metrics)]


def html_sections(metrics: Metrics, counted: Columns, slos: Sequence[SLOCheck]) -> list[Section]:
    return [part for section in slice_sections() for part in section.sections(metrics, counted, slos)]


def answers_later(metrics: Metrics) -> bool:
    """Whether some slice says the run's answers came after a first token of another kind."""
    return any(section.answer_later(metrics) for section in slice_sections())

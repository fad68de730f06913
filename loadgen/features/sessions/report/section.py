"""Multi-turn sessions' report section, as loadgen.report asks it of a slice (SliceSection):
report.md's "Sessions" lines under "Latency", report.html's "Sessions" section. SESSIONS is the
first slice, so both come where the core wrote them: before the other slices' parts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from loadgen.features.sessions.report.markdown import session_lines
from loadgen.report.html.page import Section
from loadgen.report.slice_sections import SliceSection

if TYPE_CHECKING:
    from loadgen.report.html.series import Columns
    from loadgen.report.model.metrics import Metrics, SLOCheck


def _lines(metrics: Metrics) -> list[str]:
    return session_lines(metrics.sessions)


def _sections(metrics: Metrics, counted: Columns, slos: Sequence[SLOCheck]) -> list[Section]:
    from loadgen.features.sessions.report.html import sessions_body  # matplotlib: report.html's only

    return [Section("Sessions", sessions_body(metrics.sessions), "sessions")] if metrics.sessions else []


SECTION = SliceSection(lines=_lines, sections=_sections)

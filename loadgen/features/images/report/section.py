"""Image inputs' report section, as loadgen.report asks it of a slice (SliceSection): report.md's
"Images" lines under "Latency", report.html's "Images" section."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from loadgen.features.images.report.markdown import image_lines
from loadgen.features.images.report.model import FIELD
from loadgen.report.html.page import Section
from loadgen.report.slice_sections import SliceSection

if TYPE_CHECKING:
    from loadgen.report.html.series import Columns
    from loadgen.report.model.metrics import Metrics, SLOCheck


def _lines(metrics: Metrics) -> list[str]:
    return image_lines(FIELD.of(metrics))


def _sections(metrics: Metrics, counted: Columns, slos: Sequence[SLOCheck]) -> list[Section]:
    from loadgen.features.images.report.html import images_body  # matplotlib: report.html's only

    images = FIELD.of(metrics)
    return [Section("Images", images_body(images), "images")] if images else []


SECTION = SliceSection(lines=_lines, sections=_sections)

"""Which SLOs draw a threshold line on which chart, and how the line is labelled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from loadgen.fmt import format_number
from loadgen.report.html.charts import Threshold
from loadgen.report.model.metrics import SLOCheck

_OPS = {"<=": "≤", ">=": "≥", "<": "<", ">": ">"}


def split_name(name: str) -> tuple[str | None, str]:
    """'chat: ttft p95' → ('chat', 'ttft p95'); 'ttft p95' → (None, 'ttft p95')."""
    if ": " in name:
        request_class, _, rest = name.partition(": ")
        return request_class, rest
    return None, name


def label(slo: SLOCheck) -> str:
    return f"SLO {slo.name} {_OPS[slo.op]} {format_number(slo.threshold)} {slo.unit}".rstrip()


def thresholds(
    slos: Sequence[SLOCheck],
    metrics: Sequence[str],
    axis: Literal["x", "y"] = "y",
    request_class: str | None = None,
) -> list[Threshold]:
    """Threshold lines for the SLOs whose metric (the name's first word: 'ttft', 'e2e',
    'output_tokens_per_s', ...) is one of `metrics`, of the given class (None: run-wide)."""
    found: list[Threshold] = []
    for slo in slos:
        owner, rest = split_name(slo.name)
        if owner != request_class or rest.split(" ")[0] not in metrics:
            continue
        found.append(Threshold(slo.name, slo.threshold, axis, label(slo)))
    return found

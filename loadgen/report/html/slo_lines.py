"""Which SLOs draw a threshold line on which chart, and how the line is labelled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from loadgen.fmt import format_number
from loadgen.report.html.charts import Threshold

_OPS = {"<=": "≤", ">=": "≥", "<": "<", ">": ">"}


def split_name(name: str) -> tuple[str | None, str]:
    """'chat: ttft p95' → ('chat', 'ttft p95'); 'ttft p95' → (None, 'ttft p95')."""
    if ": " in name:
        request_class, _, rest = name.partition(": ")
        return request_class, rest
    return None, name


def label(slo: Mapping[str, Any]) -> str:
    op = _OPS.get(str(slo.get("op", "<=")), str(slo.get("op")))
    unit = slo.get("unit") or ""
    return f"SLO {slo['name']} {op} {format_number(float(slo['threshold']))} {unit}".rstrip()


def thresholds(
    slos: Sequence[Mapping[str, Any]],
    metrics: Sequence[str],
    axis: Literal["x", "y"] = "y",
    request_class: str | None = None,
) -> list[Threshold]:
    """Threshold lines for the SLOs whose metric (the name's first word: 'ttft', 'e2e',
    'output_tokens_per_s', ...) is one of `metrics`, of the given class (None: run-wide)."""
    found: list[Threshold] = []
    for slo in slos:
        if slo.get("threshold") is None:
            continue
        owner, rest = split_name(str(slo["name"]))
        if owner != request_class or rest.split(" ")[0] not in metrics:
            continue
        found.append(Threshold(str(slo["name"]), float(slo["threshold"]), axis, label(slo)))
    return found

"""report.html's "Reasoning" section (`metrics.reasoning`): how much of the output was thinking,
and TTFT against TTFAT: a reasoning stream's first token is its first reasoning token, its first
answer token comes after the thinking. Cards quote report.json; the CDFs read the records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from loadgen.features.reasoning.report.model import Reasoning
from loadgen.report.html import slo_lines
from loadgen.report.html.charts import Chart, line_chart
from loadgen.report.html.distribution_section import Y_LABEL, cdf_series
from loadgen.report.html.page import Card, cards, grid
from loadgen.report.html.series import Columns
from loadgen.report.html.summary_section import num

if TYPE_CHECKING:
    from loadgen.report.model.metrics import Metrics, SLOCheck


def reasoning_cards(metrics: Metrics, reasoning: Reasoning) -> str:
    thinking, share = reasoning.reasoning_ms, reasoning.reasoning_share
    items = [
        Card("requests that reasoned", num(reasoning.requests), f"of {num(metrics.requests)}"),
        Card(
            "reasoning share",
            num(None if share is None else share * 100, "%"),
            f"{num(reasoning.reasoning_tokens)} reasoning, {num(reasoning.answer_tokens)} answer tokens",
        ),
        Card("reasoning tokens/s", num(reasoning.reasoning_tokens_per_s, "tok/s"), "part of output"),
        Card(
            "TTFAT p95",
            num(metrics.ttfat_ms.p95, "ms"),
            f"first answer token · TTFT p95 {num(metrics.ttft_ms.p95, 'ms')} (first token of any kind)",
        ),
        Card(
            "reasoning time p50",
            num(thinking.p50, "ms"),
            f"p95 {num(thinking.p95, 'ms')} · first reasoning → first answer token",
        ),
    ]
    return cards(items)


def ttfat_chart(counted: Columns, slos: Sequence[SLOCheck]) -> Chart | None:
    ttft, ttfat = counted.ttft_ms(), counted.ttfat_ms()
    if not len(ttft):
        return None
    series = [
        cdf_series("ttft", "TTFT", ttft),
        cdf_series("ttfat", "TTFAT", ttfat),
    ]
    return line_chart(
        "ttfat-cdf",
        "TTFT (first token) vs TTFAT (first answer token)",
        "ms from the scheduled send (log)",
        Y_LABEL,
        series,
        thresholds=slo_lines.thresholds(slos, ["ttft", "ttfat"], axis="x"),
        log_x=True,
        caption="The gap between the curves is the thinking: a reasoning stream's first token is its "
        "first reasoning token, its answer starts after it.",
    )


def thinking_chart(counted: Columns) -> Chart | None:
    times = counted.extra["reasoning_ms"]
    thinking = times[np.isfinite(times)]
    if not len(thinking):
        return None
    return line_chart(
        "reasoning-time-cdf",
        "Reasoning time",
        "ms from the first reasoning token to the first answer token (log)",
        Y_LABEL,
        [cdf_series("reasoning-time", "reasoning time", thinking)],
        log_x=True,
        caption="How long each answer thought before answering (streams that reasoned only).",
    )


def reasoning_body(metrics: Metrics, reasoning: Reasoning, counted: Columns, slos: Sequence[SLOCheck]) -> str:
    """The section's HTML."""
    charts = [chart for chart in (ttfat_chart(counted, slos), thinking_chart(counted)) if chart is not None]
    return reasoning_cards(metrics, reasoning) + grid([chart.html() for chart in charts])

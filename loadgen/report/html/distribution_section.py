"""Latency distributions as CDFs (log x), from the schedule and from the send; per class and
per group of a slice's grouping (an adapter)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from loadgen.collect.slice_registry import Grouping
from loadgen.report.html import slo_lines
from loadgen.report.html.charts import Chart, Series, line_chart
from loadgen.report.html.page import table
from loadgen.report.html.series import Columns, cdf
from loadgen.report.html.summary_section import num
from loadgen.report.model.metrics import Metrics, SLOCheck

Y_LABEL = "fraction of requests ≤ x"


def cdf_series(name: str, label: str, values: np.ndarray, **extra: Any) -> Series:
    x, y = cdf(values)
    return Series(
        name, np.round(x, 3), np.round(y, 5), label=f"{label} (n={len(values[np.isfinite(values)])})", **extra
    )


def _cdf_chart(
    chart_id: str,
    title: str,
    series: Sequence[Series],
    thresholds: Sequence[Any],
    caption: str,
    x_label: str = "ms",
) -> Chart:
    return line_chart(
        chart_id, title, x_label, Y_LABEL, series, thresholds=thresholds, log_x=True, caption=caption
    )


def distribution_charts(counted: Columns, slos: Sequence[SLOCheck], scope: str = "") -> list[Chart]:
    """TTFT, ITL and e2e CDFs of the counted records (past warm-up), SLO thresholds as vertical
    lines; a metric without values (no streamed tokens, say) has no chart."""
    where = f" ({scope})" if scope else ""
    ttft, e2e, itl = counted.ttft_ms(), counted.e2e_ms(), counted.itl_ms()
    charts = []
    if len(ttft):
        series = [
            cdf_series("ttft", "from schedule", ttft),
            cdf_series("ttft-from-send", "from send", counted.ttft_ms(from_send=True), dashed=True),
        ]
        caption = (
            "From schedule counts client lag and slot waits (what users feel, what SLOs judge); "
            "from send is what the server did."
        )
        thresholds = slo_lines.thresholds(slos, ["ttft"], axis="x")
        title = f"TTFT distribution{where}"
        charts.append(
            _cdf_chart("ttft-cdf", title, series, thresholds, caption, "time to first token (ms, log)")
        )
    if len(itl):
        series = [cdf_series("itl", "per-token gap", itl)]
        thresholds = slo_lines.thresholds(slos, ["itl"], axis="x")
        title = f"Inter-token latency distribution{where}"
        caption = "Every gap between streamed tokens, pooled over requests."
        charts.append(_cdf_chart("itl-cdf", title, series, thresholds, caption, "inter-token gap (ms, log)"))
    if len(e2e):
        series = [
            cdf_series("e2e", "from schedule", e2e),
            cdf_series("e2e-from-send", "from send", counted.e2e_ms(from_send=True), dashed=True),
        ]
        thresholds = slo_lines.thresholds(slos, ["e2e"], axis="x")
        title = f"End-to-end latency distribution{where}"
        caption = "Failed and timed-out requests keep their elapsed time."
        charts.append(
            _cdf_chart("e2e-cdf", title, series, thresholds, caption, "end-to-end latency (ms, log)")
        )
    return charts


def class_charts(counted: Columns, classes: Sequence[str], slos: Sequence[SLOCheck]) -> list[Chart]:
    """TTFT and e2e CDFs with one curve per workload class (and each class's SLO lines)."""
    charts = []
    for metric, title, values_of in (
        ("ttft", "TTFT by class", Columns.ttft_ms),
        ("e2e", "e2e by class", Columns.e2e_ms),
    ):
        series, thresholds = [], []
        for name in classes:
            own = counted.select(counted.request_class == name)
            values = values_of(own)
            if len(values):
                series.append(cdf_series(f"{metric}-{name}", name, values))
            thresholds += slo_lines.thresholds(slos, [metric], axis="x", request_class=name)
        if series:
            charts.append(
                _cdf_chart(
                    f"{metric}-by-class",
                    title,
                    series,
                    thresholds,
                    "From the scheduled send; dashed red lines are each class's SLOs.",
                    f"{metric.upper() if metric == 'ttft' else metric} (ms, log)",
                )
            )
    return charts


def group_chart(
    counted: Columns, grouping: Grouping, names: Sequence[str], slos: Sequence[SLOCheck]
) -> list[Chart]:
    """A TTFT CDF with one curve per group of a slice's grouping (and each group's TTFT SLOs): a
    group that pays a cost of its own at times (an adapter's load) shows it as a step."""
    series, thresholds, label = [], [], grouping.label
    labels = counted.labels[grouping.field]
    for name in names:
        values = counted.select(labels == name).ttft_ms()
        if len(values):
            series.append(cdf_series(f"ttft-{label}-{name}", name, values))
        thresholds += slo_lines.thresholds(slos, ["ttft"], axis="x", request_class=f"{label} {name}")
    if not series:
        return []
    caption = f"From the scheduled send; dashed red lines are each {label}'s SLOs."
    title = f"TTFT by {grouping.noun}"
    return [_cdf_chart(f"ttft-by-{label}", title, series, thresholds, caption, "TTFT (ms, log)")]


def _percent(rate: float | None) -> str:
    return "–" if rate is None else num(rate * 100, "%")


def class_table(classes: Mapping[str, Metrics], label: str = "class") -> str:
    """One row per class (or a slice's group, an adapter: `label`); a `cancelled` column only when some had
    cancellations."""
    some_cancelled = any(metrics.cancelled for metrics in classes.values())
    rows = []
    for name, metrics in classes.items():
        rows.append(
            [
                name,
                num(metrics.requests),
                num(metrics.achieved_rate, "req/s"),
                num(metrics.output_tokens_per_s, "tok/s"),
                _percent(metrics.error_rate),
                *([_percent(metrics.cancel_rate)] if some_cancelled else []),
                *(
                    num(value)
                    for latency in (metrics.ttft_ms, metrics.itl_ms, metrics.e2e_ms)
                    for value in (latency.p50, latency.p95)
                ),
            ]
        )
    headers = [label, "requests", "rate", "tokens/s", "errors", *(["cancelled"] if some_cancelled else [])]
    headers += [f"{m} {p} (ms)" for m in ("TTFT", "ITL", "e2e") for p in ("p50", "p95")]
    return table(headers, rows)

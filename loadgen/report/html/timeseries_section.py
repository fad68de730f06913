"""Time series on the run clock in 1-s bins: arrivals, in flight, latency, errors, tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from loadgen.report.html import slo_lines
from loadgen.report.html.charts import PALETTE, Chart, Series, Span, line_chart
from loadgen.report.html.series import Bins, Columns, binned_percentiles, in_flight_mean, thin

TIME_LABEL = "time since run start (s)"
MAX_POINTS = 1200  # a longer series is thinned (min and max of each stretch kept)


def run_bins(columns: Columns, spans: Sequence[Span], width_s: float = 1.0) -> Bins:
    """1-s bins from 0 to the last thing that happened (a send, an answer, a phase's end)."""
    ends = [span.end for span in spans]
    for times in (columns.scheduled, columns.done, columns.sent):
        finite = times[np.isfinite(times)]
        if len(finite):
            ends.append(float(finite.max()))
    return Bins.covering(max([*ends, width_s]), width_s)


def _series(name: str, label: str, x: np.ndarray, y: np.ndarray, **extra: Any) -> Series:
    x, y = thin(x, y, MAX_POINTS)
    return Series(name, np.round(x, 3), y, label=label, **extra)


def wide_range(values: Sequence[np.ndarray], ratio: float = 8.0) -> bool:
    """Log scale when the positive values span more than `ratio` (a tail next to a body)."""
    finite = np.concatenate([v[np.isfinite(v) & (v > 0)] for v in values] or [np.empty(0)])
    return bool(len(finite) and finite.max() / max(finite.min(), 1e-9) > ratio)


def arrival_chart(
    columns: Columns, bins: Bins, spans: Sequence[Span], slos: Sequence[Mapping[str, Any]]
) -> Chart:
    x = bins.starts
    return line_chart(
        "arrival-rate",
        "Arrival rate: target vs achieved",
        TIME_LABEL,
        "requests/s",
        [
            # Target wide and grey underneath, so achieved stays visible where they agree.
            _series(
                "target",
                "target (scheduled)",
                x,
                bins.rate(columns.scheduled),
                style="step",
                color="#9e9e9e",
                line_width=4.0,
            ),
            _series(
                "achieved", "achieved (sent)", x, bins.rate(columns.sent), style="step", color=PALETTE[0]
            ),
        ],
        thresholds=slo_lines.thresholds(slos, ["request_rate"]),
        spans=spans,
        y_min=0,
        x_min=0,
        caption="Requests due (scheduled_s) and sent (sent_s) per 1-s bin; warm-up hatched.",
    )


def in_flight_chart(columns: Columns, bins: Bins, spans: Sequence[Span]) -> Chart:
    return line_chart(
        "in-flight",
        "Requests in flight",
        TIME_LABEL,
        "requests (time-averaged)",
        [
            _series(
                "in-flight",
                "in flight",
                bins.starts,
                in_flight_mean(columns.sent, columns.done, bins),
                style="step",
            )
        ],
        spans=spans,
        y_min=0,
        x_min=0,
        caption="Mean number of requests between send and last byte, per 1-s bin.",
    )


def latency_chart(
    columns: Columns, bins: Bins, spans: Sequence[Span], slos: Sequence[Mapping[str, Any]]
) -> Chart:
    ttft = binned_percentiles(
        columns.scheduled, (columns.ttft_end() - columns.scheduled) * 1000, bins, (50, 95)
    )
    e2e = binned_percentiles(columns.scheduled, (columns.done - columns.scheduled) * 1000, bins, (95,))
    x = bins.centers
    return line_chart(
        "latency-over-time",
        "Latency per 1-s bin (from the scheduled send)",
        TIME_LABEL,
        "ms",
        [
            _series("ttft-p50", "TTFT p50", x, ttft[50]),
            _series("ttft-p95", "TTFT p95", x, ttft[95]),
            _series("e2e-p95", "e2e p95", x, e2e[95]),
        ],
        thresholds=slo_lines.thresholds(slos, ["ttft", "e2e"]),
        spans=spans,
        log_y=wide_range([ttft[50], e2e[95]]),
        x_min=0,
        caption="Requests binned by their scheduled time; gaps are seconds without a request.",
    )


def error_kinds(columns: Columns) -> dict[str, np.ndarray]:
    """Failed requests' finish times by kind: 'timeout', 'HTTP 503', 'error' (no HTTP status)."""
    kinds: dict[str, np.ndarray] = {}
    failed = columns.status != "ok"
    when = np.where(np.isfinite(columns.done), columns.done, columns.scheduled)
    timeouts = failed & (columns.status == "timeout")
    if timeouts.any():
        kinds["timeout"] = when[timeouts]
    errors = failed & ~timeouts
    codes = columns.http_status[errors]
    for code in sorted({float(c) for c in codes if np.isfinite(c) and c != 200}):
        kinds[f"HTTP {int(code)}"] = when[errors][codes == code]
    plain = errors & ~(np.isfinite(columns.http_status) & (columns.http_status != 200))
    if plain.any():
        kinds["error"] = when[plain]
    return kinds


def _zero_to_one(ax: Axes) -> None:
    ax.set_ylim(0, 1)  # "no errors" should read as 0 of a sensible scale, not 0 of 0.05


def errors_chart(columns: Columns, bins: Bins, spans: Sequence[Span]) -> Chart:
    kinds = error_kinds(columns)
    series = [
        _series(f"errors-{name}", name, bins.starts, bins.rate(times), style="step")
        for name, times in kinds.items()
    ]
    caption, title = "Failed requests per second at the time they ended, by kind.", "Errors per second"
    if not series:
        zero = np.zeros(len(bins.starts))
        series = [_series("errors", "errors", bins.starts, zero, style="step", color=PALETTE[2])]
        caption, title = "No request failed.", "Errors per second: none"
    return line_chart(
        "errors",
        title,
        TIME_LABEL,
        "errors/s",
        series,
        spans=spans,
        y_min=0,
        x_min=0,
        caption=caption,
        decorate=None if kinds else _zero_to_one,
    )


def tokens_chart(
    columns: Columns, bins: Bins, spans: Sequence[Span], slos: Sequence[Mapping[str, Any]]
) -> Chart:
    tokens = bins.rate(columns.done, columns.output_tokens)
    return line_chart(
        "output-tokens",
        "Output tokens per second",
        TIME_LABEL,
        "tokens/s",
        [_series("tokens", "output tokens/s", bins.starts, tokens, style="step")],
        thresholds=slo_lines.thresholds(slos, ["output_tokens_per_s"]),
        spans=spans,
        y_min=0,
        x_min=0,
        caption="Each request's output tokens counted in the second it finished.",
    )


def time_series_charts(
    columns: Columns, spans: Sequence[Span], slos: Sequence[Mapping[str, Any]]
) -> list[Chart]:
    bins = run_bins(columns, spans)
    charts = [arrival_chart(columns, bins, spans, slos), in_flight_chart(columns, bins, spans)]
    if np.isfinite(columns.done).any():  # no request ended (all still in flight): no latency
        charts.append(latency_chart(columns, bins, spans, slos))
    return [*charts, errors_chart(columns, bins, spans), tokens_chart(columns, bins, spans, slos)]

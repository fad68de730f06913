"""Time series on the run clock: arrivals, in flight, latency, errors, tokens.

Counts (arrivals, sends, in flight, errors, tokens) come from the exact per-second tallies of every
record (loadgen.collect.timeline); latency percentiles from the records the page holds: all of
them, or a uniform sample of a long run's (loadgen.collect.reservoir), whose bins are then widened
so that each holds enough sampled requests for a stable p95 (`bin_width`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from loadgen.collect.timeline import Timeline, coarsen
from loadgen.report.html import slo_lines
from loadgen.report.html.charts import PALETTE, Chart, Series, Span, line_chart
from loadgen.report.html.series import Bins, Columns, binned_percentiles, thin
from loadgen.report.model.metrics import SLOCheck

TIME_LABEL = "time since run start (s)"
MAX_POINTS = 1200  # a longer series is thinned (min and max of each stretch kept)
# A sampled run's bins hold about this many sampled requests each: a p95 of 200 values is within
# a few percent of the bin's true p95 (bench/html_report.py --sample-check measures it).
SAMPLED_PER_BIN = 200
NICE_WIDTHS_S = (1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 240, 300, 600, 900, 1200, 1800, 3600)


def run_bins(end_s: float, spans: Sequence[Span], width_s: float = 1.0) -> Bins:
    """Bins from 0 to the last thing that happened (`end_s`: a send, an answer; a phase's end)."""
    ends = [span.end for span in spans]
    return Bins.covering(max([*ends, end_s, width_s]), width_s)


def bin_width(span_s: float, sampled: int | None = None) -> float:
    """1 s; for a run drawn from a sample of `sampled` requests, the narrowest of NICE_WIDTHS_S
    (whole hours past the last) that leaves about SAMPLED_PER_BIN of them in each bin."""
    if not sampled:
        return 1.0
    wanted = span_s * SAMPLED_PER_BIN / sampled
    for width in NICE_WIDTHS_S:
        if width >= wanted:
            return float(width)
    return float(3600 * np.ceil(wanted / 3600))


def per_bin(width_s: float) -> str:
    """'per 1-s bin', 'per 120-s bin'."""
    return f"per {width_s:g}-s bin"


def _series(name: str, label: str, x: np.ndarray, y: np.ndarray, **extra: Any) -> Series:
    x, y = thin(x, y, MAX_POINTS)
    return Series(name, np.round(x, 3), y, label=label, **extra)


def wide_range(values: Sequence[np.ndarray], ratio: float = 8.0) -> bool:
    """Log scale when the positive values span more than `ratio` (a tail next to a body)."""
    finite = np.concatenate([v[np.isfinite(v) & (v > 0)] for v in values] or [np.empty(0)])
    return bool(len(finite) and finite.max() / max(finite.min(), 1e-9) > ratio)


def _rate(timeline: Timeline, name: str, bins: Bins) -> np.ndarray:
    """A per-second tally as a rate (per second) in each bin."""
    rate: np.ndarray = coarsen(timeline.tally(name), bins.edges) / bins.width
    return rate


def arrival_chart(timeline: Timeline, bins: Bins, spans: Sequence[Span], slos: Sequence[SLOCheck]) -> Chart:
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
                _rate(timeline, "scheduled", bins),
                style="step",
                color="#9e9e9e",
                line_width=4.0,
            ),
            _series(
                "achieved",
                "achieved (sent)",
                x,
                _rate(timeline, "sent", bins),
                style="step",
                color=PALETTE[0],
            ),
        ],
        thresholds=slo_lines.thresholds(slos, ["request_rate"]),
        spans=spans,
        y_min=0,
        x_min=0,
        caption=f"Requests due (scheduled_s) and sent (sent_s) {per_bin(bins.width[0])}; warm-up hatched.",
    )


def in_flight_chart(timeline: Timeline, bins: Bins, spans: Sequence[Span]) -> Chart:
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
                timeline.in_flight_mean(bins.edges),
                style="step",
            )
        ],
        spans=spans,
        y_min=0,
        x_min=0,
        caption=f"Mean number of requests between send and last byte, {per_bin(bins.width[0])}.",
    )


def latency_chart(columns: Columns, bins: Bins, spans: Sequence[Span], slos: Sequence[SLOCheck]) -> Chart:
    ttft = binned_percentiles(
        columns.scheduled, (columns.ttft_end() - columns.scheduled) * 1000, bins, (50, 95)
    )
    e2e = binned_percentiles(columns.scheduled, (columns.done - columns.scheduled) * 1000, bins, (95,))
    x = bins.centers
    return line_chart(
        "latency-over-time",
        f"Latency {per_bin(bins.width[0])} (from the scheduled send)",
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


def _zero_to_one(ax: Axes) -> None:
    ax.set_ylim(0, 1)  # "no errors" should read as 0 of a sensible scale, not 0 of 0.05


def errors_chart(timeline: Timeline, bins: Bins, spans: Sequence[Span]) -> Chart:
    kinds = timeline.error_kinds()
    series = [
        _series(
            f"errors-{name}",
            name,
            bins.starts,
            coarsen(timeline.errors[name], bins.edges) / bins.width,
            style="step",
        )
        for name in kinds
    ]
    caption, title = "Failed requests per second at the time they ended, by kind.", "Errors per second"
    if not series:
        zero = np.zeros(len(bins.starts))
        series = [_series("errors", "errors", bins.starts, zero, style="step", color=PALETTE[2])]
        caption, title = "No request failed.", "Errors per second: none"
    cancelled = timeline.tally("cancelled")  # stopped as planned; absent from a Timeline without them
    if cancelled.any():
        series.append(
            _series(
                "cancelled",
                "cancelled (not errors)",
                bins.starts,
                _rate(timeline, "cancelled", bins),
                style="step",
                dashed=True,
                color="#757575",
            )
        )
        caption += " Dashed: requests the client cancelled on purpose, which are not errors."
    return line_chart(
        "errors",
        title,
        TIME_LABEL,
        "requests/s" if cancelled.any() else "errors/s",
        series,
        spans=spans,
        y_min=0,
        x_min=0,
        caption=caption,
        decorate=None if kinds or cancelled.any() else _zero_to_one,
    )


def tokens_chart(timeline: Timeline, bins: Bins, spans: Sequence[Span], slos: Sequence[SLOCheck]) -> Chart:
    tokens = _rate(timeline, "tokens", bins)
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
        caption="Each request's output tokens counted in the second it finished."
        if bins.width[0] == 1
        else f"Each request's output tokens counted in the {bins.width[0]:g}-s bin it finished, per second.",
    )


def time_series_charts(
    columns: Columns,
    timeline: Timeline,
    spans: Sequence[Span],
    slos: Sequence[SLOCheck],
    width_s: float = 1.0,
    tokens: bool = True,
) -> list[Chart]:
    """`columns`: the records drawn (all, or a sample: latency); `timeline`: every record's
    exact per-second counts (arrivals, in flight, errors, tokens); `tokens`: whether any request
    could stream tokens (not where only APIs of items ran: no tokens chart)."""
    bins = run_bins(timeline.end_s, spans, width_s)
    charts = [arrival_chart(timeline, bins, spans, slos), in_flight_chart(timeline, bins, spans)]
    if np.isfinite(columns.done).any():  # no request ended (all still in flight): no latency
        charts.append(latency_chart(columns, bins, spans, slos))
    charts.append(errors_chart(timeline, bins, spans))
    if tokens:
        charts.append(tokens_chart(timeline, bins, spans, slos))
    return charts

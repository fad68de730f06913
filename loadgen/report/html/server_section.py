"""The server: memory over time (with the Theil–Sen growth line), its own gauges, its TTFT
against the client's, and its cold starts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from loadgen.collect.memory import ResourceSample
from loadgen.collect.server_metrics_summary import MetricsLog
from loadgen.report.html import slo_lines
from loadgen.report.html.charts import PALETTE, Chart, Series, Span, bar_chart, line_chart
from loadgen.report.html.page import note, table
from loadgen.report.html.series import theil_sen_line, thin
from loadgen.report.html.summary_section import num
from loadgen.report.html.timeseries_section import TIME_LABEL
from loadgen.report.model.metrics import Metrics, SLOCheck
from loadgen.report.model.server import ColdStart, ColdStartSample, Memory, ServerMetrics

MAX_POINTS = 1000


def _memory_chart(
    chart_id: str,
    title: str,
    times: np.ndarray,
    values: np.ndarray,
    growth: float | None,
    window: tuple[float, float] | None,
    spans: Sequence[Span],
) -> Chart:
    x, y = thin(times, values, MAX_POINTS)
    series = [Series(chart_id, np.round(x, 2), np.round(y, 2), label="sampled (every 200 ms)", style="step")]
    inside = (times >= window[0]) & (times <= window[1]) if window else np.ones(len(times), dtype=bool)
    line = theil_sen_line(times[inside], values[inside], growth)
    if line is not None:
        label = f"Theil–Sen growth {num(growth, 'MB/min')}"
        series.append(
            Series(f"{chart_id}-growth", line[0], line[1], label=label, color=PALETTE[5], dashed=True)
        )
    return line_chart(
        chart_id,
        title,
        TIME_LABEL,
        "MB",
        series,
        spans=spans,
        x_min=0,
        caption="The growth line is fitted over the measured window "
        "(after warm-up, to the end of the traffic).",
    )


def memory_charts(
    samples: Sequence[ResourceSample],
    memory: Memory,
    window: tuple[float, float] | None,
    spans: Sequence[Span],
) -> list[Chart]:
    if not samples:
        return []
    times = np.array([s.t_s for s in samples], dtype=float)
    order = np.argsort(times)
    times = times[order]
    rss = np.array([s.rss_mb for s in samples], dtype=float)[order]
    charts = [
        _memory_chart(
            "rss",
            "Server RSS (whole process tree)",
            times,
            rss,
            memory.growth_mb_per_min,
            window,
            spans,
        )
    ]
    gpu = np.array([np.nan if s.gpu_mb is None else s.gpu_mb for s in samples], dtype=float)[order]
    has_gpu = np.isfinite(gpu)
    if has_gpu.any():
        charts.append(
            _memory_chart(
                "gpu-memory",
                "GPU memory (NVML, the server's processes)",
                times[has_gpu],
                gpu[has_gpu],
                memory.gpu_growth_mb_per_min,
                window,
                spans,
            )
        )
    return charts


def gauge_charts(log: MetricsLog, spans: Sequence[Span]) -> list[Chart]:
    """requests_running / requests_waiting, and KV-cache usage, as the server's /metrics said."""
    if not log.samples:
        return []
    times = np.array([s.t_s for s in log.samples], dtype=float)
    charts = []
    queue = []
    for name, label in (("requests_running", "running"), ("requests_waiting", "waiting")):
        values = np.array([s.values.get(name, np.nan) for s in log.samples], dtype=float)
        if np.isfinite(values).any():
            x, y = thin(times, values, MAX_POINTS)
            queue.append(Series(name.replace("_", "-"), np.round(x, 2), y, label=label, style="step"))
    if queue:
        charts.append(
            line_chart(
                "server-queue",
                "Server: requests running and waiting",
                TIME_LABEL,
                "requests",
                queue,
                spans=spans,
                y_min=0,
                x_min=0,
                caption=f"From the server's own /metrics ({log.samples[-1].source}), one point per scrape.",
            )
        )
    kv = np.array([s.values.get("kv_cache_usage", np.nan) for s in log.samples], dtype=float)
    if np.isfinite(kv).any():
        x, y = thin(times, kv * 100, MAX_POINTS)
        charts.append(
            line_chart(
                "kv-cache",
                "Server: KV-cache usage",
                TIME_LABEL,
                "% of the KV cache",
                [Series("kv-cache-usage", np.round(x, 2), y, label="KV-cache usage", style="step")],
                spans=spans,
                y_min=0,
                x_min=0,
            )
        )
    return charts


def ttft_comparison(metrics: Metrics, server_metrics: ServerMetrics | None) -> tuple[list[Chart], str]:
    """Server vs client latency (client from send) at p50 and p95, and the gap, when scraped:
    TTFT, and e2e where the server has a request-latency histogram; the chart is TTFT's (e2e's
    for an API without tokens)."""
    if server_metrics is None:
        return [], ""
    compared = [
        (name, server_figures, client, gap)
        for name, server_figures, client, gap in (
            ("TTFT", server_metrics.ttft_ms, metrics.ttft_from_send_ms, server_metrics.ttft_gap_ms),
            ("e2e", server_metrics.e2e_ms, metrics.e2e_from_send_ms, server_metrics.e2e_gap_ms),
        )
        if server_figures is not None and client.p50 is not None
    ]
    if not compared:
        return [], ""
    name, server_figures, client, _ = compared[0]
    labels, values, colors = [], [], []
    for pct, client_value, server_value in (
        ("p50", client.p50, server_figures.p50),
        ("p95", client.p95, server_figures.p95),
    ):
        for who, value, color in (("client", client_value, PALETTE[0]), ("server", server_value, PALETTE[1])):
            if value is not None:
                labels.append(f"{pct} {who}")
                values.append(value)
                colors.append(color)
    chart = bar_chart(
        f"server-vs-client-{name.lower()}",
        f"{name}: client (from send) vs the server's own",
        labels,
        values,
        colors,
        "ms",
        caption="The server's percentiles are estimated from its histogram buckets.",
    )
    rows = []
    for name, server_figures, client, gap in compared:
        for pct, client_value, server_value, bucket, gap_value in (
            ("p50", client.p50, server_figures.p50, server_figures.p50_bucket_ms, gap.p50 if gap else None),
            ("p95", client.p95, server_figures.p95, server_figures.p95_bucket_ms, gap.p95 if gap else None),
            ("mean", client.mean, server_figures.mean, None, gap.mean if gap else None),
        ):
            top = "∞" if not bucket or bucket[1] is None else num(bucket[1])
            bounds = "" if not bucket else f"{num(bucket[0])}–{top}"
            rows.append([f"{name} {pct}", num(client_value), num(server_value), bounds, num(gap_value)])
    html = table(["ms", "client from send", "server", "server bucket", "gap"], rows)
    return [chart], html


def cold_start(cold: ColdStart, slos: Sequence[SLOCheck]) -> tuple[list[Chart], str]:
    samples = list(cold.samples)
    if not samples and cold.ready is None:
        return [], note("Cold start not measured (an external server, or the run did not start one).")
    if not samples:
        samples = [ColdStartSample(ready=cold.ready, first_token=cold.first_token)]
    rows = [[str(i + 1), num(s.ready, "s"), num(s.first_token, "s")] for i, s in enumerate(samples)]
    html = table(["start", "spawn → ready", "spawn → first token"], rows)
    values = [float(s.first_token or s.ready or 0.0) for s in samples]
    chart = bar_chart(
        "cold-starts",
        "Cold starts: spawn → first token",
        [f"start {i + 1}" for i in range(len(samples))],
        values,
        [PALETTE[2]] * len(samples),
        "seconds",
        thresholds=slo_lines.thresholds(slos, ["cold_start"]),
    )
    return [chart], html

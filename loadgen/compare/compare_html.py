"""compare.html: `loadtest compare BASELINE CURRENT` as a page — the verdict, the significance
table, and both runs overlaid (latency CDFs, TTFAT's where either run reasoned; TTFT p95 and
throughput per time bin, each run on its own clock).

Everything comes from the RunData the gate loaded in one pass (compare_inputs): the CDFs and TTFT
p95 from its records or their uniform sample (bins widened for a sample, as in report.html),
throughput from the exact per-second counts of every record.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from loadgen.collect.timeline import coarsen
from loadgen.compare.compare_inputs import RunData, RunTimeline
from loadgen.compare.compare_power import format_mde
from loadgen.compare.gate import Comparison, Row, format_change
from loadgen.compare.gated_latencies import latency_names, latency_sample
from loadgen.report.html.charts import PALETTE, Chart, Series, line_chart
from loadgen.report.html.distribution_section import Y_LABEL, cdf_series
from loadgen.report.html.page import Banner, CellStatus, Section, grid, note, render_page, table
from loadgen.report.html.series import Bins, binned_percentiles
from loadgen.report.html.summary_section import num
from loadgen.report.html.timeseries_section import TIME_LABEL, bin_width, per_bin, run_bins, wide_range

FILENAME = "compare.html"
BASELINE_COLOR, CURRENT_COLOR = "#757575", PALETTE[5]
_VERDICT_STATUS: dict[str, CellStatus] = {
    "regression": "fail",
    "improvement": "pass",
    "not significant": "warn",
    "inconclusive": "warn",
    "ok": "none",
    "n/a": "none",
}


# The banner: a regression red, no regression green, inconclusive grey-orange (not a pass).
_BANNER = {"regression": "fail", "no regression": "pass", "inconclusive": "error"}
_LABELS = {"regression": "REGRESSION", "no regression": "OK", "inconclusive": "INCONCLUSIVE"}


def default_path(current: RunData) -> Path:
    """compare.html in CURRENT's run directory (the folder of its report.json)."""
    return current.source.parent / FILENAME


def _value(row: Row, value: float | None) -> str:
    if value is None:
        return "–"
    if row.metric == "error rate":
        return num(value * 100, "%")
    return num(value, row.unit)


def _p_value(p_value: float | None) -> str:
    if p_value is None:
        return "–"
    return "<0.001" if p_value < 0.001 else f"{p_value:.3f}"


def comparison_table(comparison: Comparison) -> str:
    """The `Comparison` rows, each coloured by its verdict (regression red, improvement green,
    a move past the threshold that is not significant, or a row whose minimum detectable effect
    is past the threshold (inconclusive), orange)."""
    rows = [
        [
            row.metric,
            _value(row, row.baseline),
            _value(row, row.current),
            format_change(row.change),
            _p_value(row.p_value),
            "–" if row.mde is None else format_mde(row.mde),
            row.verdict,
            row.test,
        ]
        for row in comparison.rows
    ]
    statuses = [_VERDICT_STATUS.get(row.verdict, "none") for row in comparison.rows]
    headers = ["metric", "baseline", "current", "change", "p-value", "mde (80% power)", "verdict", "test"]
    return table(headers, rows, statuses, status_column=6)


def _cdf_charts(baseline: RunData, current: RunData) -> list[Chart]:
    if baseline.latencies is None or current.latencies is None:
        return []
    charts = []
    drawn = [
        ("ttft", "TTFT: baseline vs current", "time to first token (ms, log)"),
        ("ttfat", "TTFAT: baseline vs current", "time to first answer token (ms, log)"),
        ("itl", "ITL: baseline vs current", "inter-token gap (ms, log)"),
        ("e2e", "e2e: baseline vs current", "end-to-end latency (ms, log)"),
    ]
    gated = latency_names(baseline, current)  # ttfat only where an answer came after thinking
    for metric, title, x_label in (chart for chart in drawn if chart[0] in gated):
        old = latency_sample(baseline.latencies, metric).values
        new = latency_sample(current.latencies, metric).values
        if not len(old) and not len(new):
            continue
        series = [
            cdf_series(f"baseline-{metric}", "baseline", old, color=BASELINE_COLOR, line_width=2.6),
            cdf_series(f"current-{metric}", "current", new, color=CURRENT_COLOR),
        ]
        charts.append(
            line_chart(
                f"compare-{metric}-cdf",
                title,
                x_label,
                Y_LABEL,
                [s for s in series if len(s.x)],
                log_x=True,
                caption="Successful requests past warm-up, from the scheduled send (what the gate tests).",
            )
        )
    return charts


def _width(run: RunData, timeline: RunTimeline) -> float:
    return bin_width(timeline.counts.end_s, run.sampled)


def _per_bin(timeline: RunTimeline, width_s: float) -> tuple[Bins, np.ndarray, np.ndarray]:
    bins = run_bins(timeline.counts.end_s, (), width_s)
    ttft = binned_percentiles(timeline.scheduled_s, timeline.ttft_ms, bins, (95,))[95]
    return bins, ttft, coarsen(timeline.counts.tally("done_ok"), bins.edges) / bins.width


def _time_charts(baseline: RunData, current: RunData) -> list[Chart]:
    old, new = baseline.timeline, current.timeline
    if old is None or new is None or not old.counts.total or not new.counts.total:
        return []
    # One width for both runs, so that their lines compare: the wider one's.
    width = max(_width(baseline, old), _width(current, new))
    old_bins, old_ttft, old_rate = _per_bin(old, width)
    new_bins, new_ttft, new_rate = _per_bin(new, width)
    sampled = (
        "; TTFT from a uniform sample of a long run's requests" if baseline.sampled or current.sampled else ""
    )
    ttft = line_chart(
        "compare-ttft-p95-over-time",
        f"TTFT p95 {per_bin(width)}",
        TIME_LABEL + ", each run on its own clock",
        "ms",
        [
            Series(
                "baseline-ttft-p95", old_bins.centers, old_ttft, "baseline", BASELINE_COLOR, line_width=2.6
            ),
            Series("current-ttft-p95", new_bins.centers, new_ttft, "current", CURRENT_COLOR),
        ],
        log_y=wide_range([old_ttft, new_ttft]),
        x_min=0,
        caption=f"Requests binned by their scheduled time (warm-up included{sampled}).",
    )
    rate = line_chart(
        "compare-throughput-over-time",
        f"Throughput {per_bin(width)}",
        TIME_LABEL + ", each run on its own clock",
        "successful completions/s",
        [
            Series(
                "baseline-throughput",
                old_bins.starts,
                old_rate,
                "baseline",
                BASELINE_COLOR,
                "step",
                line_width=2.6,
            ),
            Series("current-throughput", new_bins.starts, new_rate, "current", CURRENT_COLOR, "step"),
        ],
        y_min=0,
        x_min=0,
    )
    return [ttft, rate]


def render_compare_html(
    comparison: Comparison, baseline: RunData, current: RunData, baseline_label: str, current_label: str
) -> str:
    label = _LABELS[comparison.verdict]
    banner = Banner(
        _BANNER[comparison.verdict],
        f"compare: {baseline.report.name} (baseline) → {current.report.name} (current)",
        comparison.summary(),
        f"baseline {baseline_label} · current {current_label}",
        label=label,
    )
    body = comparison_table(comparison) + "".join(note(f"note: {text}") for text in comparison.notes)
    sections = [Section("Significance", body, "significance")]
    charts = _cdf_charts(baseline, current) + _time_charts(baseline, current)
    if charts:
        sections.append(Section("Both runs overlaid", grid([chart.html() for chart in charts]), "overlay"))
    else:
        sections.append(
            Section(
                "Both runs overlaid",
                note("No requests.jsonl beside a report: only the summary numbers were compared."),
            )
        )
    return render_page(
        f"compare: {label}",
        banner,
        sections,
        "loadtest compare · self-contained, no network needed.",
    )


def write_compare_html(
    comparison: Comparison,
    baseline: RunData,
    current: RunData,
    path: Path,
    baseline_label: str,
    current_label: str,
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        render_compare_html(comparison, baseline, current, baseline_label, current_label), encoding="utf-8"
    )
    return path

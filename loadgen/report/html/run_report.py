"""report.html: one self-contained page per run, verdict first, every number drawn from the
records on the run clock. Registered as the `html` report format (writers.py).

Tables and cards quote report.json. Charts that count read every record's exact per-second
counts; latency charts and CDFs read the records held, which for a long run are a uniform sample
(inputs.ChartRecords), and then the page says so above those charts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from loadgen.collect.stats import PhaseWindow
from loadgen.report.html import distribution_section as dist
from loadgen.report.html import drill_section as drills
from loadgen.report.html import search_section as search
from loadgen.report.html import server_section as server
from loadgen.report.html.charts import Chart
from loadgen.report.html.energy_section import energy_body
from loadgen.report.html.inputs import RunInputs, load_run_inputs
from loadgen.report.html.page import Section, grid, note, render_page
from loadgen.report.html.prefix_section import prefix_body
from loadgen.report.html.series import Columns
from loadgen.report.html.summary_section import banner, first_screen, num
from loadgen.report.html.timeseries_section import bin_width, run_bins, time_series_charts
from loadgen.report.model import Report
from loadgen.report.slice_sections import html_sections

FILENAME = "report.html"


def write_html(report: Report, run_dir: Path, inputs: RunInputs | None = None) -> Path:
    """Write `run_dir/report.html`; without `inputs` the run folder's files are read."""
    if inputs is None:
        inputs = load_run_inputs(run_dir)
    path = run_dir / FILENAME
    path.write_text(render_run_html(report, inputs), encoding="utf-8")
    return path


def _charts(charts: Sequence[Chart]) -> str:
    return grid([chart.html() for chart in charts])


def operating_windows(report: Report, inputs: RunInputs) -> list[PhaseWindow]:
    """The windows behind report.json's `metrics`: the phases, or the operating point's trials."""
    if not inputs.levels:
        return list(inputs.windows)
    level = report.operating_point.level if report.operating_point else None
    return [w.phase_window() for w in inputs.levels if w.role == "search" and w.level == level]


def sample_note(inputs: RunInputs, width_s: float) -> str:
    """What a sampled page says above its charts ('' when every record is drawn)."""
    if not inputs.sampled:
        return ""
    return note(
        f"Latency charts drawn from a uniform sample of {num(len(inputs.records))} of "
        f"{num(inputs.records_total)} requests (seeded: the same page every time), so the time "
        f"series use {width_s:g}-s bins. Counts per bin (arrivals, in flight, errors, tokens) are "
        "exact, from every request, and every table quotes report.json."
    )


def render_run_html(report: Report, inputs: RunInputs) -> str:
    slos = report.slo
    columns = Columns.of(inputs.records)
    counted = columns.counted(operating_windows(report, inputs))
    timeline = inputs.counts()
    span = run_bins(timeline.end_s, inputs.spans).edges[-1]
    width = bin_width(float(span), len(inputs.records) if inputs.sampled else None)
    sampled = sample_note(inputs, width)
    is_search = bool(inputs.levels) or report.knee is not None
    sections: list[Section] = []
    if is_search:
        decision = search.decision_cards(report) + _charts(search.search_charts(report))
        sections.append(Section("Decision", decision, "decision"))
        op = report.operating_point
        where = search.level_name(search.level_over(report), op.level) if op else "the lowest level"
        sections.append(
            Section(f"At the operating point ({where})", first_screen(report, "SLOs at this level"), "slo")
        )
    else:
        sections.append(Section("SLOs and key numbers", first_screen(report), "slo"))
    if len(columns):
        items = report.metrics.items
        tokens = items is None or items.requests < report.metrics.requests  # not APIs of items alone
        charts = time_series_charts(columns, timeline, inputs.spans, slos, width, tokens)
        sections.append(Section("Over time", sampled + _charts(charts), "time-series"))
    elif report.client.workers is not None and report.client.workers.records == "summary":
        said = (
            "No per-request charts: the workers shipped statistics instead of records "
            "(--records summary). Every number above comes from those statistics."
        )
        sections.append(Section("Over time", note(said), "time-series"))
    scope = "operating point" if is_search else "after warm-up"
    distributions = dist.distribution_charts(counted, slos, scope)
    if distributions:
        sections.append(Section("Latency distributions", sampled + _charts(distributions), "distributions"))
    metrics = report.metrics
    sections += html_sections(metrics, counted, slos)
    server_cache = report.server.metrics.prefix_cache if report.server.metrics else None
    cache = prefix_body(metrics.prefix_cache, server_cache)
    if cache:
        sections.append(Section("Prefix cache", cache, "prefix-cache"))
    classes = report.classes or {}
    if len(classes) > 1:
        body = dist.class_table(classes) + sampled + _charts(dist.class_charts(counted, list(classes), slos))
        sections.append(Section("Workload classes", body, "classes"))
    for grouping, named in report.groups():
        charts = dist.group_chart(counted, grouping, list(named), slos)
        body = dist.class_table(named, grouping.label) + sampled + _charts(charts)
        sections.append(Section(f"{grouping.noun}s", body, grouping.key))
    sections.append(Section("Server", _server_body(report, inputs), "server"))
    energy = energy_body(report.energy)
    if energy:
        sections.append(Section("Energy", energy, "energy"))
    if is_search:
        sections.append(Section("Load levels", search.level_table(report), "levels"))
        plan = search.plan_block(report) + drills.drill_overview(report)
        sections.append(Section("Replica plan and verification", plan, "plan"))
        sections += drills.drill_sections(report)
    subject = search.decision_headline(report) if is_search else ""
    footer = "loadtest · report.html is self-contained: open it in any browser, no network needed."
    return render_page(
        f"{report.name}: {report.verdict.upper()}",
        banner(report, subject),
        sections,
        footer,
    )


def _server_body(report: Report, inputs: RunInputs) -> str:
    info = report.server
    charts = server.memory_charts(inputs.resources, info.memory, inputs.memory_window, inputs.spans)
    charts += server.gauge_charts(inputs.server_metrics, inputs.spans)
    ttft_charts, ttft_table = server.ttft_comparison(report.metrics, info.metrics)
    cold_charts, cold_table = server.cold_start(info.cold_start_s, report.slo)
    body = _charts([*charts, *ttft_charts, *cold_charts])
    if not charts:
        body = note("No server samples (an external server, or resources.jsonl is missing).") + body
    tables = []
    if ttft_table:
        tables.append(f"<h3>Latency: client vs server</h3>{ttft_table}")
    tables.append(f"<h3>Cold starts</h3>{cold_table}")
    return body + grid(tables)

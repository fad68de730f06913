"""report.html end to end without a server: a run folder on disk through render_reports (the path
of a run and of `loadtest report`), and a search report whose decision must come first."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from loadgen.collect.records import RecordWriter, RequestRecord
from loadgen.evaluate.curve import Over
from loadgen.evaluate.level_results import LevelWindow
from loadgen.report.html.charts import slo_gid
from loadgen.report.html.inputs import RunInputs
from loadgen.report.html.run_report import render_run_html
from loadgen.report.model import Report
from loadgen.report.render import render_reports
from loadgen.rundir.folder import RunMeta, write_scenario
from loadgen.rundir.run_json import ColdStarts
from loadgen.scenario.loader import parse_scenario
from loadgen.traffic.schedule import build_schedule
from tests.unit import report_samples as samples
from tests.unit.report_samples import sample_report, with_parts

SCENARIO = """name: html-unit
seed: 3
server: {kind: simulated}
workload:
  - {class: chat, weight: 3, output_tokens: {kind: fixed, value: 8}}
  - {class: batch, weight: 1, stream: false, output_tokens: {kind: fixed, value: 8}}
traffic: [{kind: poisson, rate: 20, duration: 10s}]
warmup: 2s
slo:
  ttft: {p95: 200ms}
  itl: {p95: 50ms}
  e2e: {p99: 2s}
  output_tokens_per_s: {min: 10}
  request_rate: {min: 5}
  cold_start: {max: 5s}
  classes:
    chat: {ttft: {p95: 300ms}}
    batch: {e2e: {p99: 3s}}
report: {formats: [json, html]}
"""


def _charts(page: str) -> list[str]:
    return re.findall(r'<figure class="chart" data-chart="([^"]+)">', page)


def _chart(page: str, chart_id: str) -> str:
    start = page.index(f'data-chart="{chart_id}"')
    return page[start : page.index("</figure>", start)]


def _run_folder(tmp_path: Path) -> tuple[Path, Any, Any, RunMeta]:
    scenario = parse_scenario(SCENARIO)
    schedule = build_schedule(scenario)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_scenario(scenario, run_dir)
    rng = np.random.default_rng(0)
    writer = RecordWriter(run_dir / "requests.jsonl")
    for planned in schedule.requests:
        sent = planned.scheduled_s + 0.001
        first = sent + float(rng.uniform(0.04, 0.08))
        streamed = planned.request_class == "chat"
        writer.write(
            RequestRecord(
                id=planned.id,
                phase=planned.phase,
                scheduled_s=planned.scheduled_s,
                sent_s=sent,
                first_token_s=first,
                done_s=first + 0.07,
                output_tokens=8,
                itl_ms=[10.0] * 7 if streamed else [],
                request_class=planned.request_class,
                warmup=planned.warmup,
            )
        )
    writer.close()
    with (run_dir / "resources.jsonl").open("w") as handle:
        for t in np.arange(0, 10.2, 0.2):
            handle.write(
                json.dumps({"t_s": float(t), "rss_mb": 100 + t, "processes": 1, "gpu_mb": 500.0}) + "\n"
            )
        for t in range(11):
            values = {"requests_running": 2.0, "requests_waiting": 0.0, "kv_cache_usage": 0.25}
            line = {
                "t_s": float(t),
                "kind": "server_metrics",
                "source": "builtin",
                "values": values,
                "histograms": {},
            }
            handle.write(json.dumps(line) + "\n")
    cold: ColdStarts = {
        "ready": 0.5,
        "first_token": 0.6,
        "samples": [{"ready": 0.5, "first_token": 0.6}],
        "p50": 0.6,
        "max": 0.6,
    }
    meta = RunMeta(
        started_at="2026-01-01T00:00:00+00:00",
        finished=True,
        duration_s=10.5,
        server={"kind": "simulated", "cold_start_s": cold},
    )
    meta.save(run_dir)
    return run_dir, scenario, schedule, meta


def test_a_run_folder_renders_every_chart_with_its_slo_lines(tmp_path: Path) -> None:
    run_dir, scenario, schedule, meta = _run_folder(tmp_path)
    report = render_reports(run_dir, scenario, schedule, meta)
    assert report.verdict == "pass", report.reason
    page = (run_dir / "report.html").read_text()
    assert _charts(page) == [
        "arrival-rate", "in-flight", "latency-over-time", "errors", "output-tokens",
        "ttft-cdf", "itl-cdf", "e2e-cdf", "ttft-by-class", "e2e-by-class",
        "rss", "gpu-memory", "server-queue", "kv-cache", "cold-starts",
    ]  # fmt: skip
    # Every SLO with a line lands on the chart of its metric; memory has no line.
    lines = {
        "latency-over-time": ["ttft p95", "e2e p99"],
        "ttft-cdf": ["ttft p95"],
        "itl-cdf": ["itl p95"],
        "e2e-cdf": ["e2e p99"],
        "output-tokens": ["output_tokens_per_s"],
        "arrival-rate": ["request_rate"],
        "ttft-by-class": ["chat: ttft p95"],
        "e2e-by-class": ["batch: e2e p99"],
        "cold-starts": ["cold_start"],
    }
    for chart_id, names in lines.items():
        found = re.findall(r'<g class="slo" id="([^"]+)"', _chart(page, chart_id))
        assert found == [slo_gid(name) for name in names], chart_id
    assert '<header class="banner pass" data-verdict="pass">' in page
    assert ">warm-up</text>" in _chart(page, "arrival-rate")  # warm-up is marked on the clock
    assert "Workload classes" in page and "<td>batch</td>" in page
    assert "<script" not in page and "<img" not in page and "<link" not in page


def test_the_html_writer_reads_the_run_folder_when_given_no_inputs(tmp_path: Path) -> None:
    from loadgen.report.writers import write_reports

    run_dir, scenario, schedule, meta = _run_folder(tmp_path)
    report = render_reports(run_dir, scenario, schedule, meta)
    first = (run_dir / "report.html").read_text()
    (run_dir / "report.html").unlink()
    [path] = write_reports(report, run_dir, ["html"])
    assert path == run_dir / "report.html" and path.read_text() == first  # same page from the files


def _search_report() -> Report:
    def level(lv: float, rps: float, ttft: float, held: bool, trials: list[float]) -> dict[str, Any]:
        return samples.knee_level(
            lv,
            rps,
            held,
            ttft_ms=samples.percentiles(ttft),
            e2e_ms=samples.percentiles(ttft + 150),
            trial_rps=trials,
            steady=True,
            drift=0.01,
            # the level's 95% interval (batch means over its trials) and how many trials it took
            ci95=[min(trials) - 0.5, max(trials) + 0.5],
            precision=(max(trials) - min(trials) + 1) / 2 / rps,
            trials=len(trials),
        )

    check = samples.verify_run(2, 60.0, True, achieved_rate=59.9)
    fewer = samples.verify_run(1, 60.0, False, achieved_rate=59.9, ttft_ms=samples.percentiles(4038.0))
    levels = [
        level(4, 20.0, 53.0, True, [19.5, 20.5]),
        level(8, 40.0, 54.0, True, [39.0, 41.0]),
        level(16, 40.0, 255.0, False, [39.8, 40.2]),
    ]
    plan = samples.replicas(
        60.0,
        2,
        capacity_rps=40.0,
        formula="ceil(60 / (40 × 0.8)) + 0 = 2",
        monthly_cost=3650.0,
        cost_per_million_tokens=1.085,
        verified={
            "replicas": 2,
            "passed": True,
            "one_fewer_passed": False,
            "at_plan": check,
            "one_fewer": fewer,
        },
    )
    slo = {"name": "ttft p95", "threshold": 150.0, "observed": 54.0, "unit": "ms", "passed": True, "op": "<=",
           "note": None}  # fmt: skip
    return sample_report(
        name="search-unit",
        reason="capacity at SLO 40 req/s, knee at concurrency 8",
        slo=[slo],
        knee=samples.knee("concurrency", 8, levels, throughput_rps=40.0),
        capacity=samples.capacity(40.0, 8, ci95=[38.5, 41.5]),
        replicas=plan,
        operating_point={"level": 8, "over": "concurrency"},
    )


def test_a_search_page_leads_with_the_decision_and_marks_knee_and_capacity() -> None:
    levels = [
        LevelWindow(i, lv, Over.CONCURRENCY, 1.0 + 4 * i, 4.0 + 4 * i, None)
        for i, lv in enumerate((4, 8, 16))
    ]
    page = render_run_html(_search_report(), RunInputs(records=[], levels=levels, over=Over.CONCURRENCY))
    order = [
        page.index(text)
        for text in ("<h2>Decision", "<h2>At the operating point (concurrency 8)", "<h2>Server")
    ]
    assert order == sorted(order)
    decision = page[page.index("<h2>Decision") : page.index("<h2>At the operating point")]
    for text in ("40 req/s", "concurrency 8", "2 replicas", "2 replicas held", "95% CI 38.5–41.5"):
        assert text in decision, text
    assert _charts(decision) == ["search-throughput", "search-latency"]
    throughput = _chart(page, "search-throughput")
    assert re.findall(r'<g class="marker" id="([^"]+)"', throughput) == ["marker-knee", "marker-capacity"]
    assert 'id="data-throughput-whiskers"' in throughput and 'id="data-capacity-ci-whiskers"' in throughput
    assert 'id="data-slo-failed"' in throughput  # the level that broke an SLO stands out
    assert re.findall(r'<g class="slo" id="([^"]+)"', _chart(page, "search-latency")) == ["slo-ttft-p95"]
    assert "capacity 40 req/s · knee at concurrency 8" in page  # in the banner's headline
    plan = page[page.index("<h2>Replica plan") :]
    assert '<tr class="fail"><td>one fewer</td>' in plan and "ceil(60 / (40 × 0.8)) + 0 = 2" in plan
    # The level table gives each level's 95% interval (±half-width) and the trials it took.
    headers = re.findall(r"<th>([^<]+)</th>", page)
    assert {"95% CI req/s", "trials"} <= set(headers)
    assert "<td>38.5–41.5 (±3.8%)</td><td>2</td>" in page


def test_failed_and_errored_runs_say_why_in_the_banner() -> None:
    report = with_parts(
        _search_report(), verdict="fail", reason="1 of 2 SLOs failed: ttft p95 = 812 ms > 200 ms"
    )
    page = render_run_html(report, RunInputs(records=[]))
    assert '<header class="banner fail" data-verdict="fail"><div class="verdict">FAIL</div>' in page
    assert "ttft p95 = 812 ms &gt; 200 ms" in page
    errored = render_run_html(
        with_parts(report, verdict="error", reason="server did not start"), RunInputs(records=[])
    )
    assert (
        'data-verdict="error"><div class="verdict">ERROR</div>' in errored
        and "server did not start" in errored
    )

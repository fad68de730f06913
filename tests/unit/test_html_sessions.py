"""report.html's figures of multi-turn sessions, shared prefixes and cancellations (issue 14): a run
folder whose records carry sessions, prefixes, cached tokens and cancellations goes through the real
statistics (render_reports) and the page must quote report.json's numbers; a plain run's page has
none of them."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from typing import Any

from loadgen.collect.records import RecordWriter, RequestRecord
from loadgen.report.html.inputs import load_run_inputs
from loadgen.report.html.run_report import render_run_html
from loadgen.report.html.summary_section import num
from loadgen.report.json_report import report_data
from loadgen.report.model import Report
from loadgen.report.model.server import ServerMetrics
from loadgen.report.render import render_reports
from loadgen.rundir.folder import RunMeta, write_scenario
from loadgen.scenario.loader import parse_scenario
from loadgen.traffic.schedule import build_schedule

SCENARIO = """name: html-sessions
seed: 5
server: {kind: simulated}
workload:
  - {class: chat, weight: 3, output_tokens: {kind: fixed, value: 8}}
  - {class: batch, weight: 1, output_tokens: {kind: fixed, value: 8}}
traffic: [{kind: poisson, rate: 20, duration: 6s}]
warmup: 1s
report: {formats: [json, html]}
"""
TURNS = 3


def _record(planned: Any, number: int, traffic: bool, first_miss: int) -> RequestRecord:
    """Plain: TTFT 40 ms. With `traffic`: sessions of TURNS turns whose TTFT grows 10 ms a turn, a
    shared prefix on even ids (the first of them a cache miss, 30 ms slower; the rest hit), every 10th
    cancelled."""
    turn = number % TURNS + 1
    ttft = 0.02 + 0.01 * turn if traffic else 0.04
    prefixed = traffic and number % 2 == 0
    miss = traffic and (not prefixed or number == first_miss)
    if traffic and number == first_miss:  # the prefix's first measured request: a prefill to save
        ttft += 0.03
    first = planned.scheduled_s + ttft
    cancelled = traffic and number % 10 == 9
    extra: dict[str, Any] = {}
    if traffic:
        extra = {
            "session": number // TURNS + 1,
            "turn": turn,
            "session_turns": TURNS,
            "session_start_s": planned.scheduled_s - 0.5 * (turn - 1),
            "prefix_group": 1 if prefixed else None,
            "cached_tokens": 0 if miss else 256,
            "prompt_tokens": 300,
        }
    return RequestRecord(
        id=planned.id,
        phase=planned.phase,
        scheduled_s=planned.scheduled_s,
        sent_s=planned.scheduled_s + 0.001,
        first_token_s=first,
        done_s=first + (0.01 if cancelled else 0.07),
        output_tokens=2 if cancelled else 8,
        itl_ms=[10.0] if cancelled else [10.0] * 7,
        status="cancelled" if cancelled else "ok",
        request_class=planned.request_class,
        warmup=planned.warmup,
        **extra,
    )


def render_run(tmp_path: Path, traffic: bool) -> tuple[Report, str]:
    scenario = parse_scenario(SCENARIO)
    schedule = build_schedule(scenario)
    run_dir = tmp_path / ("traffic" if traffic else "plain")
    run_dir.mkdir()
    write_scenario(scenario, run_dir)
    writer = RecordWriter(run_dir / "requests.jsonl")
    first_miss = next(n for n, p in enumerate(schedule.requests) if n % 2 == 0 and not p.warmup)
    for number, planned in enumerate(schedule.requests):
        writer.write(_record(planned, number, traffic, first_miss))
    writer.close()
    meta = RunMeta(started_at="2026-01-01T00:00:00+00:00", finished=True, duration_s=6.5)
    meta.save(run_dir)
    report = render_reports(run_dir, scenario, schedule, meta)
    return report, (run_dir / "report.html").read_text()


def _section(page: str, section_id: str) -> str:
    start = page.index(f'<section id="{section_id}">')
    return page[start : page.index("</section>", start)]


def _rows(html: str) -> list[list[str]]:
    """The body rows' cells (header rows have none)."""
    rows = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", html)]
    return [[unescape(cell) for cell in row] for row in rows if row]


def _card(html: str, label: str) -> tuple[str, str]:
    found = re.search(
        rf'<div class="label">{re.escape(label)}</div><div class="value">([^<]*)</div>'
        r'(?:<div class="note">([^<]*)</div>)?',
        html,
    )
    assert found, label
    return unescape(found.group(1)), unescape(found.group(2) or "")


def test_sessions_prefixes_and_cancellations_show_report_json_numbers(tmp_path: Path) -> None:
    report, page = render_run(tmp_path, traffic=True)
    data = report_data(report)  # report.json, whose numbers the page quotes
    metrics = data["metrics"]
    sessions, prefix = metrics["sessions"], metrics["prefix_cache"]
    html = _section(page, "sessions")
    for label, key in (("sessions started", "started"), ("completed", "completed"), ("ended early", "ended")):
        assert _card(html, label)[0] == num(sessions[key]), label
    assert sessions["ended"] > 0  # the cancelled turns ended their sessions
    assert _card(html, "requests/s")[0] == num(sessions["requests_per_s"], "req/s")
    e2e = sessions["session_e2e_ms"]
    value, said = _card(html, "session duration p50")
    assert value == num(e2e["p50"], "ms") and f"p95 {num(e2e['p95'], 'ms')}" in said
    # Per turn: TTFT from the due time is 20 + 10·turn ms (one request 30 ms more); the table
    # quotes report.json.
    table = _rows(html[html.index("Latency by turn") :])
    assert [row[0] for row in table] == ["1", "2", "3"]
    for row, turn in zip(table, sessions["per_turn"], strict=True):
        assert row[1:3] == [num(turn["requests"]), num(turn["ttft_ms"]["p50"])]
    p50 = [turn["ttft_ms"]["p50"] for turn in sessions["per_turn"]]
    assert p50 == [30.0, 40.0, 50.0]
    charts = re.findall(r'data-chart="([^"]+)"', html)
    assert charts == ["ttft-by-turn", "e2e-by-turn", "turns-answered"]
    ttft_chart = html[html.index('data-chart="ttft-by-turn"') :]
    assert 'id="data-ttft-p50"' in ttft_chart and 'id="data-ttft-p95"' in ttft_chart
    # Prefix cache: every split, with its count and p50, as report.json has it.
    cache = _rows(_section(page, "prefix-cache"))
    by_label = {row[0]: row[1:] for row in cache}
    for label, count, ttft in (
        ("prefixed (as sent)", "prefixed", "ttft_prefixed_ms"),
        ("cache miss (server's word)", "cache_misses", "ttft_cache_miss_ms"),
        ("prefixed and missed", "prefixed_misses", "ttft_prefixed_miss_ms"),
    ):
        assert by_label[label][:2] == [num(prefix[count]), num(prefix[ttft]["p50"])], label
    assert prefix["prefixed_misses"] == 1 and prefix["ttft_prefixed_miss_ms"]["p50"] > 50.0
    share = _card(_section(page, "prefix-cache"), "cached prompt tokens")[0]
    assert share == num(prefix["cached_token_share"] * 100, "%")
    # Cancellations: a card beside the error rate, a column in the class table, not errors.
    assert metrics["cancelled"] > 0 and metrics["errors"] == 0
    value, said = _card(_section(page, "slo"), "cancel rate")
    assert value == num(metrics["cancel_rate"] * 100, "%") and said.startswith(
        f"{metrics['cancelled']} cancelled"
    )
    classes = _section(page, "classes")
    assert "<th>cancelled</th>" in classes
    chat = next(row for row in _rows(classes) if row[0] == "chat")
    assert chat[5] == num(data["classes"]["chat"]["cancel_rate"] * 100, "%")
    assert "Errors per second: none" in page  # cancellations are not errors…
    errors_chart = page.split('data-chart="errors"')[1].split("</figure>")[0]
    assert 'id="data-cancelled"' in errors_chart  # …drawn apart, dashed
    assert "sessions/s" in _card(_section(page, "slo"), "achieved rate")[0]


def test_the_servers_own_hit_ratio_shows_without_the_clients_split(tmp_path: Path) -> None:
    report, _ = render_run(tmp_path, traffic=False)
    report.server.metrics = ServerMetrics.model_validate(
        {
            "source": "builtin",
            "scrapes": 3,
            "failed_scrapes": 0,
            "prefix_cache": {"queried_tokens": 62644, "hit_tokens": 48128, "hit_ratio": 0.768},
        }
    )
    inputs = load_run_inputs(tmp_path / "plain")
    html = _section(render_run_html(report, inputs), "prefix-cache")
    assert _card(html, "server hit ratio") == (
        "76.8%",
        "of 62 644 prompt tokens looked up (the server's own counters)",
    )
    assert "<table" not in html  # no split to tabulate


def test_a_plain_run_has_none_of_them(tmp_path: Path) -> None:
    report, page = render_run(tmp_path, traffic=False)
    assert "sessions" not in report_data(report)["metrics"] and report.metrics.prefix_cache is None
    for absent in (
        'id="sessions"',
        'id="prefix-cache"',
        "cancel rate",
        "<th>cancelled</th>",
        "data-cancelled",
    ):
        assert absent not in page, absent
    assert _card(_section(page, "slo"), "achieved rate")[0].endswith("req/s")

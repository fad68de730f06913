"""Chart builders and the page skeleton: checkable SVG, nothing fetched, verdict colours."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from matplotlib.axes import Axes

from loadgen.report.html.charts import (
    Marker,
    Series,
    Span,
    Threshold,
    bar_chart,
    gid,
    line_chart,
    short_number,
    slo_gid,
)
from loadgen.report.html.page import Banner, Card, Section, cards, render_page, table
from loadgen.report.html.svg import compact_svg


def _groups(svg: str, prefix: str) -> list[str]:
    return re.findall(rf'<g class="[a-z]+" id="({prefix}[^"]*)"', svg)


def test_gid_makes_names_into_ids() -> None:
    assert gid("chat: ttft p95") == "chat-ttft-p95"
    assert slo_gid("ttft p99.9") == "slo-ttft-p99.9"
    assert slo_gid("output_tokens_per_s") == "slo-output_tokens_per_s"


def test_line_chart_names_its_data_slo_marker_and_span_groups() -> None:
    x = np.arange(10.0)
    chart = line_chart(
        "demo",
        "Demo",
        "time (s)",
        "requests/s",
        [Series("achieved", x, x * 2), Series("target", x, x * 2 + 1, style="step")],
        thresholds=[Threshold("ttft p95", 15.0)],
        spans=[Span(0, 2, "warm-up", "warmup"), Span(2, 9, "poisson 20 req/s")],
        markers=[Marker("knee", 4.0, 8.0, "knee: 4")],
    )
    svg = chart.svg
    assert _groups(svg, "data-") == ["data-achieved", "data-target"]
    assert _groups(svg, "slo-") == ["slo-ttft-p95"]
    assert _groups(svg, "marker-") == ["marker-knee"]
    assert _groups(svg, "span-") == ["span-0", "span-1"]
    assert svg.startswith("<svg ") and "<?xml" not in svg and "DOCTYPE" not in svg and "<metadata" not in svg
    assert not re.search(r'id="[a-z0-9.]+_\d+"', svg)  # matplotlib's auto ids would repeat across charts
    assert not re.search(r"\d\.\d{2,}", " ".join(re.findall(r' d="([^"]*)"', svg)))  # 0.1-pt coordinates
    assert ">requests/s</text>" in svg and ">warm-up</text>" in svg  # text stays text
    assert "SLO ttft p95" in svg  # in the legend
    html = chart.html()
    assert html.startswith('<figure class="chart" data-chart="demo">') and ">Demo</div>" in html


def test_a_threshold_outside_the_data_widens_the_axis_so_it_shows() -> None:
    seen: dict[str, Any] = {}

    def grab(ax: Axes) -> None:
        seen["y"], seen["x"] = ax.get_ylim(), ax.get_xlim()

    line_chart(
        "wide",
        "t",
        "ms",
        "fraction",
        [Series("d", [10.0, 20.0, 30.0], [0.1, 0.5, 1.0])],
        thresholds=[Threshold("e2e p99", 2000.0, axis="x"), Threshold("cap", -5.0)],
        log_x=True,
        decorate=grab,
    )
    assert seen["x"][0] <= 10.0 and seen["x"][1] > 2000.0
    assert seen["y"][0] < -5.0


def test_series_without_finite_points_are_skipped() -> None:
    chart = line_chart(
        "gaps", "t", "x", "y", [Series("empty", [1.0, 2.0], [np.nan, np.nan]), Series("ok", [1.0], [2.0])]
    )
    assert _groups(chart.svg, "data-") == ["data-ok"]


def test_bar_chart_has_one_named_group_per_bar_and_writes_values() -> None:
    chart = bar_chart("bars", "Bars", ["p50 client", "p50 server"], [52.372, 4038.2], value_label="ms")
    assert _groups(chart.svg, "data-") == ["data-bar-p50-client", "data-bar-p50-server"]
    assert ">52.37</text>" in chart.svg and ">4038</text>" in chart.svg


def test_short_number() -> None:
    assert [short_number(v) for v in (87.059, 0.7978, 4037.9, 123456.0, 40.0)] == [
        "87.06",
        "0.7978",
        "4038",
        "123 456",
        "40",
    ]


def test_compact_svg_rounds_geometry_and_drops_auto_ids_but_keeps_references() -> None:
    raw = (
        '<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg><metadata>x</metadata>\n <g id="figure_1">'
        '<!-- c --><path id="m1a2b3c4d5e" d="M 10.123456 20.98765 \nL 3.04 5"/>'
        '<use xlink:href="#m1a2b3c4d5e" x="1.26" y="-0.04"/><g id="data-x"><text>12.3456</text></g></g></svg>'
    )
    assert compact_svg(raw) == (
        '<svg><g><path id="m1a2b3c4d5e" d="M 10.1 21 L 3 5"/><use xlink:href="#m1a2b3c4d5e" x="1.3" y="0"/>'
        '<g class="data" id="data-x"><text>12.3456</text></g></g></svg>'
    )


def test_page_is_self_contained_escaped_and_coloured_by_verdict() -> None:
    for verdict, css in (("pass", "pass"), ("fail", "fail"), ("error", "error"), ("odd", "error")):
        page = render_page("t", Banner(verdict, "name", "reason"), [])
        assert f'<header class="banner {css}" data-verdict="{css}">' in page
        assert f'<div class="verdict">{css.upper()}</div>' in page
    page = render_page(
        "t<script>",
        Banner("fail", "h", "ttft p95 = 812 ms > 200 ms <script>alert(1)</script>"),
        [Section("S", cards([Card("k", "1 <b>", status="fail")]))],
    )
    assert "<script" not in page and "&lt;script&gt;" in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "default-src 'none'" in page  # the browser itself refuses any fetch


def test_table_colours_rows_and_the_status_cell() -> None:
    html = table(
        ["SLO", "result"],
        [["ttft p95", "PASS"], ["e2e p99", "FAIL"], ["x", "-"]],
        ["pass", "fail", "none"],
        1,
    )
    rows = re.findall(r"<tr[^>]*>.*?</tr>", html)
    assert rows[1] == '<tr class="pass"><td>ttft p95</td><td class="pass">PASS</td></tr>'
    assert rows[2] == '<tr class="fail"><td>e2e p99</td><td class="fail">FAIL</td></tr>'
    assert rows[3] == "<tr><td>x</td><td>-</td></tr>"
    with pytest.raises(IndexError):
        table(["a"], [["1"], ["2"]], ["pass"])

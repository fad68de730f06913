"""report.html of a run with multi-turn sessions, shared prefixes and cancellations (issue 14),
opened in headless Chromium: its new charts are drawn, readable and unique on the page. The run
folder is written by the unit test's builder (no server), so this takes seconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.page_check import browser_or_skip, check_report_page
from tests.unit.test_html_sessions import render_run

pytestmark = pytest.mark.slow


def test_the_sessions_and_prefix_charts_are_drawn(tmp_path: Path) -> None:
    browser_or_skip()
    render_run(tmp_path, traffic=True)
    facts = check_report_page(
        tmp_path / "traffic" / "report.html",
        tmp_path / "traffic.png",
        expect_charts=["ttft-by-turn", "e2e-by-turn", "turns-answered", "prefix-ttft"],
    )
    ids = [chart.chart_id for chart in facts.charts]
    # The sessions' charts come after the distributions and before the classes and the server.
    assert (
        ids.index("e2e-cdf")
        < ids.index("ttft-by-turn")
        < ids.index("prefix-ttft")
        < ids.index("ttft-by-class")
    )

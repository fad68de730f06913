"""report.html of a search whose plan ran two drills, one failed (issue 23), opened in headless
Chromium: each drill's section draws the fleet, requests per replica, TTFT p95 with its SLO line
and errors per second, and the failed drill's reason is on the page. Rendered from the hand-built
evaluations of tests/unit/drill_fixtures.py (no run), so this takes seconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.page_check import browser_or_skip, check_report_page
from tests.unit.drill_fixtures import kill_drill, rolling_restart_drill
from tests.unit.test_drill_reports import _page

pytestmark = pytest.mark.slow


def test_each_drill_draws_its_fleet_traffic_and_latency(tmp_path: Path) -> None:
    browser_or_skip()
    page = tmp_path / "report.html"
    page.write_text(_page([kill_drill(), rolling_restart_drill()]), encoding="utf-8")
    charts = ("fleet", "per-replica", "ttft", "errors")
    facts = check_report_page(
        page,
        tmp_path / "drills.png",
        expect_slo_lines=["ttft p95"],
        expect_charts=[f"drill-{name}-{chart}" for name in ("kill", "rolling_restart") for chart in charts],
    )
    assert facts.verdict == "fail"
    assert "drill kill: 3 s over the SLO after detection (max 0 s)" in facts.banner_text
    fleet = facts.chart("drill-kill-fleet")
    assert set(fleet.drawn) == {"data-up", "data-ready", "data-in-rotation"}
    ttft = facts.chart("drill-kill-ttft")
    assert ttft.slo_lines == ["slo-ttft-p95"]
    assert {"marker-disruption-start", "marker-disruption-end"} <= set(ttft.markers)
    ids = [chart.chart_id for chart in facts.charts]
    # The drills come after the search's own charts, the kill's before the rollout's.
    assert (
        ids.index("search-latency") < ids.index("drill-kill-fleet") < ids.index("drill-rolling_restart-fleet")
    )
    assert (tmp_path / "drills.png").stat().st_size > 50_000

"""report.html of a run with images (the CLI, the simulated server), opened in headless Chromium
with the network cut: the Images section is there, whole, its TTFT-by-image-count chart drawn and
its numbers those of report.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.page_check import browser_or_skip, check_report_page
from tests.cli_helpers import run_cli

pytestmark = pytest.mark.slow

SCENARIO = """name: html-images
seed: 3
server: {kind: simulated, ttft: 10ms, itl: 2ms, prefill_per_token: 0.1ms, image_tokens: 100}
workload:
  prompt_tokens: {kind: fixed, value: 16}
  output_tokens: {kind: fixed, value: 8}
  images: {count: {kind: uniform, min: 0, max: 2}, width: 32, height: 32, format: jpeg}
traffic: [{kind: poisson, rate: 15, duration: 3s}]
client: {max_schedule_lag_p99: 200ms}
report: {formats: [json, html]}
"""


@pytest.fixture(autouse=True)
def _browser() -> None:
    browser_or_skip()


def test_the_images_section_is_drawn_offline(tmp_path: Path) -> None:
    run = run_cli(tmp_path, SCENARIO, "--progress", "never", timeout=120)
    assert run.code == 0, run.stderr
    facts = check_report_page(
        run.run_dir / "report.html", tmp_path / "report-images.png", expect_charts=["ttft-by-images"]
    )
    chart = next(c for c in facts.charts if c.chart_id == "ttft-by-images")
    assert {"data-ttft-images-p50", "data-ttft-images-p95"} <= set(chart.drawn), chart.drawn
    html = (run.run_dir / "report.html").read_text()
    images = run.report["metrics"]["images"]
    assert "TTFT by image count" in html and f"with {images['requests']} requests" in html
    assert [row["images"] for row in images["by_count"]] == [0, 1, 2]

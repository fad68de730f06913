"""Open a report page in headless Chromium with the network cut, and check what a person sees.

`check_report_page(html_path, screenshot_path, expect_slo_lines=...)` fails (AssertionError)
on any console error, page error or attempted network request (everything but file:// is
aborted and recorded), on a chart (`<figure class="chart" data-chart=...>`) without a drawn
data mark (a `<g id="data-...">` holding a path or use with a non-empty box), and on an
expected SLO line (`<g id="slo-<name>">`, names as `charts.slo_gid` makes them) that is missing
or has no visible geometry. It keeps a full-page PNG screenshot and returns the `PageFacts`.

Needs Debian's /usr/bin/chromium and the `playwright` package; `browser_or_skip()` skips a
test cleanly without them, or fails it where LOADTEST_REQUIRE_BROWSER=1 (.ci/run sets it).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from loadgen.report.html.charts import slo_gid

if TYPE_CHECKING:
    from playwright.sync_api import ViewportSize  # playwright is imported where a page opens

CHROMIUM = os.environ.get("LOADTEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT: ViewportSize = {"width": 1400, "height": 900}

# Per chart: its id, its data groups and those with a drawn mark, its SLO lines with a visible box.
_CHARTS_JS = """
() => {
  const box = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 || r.height > 0 ? r : null;
  };
  const inside = (r, outer) => r.right >= outer.left - 1 && r.left <= outer.right + 1 &&
                               r.bottom >= outer.top - 1 && r.top <= outer.bottom + 1;
  return Array.from(document.querySelectorAll('figure.chart')).map((figure) => {
    const svg = figure.querySelector('svg');
    const frame = svg ? svg.getBoundingClientRect() : figure.getBoundingClientRect();
    const marks = (group) => Array.from(group.querySelectorAll('path, use, rect'))
      .filter((el) => el.tagName !== 'path' || /[0-9]/.test(el.getAttribute('d') || ''))
      .some((el) => { const r = box(el); return r !== null && inside(r, frame); });
    const data = Array.from(figure.querySelectorAll('g[id^="data-"]'));
    const slo = Array.from(figure.querySelectorAll('g[id^="slo-"]'));
    const markers = Array.from(figure.querySelectorAll('g[id^="marker-"]'));
    const page = figure.getBoundingClientRect();
    return {
      id: figure.dataset.chart,
      data: data.map((g) => g.id),
      drawn: data.filter(marks).map((g) => g.id),
      slo: slo.filter(marks).map((g) => g.id),
      markers: markers.filter(marks).map((g) => g.id),
      width: frame.width,
      height: frame.height,
      top: page.top + window.scrollY,
      bottom: page.bottom + window.scrollY,
    };
  });
}
"""

# The visible text of the leaf blocks (table cells, cards, headings) that start on the first screen.
_FIRST_SCREEN_JS = """
(height) => Array.from(document.querySelectorAll('h1, h2, h3, p, td, th, .label, .value, .note, .verdict'))
  .filter((el) => {
    const r = el.getBoundingClientRect();
    return r.top + window.scrollY < height && r.height > 0;
  })
  .map((el) => el.innerText.trim()).filter((t) => t).join('\\n')
"""


@dataclass
class ChartFacts:
    chart_id: str
    data_groups: list[str]  # ids of its `data-*` groups
    drawn: list[str]  # those with a visible mark
    slo_lines: list[str]  # `slo-*` groups with a visible line
    markers: list[str]  # `marker-*` groups drawn (knee, capacity)
    width: float  # px, as laid out in the viewport
    height: float
    top: float  # px from the top of the page
    bottom: float


@dataclass
class PageFacts:
    """What the browser saw."""

    title: str
    verdict: str | None
    banner_text: str
    charts: list[ChartFacts]
    load_s: float  # navigation start → load event, measured around page.goto
    screenshot: Path
    first_screen: str  # the text of the elements that start within the first viewport
    blocked_requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def chart(self, chart_id: str) -> ChartFacts:
        for chart in self.charts:
            if chart.chart_id == chart_id:
                return chart
        raise KeyError(f"no chart {chart_id!r}; charts: {[c.chart_id for c in self.charts]}")

    @property
    def slo_lines(self) -> set[str]:
        return {line for chart in self.charts for line in chart.slo_lines}


# Set by .ci/run, which installs both: there a missing browser fails the test instead of skipping it.
REQUIRE_ENV = "LOADTEST_REQUIRE_BROWSER"


def browser_or_skip() -> None:
    """pytest.skip with the reason when Chromium or playwright is missing (pytest.fail where
    LOADTEST_REQUIRE_BROWSER=1, as in CI)."""
    missing = None
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        missing = f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "the playwright package is not installed (it is in the dev extra)"
    if missing is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{missing}; {REQUIRE_ENV}=1 requires the browser", pytrace=False)
    pytest.skip(missing)


def open_page(html_path: Path, screenshot_path: Path, viewport: ViewportSize | None = None) -> PageFacts:
    """Load the page offline, collect errors and chart facts, save a full-page screenshot."""
    from playwright.sync_api import sync_playwright

    blocked: list[str] = []
    console: list[str] = []
    errors: list[str] = []

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if url.startswith("file://"):
            request_route.continue_()
        else:
            blocked.append(url)
            request_route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=viewport or VIEWPORT)
            context.route("**/*", route)
            page = context.new_page()
            page.on(
                "console", lambda message: console.append(message.text) if message.type == "error" else None
            )
            page.on("pageerror", lambda error: errors.append(str(error)))
            started = time.perf_counter()
            page.goto(html_path.resolve().as_uri(), wait_until="load")
            load_s = time.perf_counter() - started
            charts = [
                ChartFacts(
                    c["id"],
                    c["data"],
                    c["drawn"],
                    c["slo"],
                    c["markers"],
                    c["width"],
                    c["height"],
                    c["top"],
                    c["bottom"],
                )
                for c in page.evaluate(_CHARTS_JS)
            ]
            first_screen = page.evaluate(_FIRST_SCREEN_JS, (viewport or VIEWPORT)["height"])
            banner = page.locator("header.banner")
            verdict = banner.get_attribute("data-verdict") if banner.count() else None
            banner_text = banner.inner_text() if banner.count() else ""
            screenshot_path.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot_path), full_page=True)
            title = page.title()
        finally:
            browser.close()
    return PageFacts(
        title, verdict, banner_text, charts, load_s, screenshot_path, first_screen, blocked, console, errors
    )


def check_report_page(
    html_path: Path,
    screenshot_path: Path,
    expect_slo_lines: Iterable[str] = (),
    expect_charts: Iterable[str] = (),
    viewport: ViewportSize | None = None,
) -> PageFacts:
    """Open the page and assert it is whole: no errors, no network, every chart drawn, the
    expected charts present and the expected SLO lines (by SLO name) drawn somewhere."""
    facts = open_page(html_path, screenshot_path, viewport)
    assert not facts.blocked_requests, f"the page tried to reach the network: {facts.blocked_requests}"
    assert not facts.console_errors, f"console errors: {facts.console_errors}"
    assert not facts.page_errors, f"page errors: {facts.page_errors}"
    assert facts.charts, "the page has no chart"
    empty = [c.chart_id for c in facts.charts if not c.drawn]
    assert not empty, f"charts without a drawn data mark: {empty}"
    squashed = [c.chart_id for c in facts.charts if c.width < 300 or c.height < 120]
    assert not squashed, f"charts drawn too small to read: {squashed}"
    ids = [c.chart_id for c in facts.charts]
    assert len(ids) == len(set(ids)), f"chart ids repeat: {ids}"
    missing_charts = set(expect_charts) - set(ids)
    assert not missing_charts, f"charts missing: {sorted(missing_charts)}; page has {ids}"
    missing = {name for name in expect_slo_lines if slo_gid(name) not in facts.slo_lines}
    assert not missing, f"SLO lines not drawn: {sorted(missing)}; drawn: {sorted(facts.slo_lines)}"
    return facts

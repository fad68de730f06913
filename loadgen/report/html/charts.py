"""Generic chart builders: matplotlib figures → compact inline SVG, no JavaScript.

Every builder returns a `Chart` (its id, title and SVG); `Chart.html()` wraps it in
`<figure class="chart" data-chart="<id>">`. The SVG is checkable from the DOM:

- each `Series` is drawn in a group `<g class="data" id="data-<name>">`;
- each `Threshold` (an SLO line) in `<g class="slo" id="slo-<name>">`;
- each `Marker` (a knee, a capacity point) in `<g class="marker" id="marker-<name>">`;
- each `Span` (a phase, a level, warm-up) in `<g class="span" id="span-<n>">`.

Names are turned into ids by `gid()` ("chat: ttft p95" → "chat-ttft-p95"). Ids repeat across
charts of one page when two charts draw the same SLO: scope lookups to the chart's figure.

Text stays text (`svg.fonttype: none`), coordinates are rounded to 0.1 pt, and figures are made
with the object API (`matplotlib.figure.Figure`), never pyplot's global state.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from loadgen.report.html.svg import compact_svg

# Okabe–Ito: distinguishable for colour-blind readers, and in greyscale print.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
SLO_COLOR = "#C62828"
SLO_DASHES = ((6.0, 3.0), (1.5, 2.0), (8.0, 2.0, 1.5, 2.0))  # several SLO lines on one chart differ
MARKER_COLOR = "#6A1B9A"
WIDTH_IN, HEIGHT_IN = 7.0, 3.0  # 672 × 288 px at the page's 1:1 scale
_RC = {
    "svg.fonttype": "none",  # text as <text>, not glyph paths: smaller, selectable
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica", "sans-serif"],
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#e4e4e4",
    "grid.linewidth": 0.6,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "path.simplify_threshold": 0.5,  # drop points closer than half a pixel to the line
}

Style = Literal["line", "step", "points", "linepoints"]


@dataclass(frozen=True)
class Series:
    """One data series. `whiskers`: absolute (low, high) y per point, drawn as error bars."""

    name: str
    x: Sequence[float] | np.ndarray
    y: Sequence[float] | np.ndarray
    label: str | None = None
    color: str | None = None
    style: Style = "line"
    dashed: bool = False
    whiskers: tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray] | None = None
    line_width: float = 1.6


@dataclass(frozen=True)
class Threshold:
    """An SLO line at `value` on axis "y" (horizontal) or "x" (vertical); gid `slo-<name>`."""

    name: str
    value: float
    axis: Literal["x", "y"] = "y"
    label: str | None = None


@dataclass(frozen=True)
class Span:
    """A shaded stretch of the x axis: a phase or level (`kind` "phase") or warm-up ("warmup")."""

    start: float
    end: float
    label: str = ""
    kind: Literal["phase", "warmup"] = "phase"


@dataclass(frozen=True)
class Marker:
    """A labelled point (a knee, a capacity level); gid `marker-<name>`."""

    name: str
    x: float
    y: float
    label: str
    color: str = MARKER_COLOR


@dataclass(frozen=True)
class Chart:
    chart_id: str
    title: str  # shown above the SVG by `html()`; the SVG itself has no title
    svg: str
    caption: str = ""

    def html(self) -> str:
        """`<figure class="chart" data-chart="<id>">`: the title (HTML, not in the SVG, so it
        never collides with the legend), the SVG, and an optional caption."""
        caption = f"<figcaption>{html.escape(self.caption)}</figcaption>" if self.caption else ""
        return (
            f'<figure class="chart" data-chart="{html.escape(self.chart_id)}">'
            f'<div class="chart-title">{html.escape(self.title)}</div>{self.svg}{caption}</figure>'
        )


def gid(name: str) -> str:
    """A name as an SVG id fragment: lower case, runs of other characters → '-'."""
    return re.sub(r"[^a-z0-9_.]+", "-", name.lower()).strip("-") or "x"


def slo_gid(name: str) -> str:
    return f"slo-{gid(name)}"


def has_points(series: Series) -> bool:
    y = np.asarray(series.y, dtype=float)
    return bool(len(y) and np.isfinite(y).any())


@contextmanager
def _figure(chart_id: str, height_in: float = HEIGHT_IN) -> Iterator[Figure]:
    # rc_context is scoped, and the salt makes hashed clip/marker ids unique per chart on a page.
    settings: Any = {**_RC, "svg.hashsalt": chart_id}  # rc_context's stubs want literal key types
    with matplotlib.rc_context(settings):
        yield Figure(figsize=(WIDTH_IN, height_in), layout="constrained")


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    svg = compact_svg(buffer.getvalue())
    # Scale with the page: drop the fixed size, keep the viewBox.
    return re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*"', r'<svg \1role="img"', svg, count=1)


def _number(value: float, _position: Any = None) -> str:
    return f"{value:,.6g}".replace(",", " ") if abs(value) >= 1e4 else f"{value:.6g}"


def short_number(value: float) -> str:
    """Four significant digits for a person: 87.06, 0.798; whole numbers from 1000 (4 038)."""
    if abs(value) >= 1000:
        return f"{value:,.0f}".replace(",", " ") if abs(value) >= 1e4 else f"{value:.0f}"
    return f"{value:.4g}"


def _log_axis(ax: Axes, axis: Literal["x", "y"]) -> None:
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(FuncFormatter(_number))
    target.set_minor_formatter(NullFormatter())


def _draw_series(ax: Axes, series: Series, color: str) -> None:
    x = np.asarray(series.x, dtype=float)
    y = np.asarray(series.y, dtype=float)
    label = series.label or series.name
    style = "--" if series.dashed else "-"
    if series.style == "points":
        (artist,) = ax.plot(x, y, linestyle="none", marker="o", markersize=5, color=color, label=label)
    elif series.style == "step":
        (artist,) = ax.plot(
            x, y, drawstyle="steps-post", linestyle=style, color=color, lw=series.line_width, label=label
        )
    else:
        marker = "o" if series.style == "linepoints" else None
        (artist,) = ax.plot(
            x, y, linestyle=style, marker=marker, markersize=5, color=color, lw=series.line_width, label=label
        )
    artist.set_gid(f"data-{gid(series.name)}")
    if series.whiskers is not None:
        low, high = (np.asarray(part, dtype=float) for part in series.whiskers)
        bars = ax.errorbar(x, y, yerr=[y - low, high - y], fmt="none", ecolor=color, capsize=4, lw=1.2)
        for child in bars.lines[2]:
            child.set_gid(f"data-{gid(series.name)}-whiskers")


def _draw_spans(ax: Axes, spans: Sequence[Span]) -> None:
    lo, hi = ax.get_xlim()
    width = hi - lo
    phases = 0
    for number, span in enumerate(spans):
        if span.kind == "warmup":
            patch = ax.axvspan(span.start, span.end, facecolor="#9e9e9e", alpha=0.22, hatch="//", lw=0)
        else:
            # Neighbouring phases alternate two light tints so their boundary shows.
            shade = "#1e88e5" if phases % 2 == 0 else "#fb8c00"
            patch = ax.axvspan(span.start, span.end, facecolor=shade, alpha=0.07, lw=0)
            phases += 1
        patch.set_gid(f"span-{number}")
        # Label only spans wide enough for their text (about 0.9% of the axis per character).
        if span.label and (span.end - span.start) > width * 0.009 * (len(span.label) + 1):
            ax.text(
                (span.start + span.end) / 2,
                0.98,
                span.label,
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="top",
                fontsize=8,
                color="#555555",
                clip_on=True,
            )


def _include(ax: Axes, axis: Literal["x", "y"], value: float, log: bool) -> None:
    """Widen the axis so a threshold far outside the data still shows."""
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    if lo <= value <= hi or (log and value <= 0):
        return
    pad = (value * 1.25 if log else value + 0.05 * (hi - lo)) if value > hi else None
    low_pad = (value / 1.25 if log else value - 0.05 * (hi - lo)) if value < lo else None
    limits = (low_pad if low_pad is not None else lo, pad if pad is not None else hi)
    (ax.set_xlim if axis == "x" else ax.set_ylim)(*limits)


def _draw_thresholds(ax: Axes, thresholds: Sequence[Threshold], log_x: bool, log_y: bool) -> None:
    for number, threshold in enumerate(thresholds):
        log = log_x if threshold.axis == "x" else log_y
        _include(ax, threshold.axis, threshold.value, log)
        draw = ax.axvline if threshold.axis == "x" else ax.axhline
        line = draw(
            threshold.value,
            color=SLO_COLOR,
            linestyle=(0, SLO_DASHES[number % len(SLO_DASHES)]),
            lw=1.6,
            label=threshold.label or f"SLO {threshold.name}",
        )
        line.set_gid(slo_gid(threshold.name))


def _draw_markers(ax: Axes, markers: Sequence[Marker]) -> None:
    drawn: list[tuple[float, float]] = []
    for marker in markers:
        # A marker on the same point as earlier ones (knee = capacity) is a ring around them,
        # its label stacked above theirs, so every marker at one point shows.
        same = sum(1 for x, y in drawn if math.isclose(x, marker.x) and math.isclose(y, marker.y))
        drawn.append((marker.x, marker.y))
        (point,) = ax.plot(
            [marker.x],
            [marker.y],
            marker="D" if same == 0 else "o",
            markersize=9 + 7 * same,
            markerfacecolor=marker.color if same == 0 else "none",
            markeredgecolor=marker.color,
            markeredgewidth=2,
            color=marker.color,
            linestyle="none",
            zorder=5,
        )
        point.set_gid(f"marker-{gid(marker.name)}")
        ax.annotate(
            marker.label,
            (marker.x, marker.y),
            xytext=(12, 12 + 18 * same),
            textcoords="offset points",
            fontsize=9,
            fontweight="bold",
            color=marker.color,
            arrowprops={"arrowstyle": "-", "color": marker.color, "lw": 0.8},
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85},
        )


def _legend(figure: Figure, ax: Axes) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if len(handles) > 1:  # one series needs no legend: the title names it
        # Under the title, above the plot: never over the data.
        figure.legend(
            handles, labels, loc="outside upper left", ncols=min(4, len(handles)), borderaxespad=0.2
        )


def _finish_log_axis(ax: Axes, axis: Literal["x", "y"]) -> None:
    """Ticks a person can read on a log axis, chosen once the limits are final: 1-2-5 per
    decade over a wide range, 1-2-3-5-7 over a narrower one, and plain evenly spaced values
    when the axis spans less than a factor of 3 (which a 1-2-5 axis would leave unlabelled)."""
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    target = ax.xaxis if axis == "x" else ax.yaxis
    ratio = hi / lo if lo > 0 else float("inf")
    if ratio < 3:
        target.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
    elif ratio < 20:
        target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0, 7.0)))
    target.set_major_formatter(FuncFormatter(_number))


def line_chart(
    chart_id: str,
    title: str,
    x_label: str,
    y_label: str,
    series: Sequence[Series],
    thresholds: Sequence[Threshold] = (),
    spans: Sequence[Span] = (),
    markers: Sequence[Marker] = (),
    log_x: bool = False,
    log_y: bool = False,
    caption: str = "",
    y_min: float | None = None,
    x_min: float | None = None,
    decorate: Callable[[Axes], None] | None = None,
) -> Chart:
    """A line/step/point chart. Colours follow `PALETTE` in series order unless a series sets one.

    `y_min`/`x_min` pin the lower limit (0 for counts and rates); `decorate` may add anything
    else to the axes before the legend is drawn. Series without a finite point are skipped.
    """
    with _figure(chart_id) as figure:
        ax = figure.add_subplot()
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
        if log_x:
            _log_axis(ax, "x")
        if log_y:
            _log_axis(ax, "y")
        for number, one in enumerate(series):
            if has_points(one):
                _draw_series(ax, one, one.color or PALETTE[number % len(PALETTE)])
        if y_min is not None and not log_y:
            ax.set_ylim(bottom=y_min)
        if x_min is not None and not log_x:
            ax.set_xlim(left=x_min)
        if markers and not log_y:
            low, high = ax.get_ylim()
            ax.set_ylim(low, high + 0.3 * (high - low))  # room for the markers' labels
        _draw_markers(ax, markers)
        _draw_thresholds(ax, thresholds, log_x, log_y)
        _draw_spans(ax, spans)
        if decorate is not None:
            decorate(ax)
        for axis, log in (("x", log_x), ("y", log_y)):
            if log:
                _finish_log_axis(ax, axis)  # type: ignore[arg-type]
        _legend(figure, ax)
        return Chart(chart_id, title, _svg(figure), caption)


def bar_chart(
    chart_id: str,
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    colors: Sequence[str] | None = None,
    value_label: str = "",
    caption: str = "",
    thresholds: Sequence[Threshold] = (),
    value_format: Callable[[float], str] = short_number,
    decorate: Callable[[Axes], None] | None = None,
    whiskers: tuple[Sequence[float], Sequence[float]] | None = None,
) -> Chart:
    """Vertical bars with their values written on top; each bar's gid is `data-bar-<label>`.
    `whiskers`: a (low, high) range per bar, drawn as error bars (gid `data-bar-whiskers`).
    `decorate` may change the axes (ticks, say) before the legend is drawn."""
    with _figure(chart_id, height_in=HEIGHT_IN) as figure:
        ax = figure.add_subplot()
        ax.set_ylabel(value_label)
        ax.grid(axis="x", visible=False)
        finite = [v if v is not None and math.isfinite(v) else 0.0 for v in values]
        palette = list(colors) if colors else [PALETTE[i % len(PALETTE)] for i in range(len(labels))]
        bars = ax.bar(range(len(labels)), finite, color=palette, width=0.6)
        # At least four slots wide, so one or two bars do not fill the whole chart.
        spare = max(0, 4 - len(labels)) / 2
        ax.set_xlim(-0.5 - spare, len(labels) - 0.5 + spare)
        for label, patch in zip(labels, bars.patches, strict=True):
            patch.set_gid(f"data-bar-{gid(str(label))}")
        ax.set_xticks(range(len(labels)), [str(label) for label in labels])
        ax.bar_label(bars, labels=[value_format(v) for v in finite], padding=3, fontsize=9)
        top = max([*finite, 0.0])
        if whiskers is not None:
            low, high = (np.asarray(part, dtype=float) for part in whiskers)
            heights = np.asarray(finite)
            drawn = ax.errorbar(
                range(len(labels)),
                heights,
                yerr=[np.maximum(heights - low, 0), np.maximum(high - heights, 0)],
                fmt="none",
                ecolor="#333333",
                capsize=6,
                lw=1.2,
            )
            for child in drawn.lines[2]:
                child.set_gid("data-bar-whiskers")
            top = max(top, float(np.nanmax(high)) if high.size else 0.0)
        ax.set_ylim(bottom=0, top=top * 1.18 or 1.0)
        _draw_thresholds(ax, thresholds, False, False)
        if decorate is not None:
            decorate(ax)
        _legend(figure, ax)
        return Chart(chart_id, title, _svg(figure), caption)

"""report.html's "Images" section (`metrics.images`, workload.images): images per request, the
bytes sent, and TTFT against the number of images a request carried (their prefill shows as TTFT
rising with the count). Every number quotes report.json."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from loadgen.features.images.report.markdown import format_bytes
from loadgen.features.images.report.model import ImageCount, Images
from loadgen.report.html.charts import PALETTE, Chart, Series, line_chart
from loadgen.report.html.page import Card, cards, grid, table
from loadgen.report.html.summary_section import num


def image_cards(images: Images) -> str:
    sizes = images.request_bytes
    items = [
        Card("images sent", num(images.images), f"with {num(images.requests)} requests"),
        Card("images per request", num(images.images_per_request), "mean (0-image requests included)"),
        Card("bytes sent", format_bytes(images.bytes_sent), "request bodies, as sent"),
        Card(
            "request size mean",
            format_bytes(sizes.mean),
            f"p95 {format_bytes(sizes.p95)} · max {format_bytes(sizes.max)}",
        ),
    ]
    return cards(items)


def _integer_counts(ax: Axes) -> None:
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value


def ttft_by_count_chart(rows: Sequence[ImageCount]) -> Chart:
    x = [row.images for row in rows]
    columns = (
        ("p50", [_nan(row.ttft_ms.p50) for row in rows]),
        ("p95", [_nan(row.ttft_ms.p95) for row in rows]),
    )
    series = [
        Series(f"ttft-images-{p}", x, values, label=p, style="linepoints", color=PALETTE[number])
        for number, (p, values) in enumerate(columns)
    ]
    return line_chart(
        "ttft-by-images",
        "TTFT by image count",
        "images in the request",
        "ms (from the scheduled send)",
        series,
        y_min=0,
        x_min=min(x, default=0) - 0.5,
        caption="Each image is prefilled before the first token: TTFT rising with the count is the "
        "images' prefill (and their upload).",
        decorate=_integer_counts,
    )


def count_table(rows: Sequence[ImageCount]) -> str:
    body = [
        [
            str(row.images),
            num(row.requests),
            *(num(v) for v in (row.ttft_ms.p50, row.ttft_ms.p95, row.ttft_ms.p99)),
        ]
        for row in rows
    ]
    return table(["images", "requests", "TTFT p50", "TTFT p95", "TTFT p99"], body)


def images_body(images: Images) -> str:
    """The section's HTML: cards, then TTFT by image count as a chart and a table."""
    rows = images.by_count
    body = image_cards(images)
    if rows:
        tabled = f"<h3>TTFT by image count (ms, from the scheduled send)</h3>{count_table(rows)}"
        # a chart only where some count has a TTFT (a text-only server fails every image request)
        timed = [row for row in rows if row.ttft_ms.p50 is not None]
        body += grid([ttft_by_count_chart(timed).html(), tabled] if len(timed) > 0 else [tabled])
    return body

"""report.html's "Images" section (`metrics.images`, workload.images): images per request, the
bytes sent, and TTFT against the number of images a request carried (their prefill shows as TTFT
rising with the count). Every number quotes report.json."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from loadgen.report.html.charts import PALETTE, Chart, Series, line_chart
from loadgen.report.html.page import Card, cards, grid, table
from loadgen.report.html.summary_section import num
from loadgen.report.markdown_images import format_bytes


def _p(figures: Mapping[str, Any] | None, key: str) -> float | None:
    value = (figures or {}).get(key)
    return None if value is None else float(value)


def image_cards(images: Mapping[str, Any]) -> str:
    sizes = images.get("request_bytes") or {}
    items = [
        Card("images sent", num(images.get("images")), f"with {num(images.get('requests'))} requests"),
        Card("images per request", num(images.get("images_per_request")), "mean (0-image requests included)"),
        Card("bytes sent", format_bytes(images.get("bytes_sent")), "request bodies, as sent"),
        Card(
            "request size mean",
            format_bytes(sizes.get("mean")),
            f"p95 {format_bytes(sizes.get('p95'))} · max {format_bytes(sizes.get('max'))}",
        ),
    ]
    return cards(items)


def _integer_counts(ax: Axes) -> None:
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def ttft_by_count_chart(rows: Sequence[Mapping[str, Any]]) -> Chart:
    x = [int(row["images"]) for row in rows]
    series = [
        Series(
            f"ttft-images-{p}",
            x,
            [float("nan") if (v := _p(row.get("ttft_ms"), p)) is None else v for row in rows],
            label=p,
            style="linepoints",
            color=PALETTE[number],
        )
        for number, p in enumerate(("p50", "p95"))
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


def count_table(rows: Sequence[Mapping[str, Any]]) -> str:
    body = [
        [
            str(row["images"]),
            num(row.get("requests")),
            *(num(_p(row.get("ttft_ms"), p)) for p in ("p50", "p95", "p99")),
        ]
        for row in rows
    ]
    return table(["images", "requests", "TTFT p50", "TTFT p95", "TTFT p99"], body)


def images_body(images: Mapping[str, Any]) -> str:
    """The section's HTML: cards, then TTFT by image count as a chart and a table."""
    rows = images.get("by_count") or []
    body = image_cards(images)
    if rows:
        tabled = f"<h3>TTFT by image count (ms, from the scheduled send)</h3>{count_table(rows)}"
        # a chart only where some count has a TTFT (a text-only server fails every image request)
        timed = [row for row in rows if _p(row.get("ttft_ms"), "p50") is not None]
        body += grid([ttft_by_count_chart(timed).html(), tabled] if len(timed) > 0 else [tabled])
    return body

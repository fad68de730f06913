"""report.md's image inputs section (`metrics.images`, workload.images): images per request,
bytes sent, and TTFT by image count, where the images' prefill shows as TTFT rising with them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadgen.fmt import format_number


def _num(value: Any, unit: str = "") -> str:
    if value is None:
        return "–"
    return f"{format_number(float(value))}{' ' + unit if unit else ''}"


def format_bytes(value: Any) -> str:
    """Bytes in decimal units: 2090243 → '2.09 MB'; '–' for none."""
    if value is None:
        return "–"
    size = float(value)
    for unit in ("B", "kB", "MB", "GB"):
        if abs(size) < 1000 or unit == "GB":
            return f"{format_number(round(size, 2))} {unit}"
        size /= 1000
    return f"{size} GB"  # not reached: the loop ends at GB


def image_lines(images: Mapping[str, Any] | None) -> list[str]:
    """The section's lines; none for a run without images."""
    if not images:
        return []
    sizes = images.get("request_bytes") or {}
    lines = [
        "### Images",
        "",
        f"- Images: {images['images']} sent with {images['requests']} requests · "
        f"{_num(images.get('images_per_request'))} per request",
        f"- Bytes sent: {format_bytes(images.get('bytes_sent'))} · per request mean "
        f"{format_bytes(sizes.get('mean'))} · p95 {format_bytes(sizes.get('p95'))} · "
        f"max {format_bytes(sizes.get('max'))}",
        "",
    ]
    rows = images.get("by_count") or []
    if not rows:
        return lines
    header = ["images", "requests", "TTFT p50 (ms)", "TTFT p95 (ms)", "TTFT p99 (ms)"]
    table = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    for row in rows:
        ttft = row.get("ttft_ms") or {}
        cells = [
            str(row["images"]),
            str(row["requests"]),
            *(_num(ttft.get(p)) for p in ("p50", "p95", "p99")),
        ]
        table.append("| " + " | ".join(cells) + " |")
    return [*lines, "TTFT by image count:", "", *table, ""]

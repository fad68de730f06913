"""report.md's image inputs section (`metrics.images`, workload.images): images per request,
bytes sent, and TTFT by image count, where the images' prefill shows as TTFT rising with them."""

from __future__ import annotations

from loadgen.features.images.report.model import Images
from loadgen.fmt import format_number


def _num(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    return f"{format_number(float(value))}{' ' + unit if unit else ''}"


def format_bytes(value: float | None) -> str:
    """Bytes in decimal units: 2090243 → '2.09 MB'; '–' for none."""
    if value is None:
        return "–"
    size = float(value)
    for unit in ("B", "kB", "MB", "GB"):
        if abs(size) < 1000 or unit == "GB":
            return f"{format_number(round(size, 2))} {unit}"
        size /= 1000
    return f"{size} GB"  # not reached: the loop ends at GB


def image_lines(images: Images | None) -> list[str]:
    """The section's lines; none for a run without images."""
    if not images:
        return []
    sizes = images.request_bytes
    lines = [
        "### Images",
        "",
        f"- Images: {images.images} sent with {images.requests} requests · "
        f"{_num(images.images_per_request)} per request",
        f"- Bytes sent: {format_bytes(images.bytes_sent)} · per request mean "
        f"{format_bytes(sizes.mean)} · p95 {format_bytes(sizes.p95)} · max {format_bytes(sizes.max)}",
        "",
    ]
    if not images.by_count:
        return lines
    header = ["images", "requests", "TTFT p50 (ms)", "TTFT p95 (ms)", "TTFT p99 (ms)"]
    table = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    for row in images.by_count:
        ttft = row.ttft_ms
        cells = [str(row.images), str(row.requests), _num(ttft.p50), _num(ttft.p95), _num(ttft.p99)]
        table.append("| " + " | ".join(cells) + " |")
    return [*lines, "TTFT by image count:", "", *table, ""]

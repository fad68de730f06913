"""Image inputs' figures (`workload.images`): report.json's `metrics.images`.

Kept in a GroupStats (loadgen.collect.run_stats loops over the registered statistics) as simple
mergeable values, made only once a record of a class with images is seen (a run without images
keeps nothing more):
- its counts (`feature_counts["images"]`): the records of classes with images (`requests`),
  their images (`images`), the bytes of their bodies (`bytes`, over the records that were
  sent), and per image count k the records that carried k (`count:k`);
- digests in `digests`: the body sizes (`request_bytes`), and TTFT per image count
  (`images:k:ttft_ms`, from the scheduled send, as `ttft_ms`), so the report shows TTFT against
  the number of images a request carried.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from loadgen.collect.columns import Columns
from loadgen.collect.digest import Digest
from loadgen.collect.feature_stats import (
    ChunkValues,
    FeatureStats,
    Group,
    count,
    counts_of,
    merge_counts,
    seen_counts,
    short,
)
from loadgen.collect.metrics_parts import TtftSplitPart

BYTES = "request_bytes"
_BY_COUNT = "images:"

KEY = "images"  # its object under report.json's `metrics`, and its counts' name


def add_images(group: Group, cols: Columns, rows: np.ndarray, chunk: ChunkValues) -> None:
    """Take in the selected rows' image figures."""
    ttft_ms = chunk.latencies["ttft_ms"]
    images = cols.extra["images"][rows]
    mine = images >= 0
    if not mine.any():
        return
    counts, digests, budget = counts_of(group, KEY), group.digests, group.budget
    sizes = cols.extra["request_bytes"][rows]
    sized = mine & ~np.isnan(sizes)
    count(counts, "requests", int(mine.sum()))
    count(counts, "images", int(images[mine].sum()))
    count(counts, "bytes", int(sizes[sized].sum()))
    count(counts, "sized", int(sized.sum()))
    digests.setdefault(BYTES, Digest(budget)).add(sizes[sized])
    for k in np.unique(images[mine]).tolist():
        at = images == k
        count(counts, f"count:{k}", int(at.sum()))
        values = ttft_ms[at]
        digests.setdefault(f"{_BY_COUNT}{k}:ttft_ms", Digest(budget)).add(values[~np.isnan(values)])


def merge_images(group: Group, other: Group) -> None:
    merge_counts(group, other, KEY)
    for name, digest in other.digests.items():
        if name.startswith(_BY_COUNT) or name == BYTES:
            group.digests.setdefault(name, Digest(group.budget)).merge(digest)


class RequestBytesPart(TypedDict):
    """`metrics.images.request_bytes`: `RequestBytes`."""

    mean: float | None
    p50: float | None
    p95: float | None
    max: float | None


class ImageCountPart(TypedDict):
    """One entry of `metrics.images.by_count`: `ImageCount`."""

    images: int
    requests: int
    ttft_ms: TtftSplitPart


class ImagesPart(TypedDict):
    """`metrics.images`: report.json's `Images` (loadgen.report.model.metrics)."""

    requests: int
    images: int
    images_per_request: float | None
    bytes_sent: int
    request_bytes: RequestBytesPart
    by_count: list[ImageCountPart]


def image_metrics(group: Group, elapsed_s: float) -> ImagesPart | None:
    """`metrics.images`; None when the group saw no record of a class with images."""
    counts = seen_counts(group, KEY)
    if not counts:
        return None
    requests, sized = counts.get("requests", 0), counts.get("sized", 0)
    sizes = group.digests.get(BYTES, Digest(group.budget)).percentiles()
    by_count = sorted(int(key[len("count:") :]) for key in counts if key.startswith("count:"))
    return {
        "requests": requests,
        "images": counts.get("images", 0),
        "images_per_request": counts.get("images", 0) / requests if requests else None,
        "bytes_sent": counts.get("bytes", 0),
        "request_bytes": {
            "mean": counts.get("bytes", 0) / sized if sized else None,
            "p50": sizes["p50"],
            "p95": sizes["p95"],
            "max": sizes["max"],
        },
        "by_count": [
            {
                "images": k,
                "requests": counts.get(f"count:{k}", 0),
                "ttft_ms": short(group.digests[f"{_BY_COUNT}{k}:ttft_ms"]),
            }
            for k in by_count
        ],
    }


IMAGE_STATS = FeatureStats(KEY, add_images, merge_images, image_metrics, legacy="image_counts")

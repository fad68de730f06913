"""Image inputs' figures (`workload.images`): report.json's `metrics.images`.

Kept in a GroupStats (loadgen.collect.run_stats) as simple mergeable values, made only once a
record of a class with images is seen (a run without images keeps nothing more):
- `image_counts`: the records of classes with images (`requests`), their images (`images`), the
  bytes of their bodies (`bytes`, over the records that were sent), and per image count k the
  records that carried k (`count:k`);
- digests in `digests`: the body sizes (`request_bytes`), and TTFT per image count
  (`images:k:ttft_ms`, from the scheduled send, as `ttft_ms`), so the report shows TTFT against
  the number of images a request carried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from loadgen.collect.columns import Columns
from loadgen.collect.digest import Digest

if TYPE_CHECKING:
    from loadgen.collect.run_stats import GroupStats

BYTES = "request_bytes"
_BY_COUNT = "images:"


def add_images(group: GroupStats, cols: Columns, rows: np.ndarray, ttft_ms: np.ndarray) -> None:
    """Take in the selected rows' image figures (`ttft_ms`: their TTFT, NaN where none)."""
    images = cols.images[rows]
    mine = images >= 0
    if not mine.any():
        return
    counts, digests, budget = group.image_counts, group.digests, group.budget
    sizes = cols.request_bytes[rows]
    sized = mine & ~np.isnan(sizes)
    _count(counts, "requests", int(mine.sum()))
    _count(counts, "images", int(images[mine].sum()))
    _count(counts, "bytes", int(sizes[sized].sum()))
    _count(counts, "sized", int(sized.sum()))
    digests.setdefault(BYTES, Digest(budget)).add(sizes[sized])
    for k in np.unique(images[mine]).tolist():
        at = images == k
        _count(counts, f"count:{k}", int(at.sum()))
        values = ttft_ms[at]
        digests.setdefault(f"{_BY_COUNT}{k}:ttft_ms", Digest(budget)).add(values[~np.isnan(values)])


def merge_images(group: GroupStats, other: GroupStats) -> None:
    for key, count in other.image_counts.items():
        _count(group.image_counts, key, count)
    for name, digest in other.digests.items():
        if name.startswith(_BY_COUNT) or name == BYTES:
            group.digests.setdefault(name, Digest(group.budget)).merge(digest)


def image_metrics(group: GroupStats) -> dict[str, Any] | None:
    """`metrics.images`; None when the group saw no record of a class with images."""
    counts = group.image_counts
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
                "ttft_ms": _short(group.digests[f"{_BY_COUNT}{k}:ttft_ms"]),
            }
            for k in by_count
        ],
    }


def _short(digest: Digest) -> dict[str, float | None]:
    """p50, p95, p99 of a digest (ms)."""
    percentiles = digest.percentiles()
    return {key: percentiles[key] for key in ("p50", "p95", "p99")}


def _count(counts: dict[str, int], key: str, value: int) -> None:
    counts[key] = counts.get(key, 0) + value

"""Server memory over a run: the `resources.jsonl` samples and `server.memory` of report.json.

Pure functions over plain data (no gevent): `loadtest report` recomputes the summary from the
file exactly as the run did. Growth is the Theil–Sen slope (the median of all pairwise slopes),
so a few outliers — a garbage-collection dip, a burst of buffers — do not move it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict, cast

import numpy as np

RESOURCES_FILE = "resources.jsonl"
MB = 1024**2  # binary, like the scenario's sizes: 100KB × 50 req/s = 293 MB/min
# Theil–Sen looks at every pair of points (n² memory): longer series are thinned evenly to this.
MAX_SLOPE_POINTS = 2000


class ResourceLine(TypedDict):
    """A memory line of resources.jsonl (`gpu_mb` only where a GPU was sampled)."""

    t_s: float
    rss_mb: float
    processes: int
    gpu_mb: NotRequired[float]


class MemorySummary(TypedDict):
    """report.json's `server.memory` (loadgen.report.model.server.Memory validates it)."""

    rss_mb_start: float | None
    rss_mb_peak: float | None
    growth_mb_per_min: float | None
    samples: int
    gpu_mb_peak: NotRequired[float]
    gpu_growth_mb_per_min: NotRequired[float | None]


@dataclass(frozen=True)
class ResourceSample:
    """One line of resources.jsonl. `t_s`: seconds since the run's t0 (the clock of requests.jsonl)."""

    t_s: float
    rss_mb: float
    processes: int
    gpu_mb: float | None = None

    def to_dict(self) -> ResourceLine:
        data: ResourceLine = {"t_s": self.t_s, "rss_mb": self.rss_mb, "processes": self.processes}
        if self.gpu_mb is not None:
            data["gpu_mb"] = self.gpu_mb
        return data

    @classmethod
    def from_dict(cls, data: ResourceLine) -> ResourceSample:
        """A line as read (JSON, unchecked: a ResourceLine when this tool wrote it)."""
        gpu = data.get("gpu_mb")
        return cls(
            t_s=float(data["t_s"]),
            rss_mb=float(data["rss_mb"]),
            processes=int(data["processes"]),
            gpu_mb=None if gpu is None else float(gpu),
        )


def read_samples(path: Path) -> Iterator[ResourceSample]:
    """The memory samples of a resources.jsonl; other lines and a torn last line are skipped."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                data = json.loads(line)
                if isinstance(data, dict) and "rss_mb" in data:
                    # a line as read, unchecked: from_dict's errors skip it
                    yield ResourceSample.from_dict(cast(ResourceLine, data))
            except (ValueError, KeyError, TypeError):
                continue


def growth_per_min(times_s: Sequence[float], values: Sequence[float]) -> float | None:
    """Theil–Sen slope of values over time, per minute; None with fewer than 2 distinct times."""
    if len(times_s) != len(values):
        raise ValueError("times and values differ in length")
    if len(set(times_s)) < 2:
        return None
    step = max(1, -(-len(times_s) // MAX_SLOPE_POINTS))  # ceil: at most MAX_SLOPE_POINTS remain
    return theil_sen_slope(np.asarray(times_s[::step], float) / 60.0, np.asarray(values[::step], float))


def theil_sen_slope(x: np.ndarray, y: np.ndarray) -> float:
    """The median of the slopes of every pair of points with distinct x: scipy.stats.theilslopes'
    `slope`, the same arithmetic (tests/unit/test_memory_slope.py holds them equal). Here because
    importing scipy.stats costs every run 0.7 s of start-up for this one median."""
    dx = x[np.newaxis, :] - x[:, np.newaxis]
    dy = y[np.newaxis, :] - y[:, np.newaxis]
    rising = dx > 0
    return float(np.median(dy[rising] / dx[rising]))


def summarize_memory(
    samples: Iterable[ResourceSample], start_s: float, end_s: float | None = None
) -> MemorySummary:
    """`server.memory` from the samples taken in [start_s, end_s] (warm-up cut off).

    rss_mb_start is the first such sample, rss_mb_peak the highest, growth_mb_per_min the
    Theil–Sen slope; `gpu_*` keys appear only when some sample has a GPU figure.
    """
    kept = sorted(
        (s for s in samples if s.t_s >= start_s and (end_s is None or s.t_s <= end_s)),
        key=lambda s: s.t_s,
    )
    summary: MemorySummary = {
        "rss_mb_start": kept[0].rss_mb if kept else None,
        "rss_mb_peak": max(s.rss_mb for s in kept) if kept else None,
        "growth_mb_per_min": growth_per_min([s.t_s for s in kept], [s.rss_mb for s in kept]),
        "samples": len(kept),
    }
    gpu = [s for s in kept if s.gpu_mb is not None]
    if gpu:
        gpu_values = [s.gpu_mb for s in gpu if s.gpu_mb is not None]
        summary["gpu_mb_peak"] = max(gpu_values)
        summary["gpu_growth_mb_per_min"] = growth_per_min([s.t_s for s in gpu], gpu_values)
    return summary

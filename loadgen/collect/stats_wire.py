"""RunStats as plain data: what a distributed worker ships with `--records summary`, and the
run folder's `requests-summary.msgpack` that `loadtest report` reads instead of requests.jsonl.

A digest travels as it is: its exact values (float64 bytes) while within its budget, else its
DDSketch's bins (key and count of each, positive and negative, and the zero count). Mean, max and
count travel exactly. Merging what arrives (RunStats.merge) gives the numbers one RunStats fed
every record would give: exactly while the values fit the budget, within the sketch's stated
relative error beyond it. msgpack, the encoding of Locust's channel, serves for the file too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
from ddsketch import DDSketch

from loadgen.collect.digest import Digest
from loadgen.collect.feature_list import feature_stats
from loadgen.collect.run_stats import GroupStats, RunStats
from loadgen.collect.windows import PhaseWindow

SUMMARY_FILE = "requests-summary.msgpack"
FORMAT = 1


class SummaryError(ValueError):
    """A summary that cannot be read (the message says why)."""


def dump_digest(digest: Digest) -> dict[str, Any]:
    data: dict[str, Any] = {
        "budget": digest.budget,
        "accuracy": digest.relative_accuracy,
        "count": digest.count,
        "sum": digest._sum,
        "max": digest._max if digest.count else None,
    }
    sketch = digest._sketch
    if sketch is None:
        values = np.concatenate(digest._chunks) if digest._chunks else np.empty(0)
        data["values"] = values.astype("<f8").tobytes()
    else:
        data["positive"] = _store(sketch._store)  # the package keeps its stores here
        data["negative"] = _store(sketch._negative_store)
        data["zeros"] = float(sketch._zero_count)
    return data


def load_digest(data: dict[str, Any]) -> Digest:
    digest = Digest(int(data["budget"]), float(data["accuracy"]))
    digest.count = int(data["count"])
    digest._sum = float(data["sum"])
    digest._max = -math.inf if data["max"] is None else float(data["max"])
    if "values" in data:
        values = np.frombuffer(data["values"], dtype="<f8").astype(np.float64)
        digest._chunks = [values] if values.size else []
        return digest
    sketch = DDSketch(digest.relative_accuracy)
    mapping = sketch._mapping
    for sign, store in ((1.0, data["positive"]), (-1.0, data["negative"])):
        for key, count in zip(store["keys"], store["counts"], strict=True):
            sketch.add(sign * mapping.value(int(key)), float(count))  # the bin's value maps back to it
    if data["zeros"]:
        sketch.add(0.0, float(data["zeros"]))
    digest._sketch = sketch
    return digest


def _store(store: Any) -> dict[str, list[float]]:
    """A DDSketch store's non-empty bins: key and count of each."""
    keys, counts = [], []
    for position, count in enumerate(store.bins):
        if count:
            keys.append(store.offset + position)
            counts.append(float(count))
    return {"keys": keys, "counts": counts}


def dump_group(group: GroupStats) -> dict[str, Any]:
    """Every field of a GroupStats (new plain fields travel without a change here)."""
    data: dict[str, Any] = {}
    for spec in fields(group):
        value = getattr(group, spec.name)
        if spec.name == "digests":
            value = {name: dump_digest(digest) for name, digest in value.items()}
        elif isinstance(value, set):
            value = sorted(value)
        data[spec.name] = value
    return data


def load_group(data: dict[str, Any]) -> GroupStats:
    group = GroupStats(int(data["budget"]))
    # Summaries written before the features' counts shared one field: each had its own.
    for feature in feature_stats():
        if feature.legacy is not None and data.get(feature.legacy):
            group.feature_counts[feature.key] = dict(data[feature.legacy])
    for spec in fields(group):
        if spec.name not in data or spec.name == "budget":
            continue  # a field this summary predates keeps its default
        value = data[spec.name]
        if spec.name == "digests":
            value = {name: load_digest(digest) for name, digest in value.items()}
        elif isinstance(getattr(group, spec.name), set):
            value = set(value)
        elif spec.name == "feature_counts":
            value = {key: dict(counts) for key, counts in value.items()}
        elif isinstance(value, dict):
            value = dict(value)
        setattr(group, spec.name, value)
    return group


def dump_run_stats(stats: RunStats) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "budget": stats.budget,
        "records": stats.records,
        "phases": {index: dump_group(group) for index, group in stats.phases.items()},
        "classes": {name: dump_group(group) for name, group in stats.classes.items()},
        "split": stats._split,
        "first_id": dict(stats.first_id),
        "adapters": {name: dump_group(group) for name, group in stats.adapters.items()},
        "lag": dump_digest(stats.lag),
    }


def load_run_stats(data: dict[str, Any], windows: Sequence[PhaseWindow]) -> RunStats:
    """The RunStats `data` describes, over `windows` (the run's measured windows, as planned)."""
    if data.get("format") != FORMAT:
        raise SummaryError(f"summary format {data.get('format')!r}: this version reads {FORMAT}")
    stats = RunStats(windows, int(data["budget"]))
    stats.records = int(data["records"])
    for index, group in data["phases"].items():
        stats.phases[int(index)] = load_group(group)
    stats.classes = {str(name): load_group(group) for name, group in data["classes"].items()}
    stats._split = bool(data["split"])
    stats.first_id = {str(name): int(first) for name, first in data["first_id"].items()}
    stats.adapters = {str(name): load_group(group) for name, group in data.get("adapters", {}).items()}
    stats.lag = load_digest(data["lag"])
    return stats


def pack(stats: RunStats) -> bytes:
    packed: bytes = msgpack.packb(dump_run_stats(stats), use_bin_type=True)
    return packed


def unpack(payload: bytes, windows: Sequence[PhaseWindow]) -> RunStats:
    try:
        data = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise SummaryError(f"not a records summary: {exc}") from None
    if not isinstance(data, dict):
        raise SummaryError("not a records summary")
    try:
        return load_run_stats(data, windows)
    except (KeyError, TypeError, ValueError) as exc:
        raise SummaryError(f"a damaged records summary: {exc!r}") from None


def write_summary(run_dir: Path, stats: RunStats) -> Path:
    """Write the run's summary next to its other files (through a temporary name: a crash
    mid-write leaves the previous one, never half a file)."""
    path = run_dir / SUMMARY_FILE
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(pack(stats))
    partial.replace(path)
    return path


def read_summary(run_dir: Path, windows: Sequence[PhaseWindow]) -> RunStats:
    try:
        payload = (run_dir / SUMMARY_FILE).read_bytes()
    except OSError as exc:
        raise SummaryError(f"cannot read {SUMMARY_FILE}: {exc}") from None
    return unpack(payload, windows)

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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NotRequired, Required, TypedDict, cast

import msgpack
import numpy as np
from ddsketch import DDSketch

from loadgen.collect.digest import Digest
from loadgen.collect.feature_list import feature_stats
from loadgen.collect.run_stats import GroupStats, RunStats
from loadgen.collect.windows import PhaseWindow

SUMMARY_FILE = "requests-summary.msgpack"
FORMAT = 1


class StoreWire(TypedDict):
    """A DDSketch store's non-empty bins: key and count of each."""

    keys: list[int]
    counts: list[float]


class DigestWire(TypedDict):
    """A Digest: its exact values while within its budget, else its sketch's bins."""

    budget: int
    accuracy: float
    count: int
    sum: float
    max: float | None
    values: NotRequired[bytes]  # exact (float64, little-endian)
    positive: NotRequired[StoreWire]  # sketched
    negative: NotRequired[StoreWire]
    zeros: NotRequired[float]


class GroupWire(TypedDict, total=False):
    """A GroupStats: each of its fields (tests check the keys against them); a summary written
    before a field was added lacks it, one written before the features shared `feature_counts`
    has a field of counts for each feature (FeatureStats.legacy) instead."""

    budget: Required[int]
    requests: int
    errors: int
    timeouts: int
    cancelled: int
    sent: int
    tokens: int
    error_kinds: dict[str, int]
    last_send: dict[int, float]
    sources: list[int]
    digests: dict[str, DigestWire]
    feature_counts: dict[str, dict[str, int]]


class RunStatsWire(TypedDict):
    """A RunStats; then each slice grouping's groups under its key (SLICE_GROUPS: `adapters`,
    missing from a summary written before them)."""

    format: int
    budget: int
    records: int
    phases: dict[int, GroupWire]
    classes: dict[str, GroupWire]
    split: bool
    first_id: dict[str, int]
    lag: DigestWire


class SummaryError(ValueError):
    """A summary that cannot be read (the message says why)."""


def dump_digest(digest: Digest) -> DigestWire:
    data: DigestWire = {
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


def load_digest(data: DigestWire) -> Digest:
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


def _store(store: Any) -> StoreWire:
    """A DDSketch store's non-empty bins: key and count of each."""
    keys: list[int] = []
    counts: list[float] = []
    for position, count in enumerate(store.bins):
        if count:
            keys.append(store.offset + position)
            counts.append(float(count))
    return {"keys": keys, "counts": counts}


def dump_group(group: GroupStats) -> GroupWire:
    """Every field of a GroupStats, in their order."""
    return {
        "budget": group.budget,
        "requests": group.requests,
        "errors": group.errors,
        "timeouts": group.timeouts,
        "cancelled": group.cancelled,
        "sent": group.sent,
        "tokens": group.tokens,
        "error_kinds": group.error_kinds,
        "last_send": group.last_send,
        "sources": sorted(group.sources),
        "digests": {name: dump_digest(digest) for name, digest in group.digests.items()},
        "feature_counts": group.feature_counts,
    }


def load_group(data: GroupWire) -> GroupStats:
    group = GroupStats(int(data["budget"]))
    # Summaries written before the features' counts shared one field: each had its own.
    for feature in feature_stats():
        legacy = data.get(feature.legacy) if feature.legacy is not None else None
        if legacy:
            group.feature_counts[feature.key] = dict(cast(Mapping[str, int], legacy))
    # A field this summary predates keeps its default.
    if "requests" in data:
        group.requests = data["requests"]
    if "errors" in data:
        group.errors = data["errors"]
    if "timeouts" in data:
        group.timeouts = data["timeouts"]
    if "cancelled" in data:
        group.cancelled = data["cancelled"]
    if "sent" in data:
        group.sent = data["sent"]
    if "tokens" in data:
        group.tokens = data["tokens"]
    if "error_kinds" in data:
        group.error_kinds = dict(data["error_kinds"])
    if "last_send" in data:
        group.last_send = dict(data["last_send"])
    if "sources" in data:
        group.sources = set(data["sources"])
    if "digests" in data:
        group.digests = {name: load_digest(digest) for name, digest in data["digests"].items()}
    if "feature_counts" in data:
        group.feature_counts = {key: dict(counts) for key, counts in data["feature_counts"].items()}
    return group


def dump_run_stats(stats: RunStats) -> RunStatsWire:
    data: dict[str, Any] = {
        "format": FORMAT,
        "budget": stats.budget,
        "records": stats.records,
        "phases": {index: dump_group(group) for index, group in stats.phases.items()},
        "classes": {name: dump_group(group) for name, group in stats.classes.items()},
        "split": stats._split,
        "first_id": dict(stats.first_id),
    }
    for key, named in stats.groups.items():  # before `lag`, where `adapters` always was
        data[key] = {name: dump_group(group) for name, group in named.items()}
    data["lag"] = dump_digest(stats.lag)
    return cast(RunStatsWire, data)


def load_run_stats(data: RunStatsWire, windows: Sequence[PhaseWindow]) -> RunStats:
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
    keyed = cast(Mapping[str, Any], data)
    for key in stats.groups:
        stats.groups[key] = {str(name): load_group(group) for name, group in keyed.get(key, {}).items()}
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
        return load_run_stats(cast(RunStatsWire, data), windows)  # checked as it is read
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

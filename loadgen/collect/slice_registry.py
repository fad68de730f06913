"""What the feature slices (loadgen.features) give the record and the statistics: their fields
and their statistics, registered when loadgen.features is imported (loadgen's __init__ does so
first). Plain data: the statistics are registered as loaders, so importing the slices costs no
numpy; the statistics' loop loads them at its first use (loadgen.collect.feature_list)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loadgen.collect.field_doc import FieldDoc

if TYPE_CHECKING:
    from loadgen.collect.feature_stats import FeatureStats


@dataclass(frozen=True)
class Grouping:
    """A slice's records grouped by one of its label fields (`field`: a string naming the record's
    group, None: in none), each group measured as a class is: report.json's `<key>` (by group
    name), each group's SLOs (the scenario's `slo.<key>`, checks named '<label> <name>: <check>')
    and its live TTFT histogram."""

    key: str  # the slice's name: report.json's key, the SLO section's
    field: str
    label: str  # what one group is called in a check's name, a chart's id, a live label (adapter)
    noun: str  # ... and in words (the reports' section: its plural)
    description: str  # report.json's key's


@dataclass(frozen=True)
class ServerCounter:
    """A counter of the built-in engines' /metrics that a slice reads: kept as `name` (the
    normalized series, loadgen.collect.metrics_text), report.json's `server.metrics.<key>` its
    increase over the window, and where `live` names one, a live gauge of its value so far."""

    series: str  # as the server exposes it
    name: str
    key: str
    description: str  # report.json's server.metrics.<key>'s
    live: str | None = None
    live_help: str = ""


# Grow in place, once per slice, in SLICES' order.
SLICE_FIELDS: dict[str, FieldDoc] = {}
SLICE_STATS: list[Callable[[], FeatureStats]] = []
SLICE_GROUPS: list[Grouping] = []
SLICE_SERVER_COUNTERS: list[ServerCounter] = []


def register_fields(docs: Mapping[str, FieldDoc]) -> None:
    """A slice's fields: written after the core's (RequestRecord.extra), read into Columns.extra
    by their column kind (each must name one), documented with the core's."""
    for name, described in docs.items():
        if name in SLICE_FIELDS:
            raise ValueError(f"record field {name!r} is declared twice")
        if described.column is None:
            raise ValueError(f"record field {name!r} names no column kind")
        SLICE_FIELDS[name] = described


def register_groups(grouping: Grouping) -> None:
    """A slice's grouping of the records by a label field it declared."""
    described = SLICE_FIELDS.get(grouping.field)
    if described is None or described.column != "label":
        raise ValueError(f"records are grouped by {grouping.field!r}: no label field of a slice")
    SLICE_GROUPS.append(grouping)


def register_server_counters(counters: Sequence[ServerCounter]) -> None:
    """A slice's counters of the server's /metrics (read by the scrapes, which import later)."""
    SLICE_SERVER_COUNTERS.extend(counters)


def grouping(key: str) -> Grouping:
    """The slice grouping of that key (a model's key declared by the core reads its description)."""
    return next(each for each in SLICE_GROUPS if each.key == key)


def register_stats(load: Callable[[], FeatureStats]) -> None:
    """A slice's statistics, after the core's and those already here."""
    SLICE_STATS.append(load)

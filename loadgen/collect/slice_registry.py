"""What the feature slices (loadgen.features) give the record and the statistics: their fields
and their statistics, registered when loadgen.features is imported (loadgen's __init__ does so
first). Plain data: the statistics are registered as loaders, so importing the slices costs no
numpy; the statistics' loop loads them at its first use (loadgen.collect.feature_list)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from loadgen.collect.field_doc import FieldDoc

if TYPE_CHECKING:
    from loadgen.collect.feature_stats import FeatureStats

# Grow in place, once per slice, in SLICES' order.
SLICE_FIELDS: dict[str, FieldDoc] = {}
SLICE_STATS: list[Callable[[], FeatureStats]] = []


def register_fields(docs: Mapping[str, FieldDoc]) -> None:
    """A slice's fields: written after the core's (RequestRecord.extra), read into Columns.extra
    by their column kind (each must name one), documented with the core's."""
    for name, described in docs.items():
        if name in SLICE_FIELDS:
            raise ValueError(f"record field {name!r} is declared twice")
        if described.column is None:
            raise ValueError(f"record field {name!r} names no column kind")
        SLICE_FIELDS[name] = described


def register_stats(load: Callable[[], FeatureStats]) -> None:
    """A slice's statistics, after the core's and those already here."""
    SLICE_STATS.append(load)

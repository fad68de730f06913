"""The features the statistics loop over, in the order report.json's `metrics` gives their
objects: the core's own, then each feature slice's (loadgen.features, through
loadgen.collect.slice_registry), loaded at the first use."""

from __future__ import annotations

from loadgen.collect.feature_stats import FeatureStats
from loadgen.collect.item_stats import ITEM_STATS
from loadgen.collect.prefix_stats import PREFIX_STATS
from loadgen.collect.session_stats import SESSION_STATS
from loadgen.collect.slice_registry import SLICE_STATS
from loadgen.collect.token_stats import TOKEN_STATS
from loadgen.collect.ttfat import TTFAT_STATS

CORE_STATS: tuple[FeatureStats, ...] = (PREFIX_STATS, TTFAT_STATS, SESSION_STATS, ITEM_STATS, TOKEN_STATS)
_loaded: list[tuple[FeatureStats, ...]] = []  # the whole list, once the slices' are loaded


def feature_stats() -> tuple[FeatureStats, ...]:
    """The core's statistics, then the slices'."""
    if not _loaded or len(_loaded[0]) != len(CORE_STATS) + len(SLICE_STATS):
        every = (*CORE_STATS, *(load() for load in SLICE_STATS))
        keys = [stats.key for stats in every]
        if len(set(keys)) != len(keys):
            raise ValueError(f"statistics registered twice: {keys}")
        _loaded[:] = [every]
    return _loaded[0]

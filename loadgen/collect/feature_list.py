"""The features the statistics loop over, in the order report.json's `metrics` gives their
objects. A new feature's statistics are one module and one line here."""

from __future__ import annotations

from loadgen.collect.feature_stats import FeatureStats
from loadgen.collect.image_stats import IMAGE_STATS
from loadgen.collect.prefix_stats import PREFIX_STATS
from loadgen.collect.reasoning_stats import REASONING_STATS
from loadgen.collect.session_stats import SESSION_STATS
from loadgen.collect.tool_stats import TOOL_STATS

FEATURE_STATS: tuple[FeatureStats, ...] = (
    PREFIX_STATS,
    REASONING_STATS,
    TOOL_STATS,
    SESSION_STATS,
    IMAGE_STATS,
)

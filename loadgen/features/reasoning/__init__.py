"""Reasoning streams (`workload.reasoning`: spec): requests ask a reasoning
model for its thinking (ask), every answer's reasoning is recorded (record), counted live and
summed up as report.json's `metrics.reasoning` (stats; TTFAT stays the core's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.reasoning.key import SPEC
from loadgen.features.reasoning.record import REASONING_FIELDS
from loadgen.features.slice import Counter, Slice

if TYPE_CHECKING:
    from loadgen.collect.feature_stats import FeatureStats
    from loadgen.features.slice import Attaches, Reads


def _stats() -> FeatureStats:
    from loadgen.features.reasoning.stats import REASONING_STATS

    return REASONING_STATS


def _attaches() -> Attaches:
    from loadgen.features.reasoning.ask import REASONING_ASKER

    return REASONING_ASKER


def _reads() -> Reads:
    from loadgen.features.reasoning.ask import REASONING_READER

    return REASONING_READER


TOKENS = Counter(
    "loadtest_reasoning_tokens", "Reasoning tokens received (part of the output tokens)", "reasoning_tokens"
)


REASONING = Slice(
    "reasoning",
    REASONING_FIELDS,
    _stats,
    attaches=_attaches,
    reads=_reads,
    counters=(TOKENS,),
    report="loadgen.features.reasoning.report",
    spec=SPEC,
)

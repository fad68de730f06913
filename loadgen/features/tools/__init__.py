"""Tool calls (`workload.tools`: spec): requests offer tools (ask), the calls
their answers make are recorded (record), counted live, summed up as report.json's
`metrics.tools` (stats) and shown in report.md and report.html (report/)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.slice import Counter, Slice
from loadgen.features.tools.key import SPEC
from loadgen.features.tools.record import TOOL_FIELDS

if TYPE_CHECKING:
    from loadgen.collect.feature_stats import FeatureStats
    from loadgen.features.slice import Attaches


def _stats() -> FeatureStats:
    from loadgen.features.tools.stats import TOOL_STATS

    return TOOL_STATS


def _attaches() -> Attaches:
    from loadgen.features.tools.ask import TOOL_OFFER

    return TOOL_OFFER


CALLS = Counter(
    "loadtest_tool_calls", "Tool calls the answers made (requests that offered tools)", "tool_calls"
)


TOOLS = Slice(
    "tools",
    TOOL_FIELDS,
    _stats,
    attaches=_attaches,
    counters=(CALLS,),
    report="loadgen.features.tools.report",
    spec=SPEC,
)

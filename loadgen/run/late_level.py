"""A search level whose sends were late, re-judged as a plain run is (loadgen.report.rejudge):
the search goes on with a warning when the level's verdict (each SLO held, failed or unresolved)
is the same with the late requests' latencies reduced by their lag and with them left out, and
stops (exit 2) when it is not or when the lateness was sustained. The knee and the capacity
are re-judged once more over every level by the report (loadgen.report.search_report)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from loadgen.collect.late_sends import VARIANT_WORDS, VARIANTS, LateSendScan, adjust_records
from loadgen.collect.records import RequestRecord
from loadgen.evaluate.curve import LevelResult
from loadgen.evaluate.level_results import LevelWindow, level_result
from loadgen.evaluate.search import SearchSpec
from loadgen.scenario.model import Scenario


@dataclass(frozen=True)
class LateLevel:
    """`stop`: why the search cannot go on (None: it can, and `warning` says why)."""

    stop: str | None
    warning: str | None = None


def late_level(
    windows: Sequence[LevelWindow],
    records: Sequence[RequestRecord],
    scenario: Scenario,
    spec: SearchSpec,
    lag: str,
) -> LateLevel:
    """The level's records (every trial), judged in both views of its late sends; `lag`: the
    crossed bound, in words."""
    bound_ms = scenario.client.max_schedule_lag_p99 * 1000
    indexes = {window.index for window in windows}
    mine = [record for record in records if record.phase in indexes]
    scan = LateSendScan(bound_ms)
    scan.add_records(mine)
    late = scan.result(sum(window.end_s - window.start_s for window in windows))
    if late.sustained:
        return LateLevel(f"{lag}, sustained ({late.sustained_words()})")
    measured = _statuses(windows, mine, scenario, spec)
    changed = []
    for variant in VARIANTS:
        view = _statuses(windows, adjust_records(mine, variant, bound_ms), scenario, spec)
        if view != measured:
            changed.append(f"{', '.join(_differences(measured, view))} {VARIANT_WORDS[variant]}")
    if changed:
        return LateLevel(f"{lag}, and the level's verdict depends on the late sends: {'; '.join(changed)}")
    return LateLevel(None, f"{late.words()} ({lag}); the level's verdict does not depend on them")


def _statuses(
    windows: Sequence[LevelWindow], records: Sequence[RequestRecord], scenario: Scenario, spec: SearchSpec
) -> dict[str, str]:
    """Each of the level's SLO checks that did not hold (failed or unresolved, as the policy
    reads them), and whether the level held."""
    result: LevelResult = level_result(
        windows, records, scenario.slo, spec.max_drift, spec.precision is not None, scenario.seed
    )[0]
    statuses = {name: "failed" for name in result.failed_slos}
    statuses.update({name: "unresolved" for name in result.unresolved_slos})
    statuses["level"] = "held" if result.slo_passed else "not held"
    return statuses


def _differences(measured: dict[str, str], view: dict[str, str]) -> list[str]:
    names = [name for name in {**measured, **view} if measured.get(name, "held") != view.get(name, "held")]
    return [f"{name} {view.get(name, 'held')}" for name in names]


def print_warning(line: str) -> None:
    print(f"loadtest: warning: {line}", file=sys.stderr, flush=True)

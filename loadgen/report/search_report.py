"""report.json for a search run: the plain report at the operating point, plus the curve.

The operating point is the capacity level (the highest level at which every SLO held), or the
lowest level run when none held: `metrics` and `slo` describe it, `phases` lists every level run
(with its level, trial and role), and `knee`, `capacity` and `replicas` carry the evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from loadgen.collect.late_sends import Variant, adjust_records
from loadgen.collect.records import RequestRecord
from loadgen.collect.server_metrics_summary import ServerMetricsData
from loadgen.collect.stats import phase_metrics
from loadgen.evaluate.curve import Over
from loadgen.evaluate.level_results import LevelWindow, group_levels, mark_unmeasured, search_results
from loadgen.evaluate.parts import json_data
from loadgen.evaluate.plan import evaluate, judge_curve
from loadgen.evaluate.search import SearchSpec
from loadgen.fmt import format_number
from loadgen.report.build import Judging, RunFacts, build_report, round_floats
from loadgen.report.drill_facts import failed_drills, failure_line, passed_summary
from loadgen.report.model import Report, Verdict
from loadgen.report.model.evaluation import Capacity, Knee, OperatingPoint, Replicas, Verified
from loadgen.report.model.metrics import Phase
from loadgen.report.rejudge import MemoryLateView
from loadgen.report.words import capacity_words
from loadgen.scenario.mode import SearchMode
from loadgen.scenario.model import Scenario


def _operating_windows(windows: Sequence[LevelWindow], capacity: Capacity | None) -> list[LevelWindow]:
    groups = group_levels(windows)
    if not groups:
        return []
    level = capacity.level if capacity else None
    for group in groups:
        if level is not None and group[0].level == level:
            return group
    return min(groups, key=lambda group: group[0].level)


def _phases(records: Sequence[RequestRecord], windows: Sequence[LevelWindow]) -> list[Phase]:
    by_index = {window.index: window for window in windows}
    phases = phase_metrics(records, [window.phase_window() for window in windows])
    for phase in phases:
        window = by_index[phase["index"]]
        phase.update(
            {
                "level": window.level,
                "over": window.over,
                "trial": window.trial,
                "role": window.role,
                "replicas": window.replicas,
                "extended": window.extended,
            }
        )
        if window.target_rate is None:
            phase["target_rate"] = None
    return [Phase.model_validate(round_floats(phase)) for phase in phases]


def _drill_verdict(verified: Verified | None) -> tuple[list[str], str]:
    """(a line per failed drill, the summary's part for the drills when none failed)."""
    drills = list(verified.drills or []) if verified else []
    failures = [failure_line(drill) for drill in failed_drills(drills)]
    return failures, (passed_summary(drills) if drills and not failures else "")


def _verdict(report: Report, over: str) -> tuple[Verdict, str]:
    """A search fails when no level held every SLO, the verified plan did not hold, or a drill
    failed (each failed drill's reason joins the verdict's reason, `; `-separated: one line)."""
    verdict, reason = report.verdict, report.reason
    if verdict == "error":
        return verdict, reason
    capacity, knee, replicas = report.capacity, report.knee, report.replicas
    if capacity is None or not capacity.rate_rps:
        limiting = (capacity.limiting_slo if capacity else None) or "the SLOs"
        return "fail", f"no load level held every SLO ({limiting} failed even at the lowest level)"
    verified = replicas.verified if replicas else None
    drill_failures, drills_passed = _drill_verdict(verified)
    if verified is not None and verified.passed is False:
        checks = verified.at_plan.checks if verified.at_plan else []
        names = ", ".join(check.name for check in checks if not check.passed) or "no requests measured"
        plan = f"the plan of {verified.replicas} replicas did not hold at the peak rate ({names} failed)"
        return "fail", "; ".join([plan, *drill_failures])
    parts = [f"capacity at SLO {capacity_words(capacity)}"]
    if knee is not None and knee.level is not None:
        sessions = capacity.sessions_per_s is not None and over == Over.RATE
        level = (
            f"{format_number(knee.level)} sessions/s" if sessions else f"{over} {format_number(knee.level)}"
        )
        parts.append(f"knee at {level}")
    if replicas is not None and replicas.count is not None:
        parts.append(f"plan {replicas.count} replicas ({replicas.formula})")
    if verified is not None and verified.passed:
        fewer = verified.one_fewer_passed
        parts.append(
            "verified" + ("" if fewer is None else "; one fewer held too" if fewer else "; one fewer failed")
        )
    summary = ", ".join(parts) + (f"; {drills_passed}" if drills_passed else "")
    if verdict == "fail":  # a whole-run SLO (tokens/s floor, memory, cold start) failed
        return verdict, "; ".join([reason, *drill_failures, summary])
    if drill_failures:
        return "fail", "; ".join([*drill_failures, summary])
    return "pass", summary


def curve_answers(
    windows: Sequence[LevelWindow],
    records: Sequence[RequestRecord],
    search: SearchSpec,
    scenario: Scenario,
    variant: Variant | None,
) -> dict[str, str]:
    """The knee and the capacity level over the searched levels of `windows`, as sentences
    (loadgen.report.rejudge), as measured or in a view of the late sends: a search is re-judged
    on them as well as on its SLOs."""
    if variant is not None:
        records = adjust_records(records, variant, scenario.client.max_schedule_lag_p99 * 1000)
    results = search_results(
        windows, records, scenario.slo, search.max_drift, search.precision is not None, scenario.seed
    )
    curve = judge_curve(results, search.over, search.precision)
    capacity = None if curve.capacity is None else curve.capacity.level
    knee = curve.knee_level
    return {
        "knee": "no knee" if knee is None else f"the knee is at {format_number(knee)}",
        "capacity": "no level held"
        if capacity is None
        else f"the capacity level is {format_number(capacity)}",
    }


def build_search_report(
    facts: RunFacts,
    scenario: Scenario,
    records: Iterable[RequestRecord],
    windows: Sequence[LevelWindow],
    *,
    peak_rate: float | None,
    verify_setup: Mapping[str, Any] | None,
    server_metrics: Callable[[float, float], ServerMetricsData | None] | None = None,
) -> Report:
    """A search run's report.json: the plain report over the operating point's window(s), plus
    the curve, knee, capacity, replica plan and verification. `verify_setup`: run.json's
    `verify`, free-form JSON until loadgen.evaluate.plan reads it (VerifySetup.of);
    `server_metrics(start_s, end_s)`: the server's own /metrics over a window."""
    mode = scenario.mode
    assert isinstance(mode, SearchMode)
    records = mark_unmeasured(records, windows)
    _, evaluation = evaluate(
        windows,
        records,
        mode.search,
        scenario.slo,
        scenario.capacity,
        peak_rate,
        verify_setup,
        scenario.seed,
    )
    # The evaluation's parts come from loadgen.evaluate as dataclasses: written out as JSON data,
    # rounded and validated here, once.
    knee, capacity, replicas = (
        round_floats(json_data(part)) for part in (evaluation.knee, evaluation.capacity, evaluation.replicas)
    )
    operating = _operating_windows(windows, None if capacity is None else Capacity.model_validate(capacity))
    server = facts.server
    if server_metrics is not None and operating:
        # Trials of one level are apart in time: the first trial's window stands for the level.
        server = {**server, "metrics": server_metrics(operating[0].start_s, operating[0].end_s)}
    facts = replace(
        facts,
        server=server,
        run_error=facts.run_error or (None if windows else "the search ran no load level"),
    )
    judging = Judging.of(scenario)
    operating_windows = [window.phase_window() for window in operating]
    late = MemoryLateView(
        records,
        operating_windows,
        judging.max_lag_p99_ms,
        measured_s=sum(window.end_s - window.start_s for window in windows),
    )
    report = build_report(
        facts,
        judging,
        records,
        operating_windows,
        late,
        more_answers=lambda variant: curve_answers(windows, records, mode.search, scenario, variant),
    )
    report.phases = _phases(records, windows)
    if operating and operating[0].target_rate is None:
        report.metrics.target_rate = None  # a closed-loop level has no target rate
    report.knee = None if knee is None else Knee.model_validate(knee)
    report.capacity = None if capacity is None else Capacity.model_validate(capacity)
    report.replicas = None if replicas is None else Replicas.model_validate(replicas)
    report.verdict, report.reason = _verdict(report, mode.over)
    report.operating_point = (
        None if not operating else OperatingPoint(level=operating[0].level, over=operating[0].over)
    )
    return report

"""Drills (issue 23) in every report: the gate (a failed drill fails the run), report.md's table,
junit.xml's cases, report.html's sections and the environment comparison. The drills are the
hand-built evaluations of tests/unit/drill_fixtures.py, in the contract's exact shape."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pydantic
import pytest

from loadgen.environments.comparison_text import render_markdown as render_comparison
from loadgen.environments.recommend import EnvironmentRun, compare_environments
from loadgen.evaluate.curve import Over
from loadgen.evaluate.level_results import LevelWindow
from loadgen.evaluate.plan import Verification, evaluate
from loadgen.report import drill_facts, search_report
from loadgen.report.build import exit_code
from loadgen.report.evaluation_markdown import evaluation_lines
from loadgen.report.html.drill_section import fleet_steps
from loadgen.report.html.inputs import RunInputs
from loadgen.report.html.run_report import render_run_html
from loadgen.report.json_report import report_data
from loadgen.report.junit_report import render_junit
from loadgen.report.model import Report
from loadgen.report.model.drills import Drill
from loadgen.report.model.evaluation import Verified
from tests.unit.drill_fixtures import kill_drill, rolling_restart_drill, scale_up_drill, verified_with
from tests.unit.report_samples import with_parts
from tests.unit.test_environments import BASIS, by_name
from tests.unit.test_environments import search_report as environment_report
from tests.unit.test_html_report import _search_report
from tests.unit.test_search_report import _report, _with_verification


def passing_kill() -> dict[str, Any]:
    """The kill drill within its budget: over the SLO only before the balancer noticed."""
    drill = kill_drill()
    drill.update(passed=True, reason=None, violation_s_after_detection=0.0, max_violation_s=1.0)
    return drill


def _search_run(monkeypatch: pytest.MonkeyPatch, drills: list[dict[str, Any]]) -> Report:
    """A real search report whose held plan of 2 replicas ran these drills (the evaluation adds
    them to `replicas.verified`, as loadgen.evaluate.drill_verdict will)."""

    def with_drills(*args: Any, **kwargs: Any) -> Any:
        results, evaluation = evaluate(*args, **kwargs)
        plan = evaluation.replicas
        assert plan is not None and isinstance(plan.verified, Verification)
        # The fixtures are the contract's JSON, which the evaluation writes out as it is.
        fixtures: Any = tuple(drills)
        verified = replace(
            plan.verified, drills=fixtures, drills_passed=all(drill["passed"] for drill in drills)
        )
        return results, replace(evaluation, replicas=replace(plan, verified=verified))

    monkeypatch.setattr(search_report, "evaluate", with_drills)
    records, windows = _with_verification(0.05, 0.5)
    return _report(windows, records)


def test_the_fixtures_follow_the_report_model_which_forbids_unknown_keys() -> None:
    verified = verified_with([kill_drill(), rolling_restart_drill(), scale_up_drill()])
    model = Verified.model_validate(verified)
    assert model.drills is not None and [d.name for d in model.drills] == [
        "kill",
        "rolling_restart",
        "scale_up",
    ]
    assert model.drills[0].lost is not None and model.drills[0].lost.total == 6
    assert model.drills[0].per_replica == {"1": 230, "2": 228, "3": 142}
    extra = verified_with([kill_drill() | {"surprise": 1}])
    with pytest.raises(pydantic.ValidationError, match="surprise"):
        Verified.model_validate(extra)
    missing = kill_drill()
    del missing["time_to_detect_s"]
    with pytest.raises(pydantic.ValidationError, match="time_to_detect_s"):
        Verified.model_validate(verified_with([missing]))


def test_a_failed_drill_fails_the_run_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    report = _search_run(monkeypatch, [kill_drill(), rolling_restart_drill()])
    assert report.verdict == "fail" and exit_code(report) == 1
    assert report.reason.startswith("drill kill: 3 s over the SLO after detection (max 0 s); capacity at SLO")
    assert "rolling_restart" not in report.reason  # the passing one is not a reason to fail


def test_each_failed_drill_gives_its_own_line(monkeypatch: pytest.MonkeyPatch) -> None:
    rolling = rolling_restart_drill()
    rolling.update(passed=False, reason="drill rolling_restart: 2 requests unaccounted for", unaccounted=2)
    report = _search_run(monkeypatch, [kill_drill(), rolling])
    lines = report.reason.split("; ")
    assert lines[:2] == [
        "drill kill: 3 s over the SLO after detection (max 0 s)",
        "drill rolling_restart: 2 requests unaccounted for",
    ]


def test_passing_drills_join_the_summary_line(monkeypatch: pytest.MonkeyPatch) -> None:
    report = _search_run(monkeypatch, [passing_kill(), rolling_restart_drill()])
    assert report.verdict == "pass" and exit_code(report) == 0
    assert report.reason.endswith("verified; one fewer failed; drills: kill passed, rolling_restart passed")


def test_a_failed_drill_without_a_reason_is_described_from_its_numbers() -> None:
    drill = Drill.model_validate(kill_drill() | {"reason": None})
    assert drill_facts.failure_line(drill) == "drill kill: 3 s over the SLO after detection (max 0 s)"
    assert drill_facts.failure_words(drill) == "kill: 3 s over the SLO after detection"
    rolling = Drill.model_validate(
        rolling_restart_drill() | {"passed": False, "reason": None, "unaccounted": 1}
    )
    assert drill_facts.failure_line(rolling) == "drill rolling_restart: 1 request unaccounted for"
    unfinished = Drill.model_validate(
        rolling_restart_drill() | {"passed": False, "unfinished": "restarted 2 of 3 replicas"}
    )
    assert drill_facts.failure_words(unfinished) == "rolling_restart: unfinished (restarted 2 of 3 replicas)"


def _with_drills(drills: list[dict[str, Any]]) -> Report:
    """The html test's search report (a plan of 3 replicas) with these drills."""
    report = _search_report()
    plan = report_data(report)["replicas"]
    plan.update(
        count=3, formula="ceil(60 / (40 × 0.8)) + 1 = 3", redundancy=1, verified=verified_with(drills)
    )
    report = with_parts(report, replicas=plan)
    failed = drill_facts.failed_drills(drill_facts.drills_of(report))
    if failed:
        report = with_parts(
            report, verdict="fail", reason="; ".join(drill_facts.failure_line(d) for d in failed)
        )
    return report


def _markdown(report: Report) -> str:
    """report.md's evaluator sections (the rest of the page reads keys this report lacks)."""
    return "\n".join(evaluation_lines(report))


def test_report_md_has_a_row_per_drill_and_each_failed_drills_reason() -> None:
    markdown = _markdown(_with_drills([kill_drill(), rolling_restart_drill()]))
    drills = markdown[markdown.index("## Drills") :]
    assert "1 of 2 drills passed" in drills
    assert (
        "| kill | kill | **NO** | 3 / 4 / max 0 | 0.5 s | 4 s | 6 (4 in flight of 4 at the kill, " in drills
    )
    assert "2 before detection) | 85 → 412 ms | 2.1 s | held | 0 |" in drills
    assert "| rolling_restart | rolling_restart | yes | 1 / 1 / max 2 | – | 6 s | 0 | 85 → 121 ms " in drills
    assert "| 2.2, 2, 2.3 s | held | 0 |" in drills
    assert "decision → serving" not in drills  # no scale-up ran
    assert "- drill kill: 3 s over the SLO after detection (max 0 s)" in drills
    assert markdown.index("## Replica plan") < markdown.index("## Drills")


def test_report_md_shows_a_scale_ups_decision_to_serving() -> None:
    markdown = _markdown(_with_drills([passing_kill(), scale_up_drill()]))
    rows = [line for line in markdown.splitlines() if line.startswith("| scale_up |")]
    assert rows and rows[0].endswith("| – | 0 | 3.4 s |")  # survivors –, unaccounted 0, decision → serving
    assert "scale-up decision → serving |" in markdown and "Failed:" not in markdown


def test_junit_has_a_case_per_drill_failed_with_its_reason() -> None:
    junit = render_junit(_with_drills([kill_drill(), rolling_restart_drill()]))
    kill = re.search(r'<testcase [^>]*name="drill kill"[^>]*>\s*<failure message="([^"]+)"', junit)
    assert kill and kill.group(1) == "drill kill: 3 s over the SLO after detection (max 0 s)"
    rolling = re.search(r'<testcase [^>]*name="drill rolling_restart"[^>]*>\s*<system-out>([^<]+)<', junit)
    assert (
        rolling
        and "1 / 1 / max 2 s over the SLO" in rolling.group(1)
        and "recovered in 6 s" in rolling.group(1)
    )
    # 1 SLO + capacity + the plan + 2 drills; the failed drill is the one failure.
    assert 'tests="5" failures="1"' in junit


def _page(drills: list[dict[str, Any]]) -> str:
    levels = [
        LevelWindow(i, lv, Over.CONCURRENCY, 1.0 + 4 * i, 4.0 + 4 * i, None)
        for i, lv in enumerate((4, 8, 16))
    ]
    return render_run_html(_with_drills(drills), RunInputs(records=[], levels=levels, over=Over.CONCURRENCY))


def _section(page: str, section_id: str) -> str:
    start = page.index(f'<section id="{section_id}">')
    return page[start : page.index("</section>", start)]


def test_report_html_has_a_section_per_drill_with_its_charts() -> None:
    page = _page([kill_drill(), rolling_restart_drill()])
    assert re.findall(r'<section id="(drill-[^"]+)">', page) == ["drill-kill", "drill-rolling_restart"]
    kill = _section(page, "drill-kill")
    assert "<h2>Drill kill: kill one replica — FAILED</h2>" in kill
    charts = re.findall(r'data-chart="([^"]+)"', kill)
    assert charts == ["drill-kill-fleet", "drill-kill-per-replica", "drill-kill-ttft", "drill-kill-errors"]
    # The four windows over the SLO (50–53 s) are shaded on the TTFT and errors charts.
    for chart in ("drill-kill-ttft", "drill-kill-errors", "drill-kill-fleet"):
        figure = kill[kill.index(f'data-chart="{chart}"') :].split("</figure>")[0]
        assert len(re.findall(r'id="span-violated-\d+"', figure)) == 4, chart
    ttft = kill[kill.index('data-chart="drill-kill-ttft"') :].split("</figure>")[0]
    assert 'id="slo-ttft-p95"' in ttft and 'id="marker-disruption-start"' in ttft
    bars = kill[kill.index('data-chart="drill-kill-per-replica"') :].split("</figure>")[0]
    assert re.findall(r'id="data-bar-([^"]+)"', bars) == ["replica-1", "replica-2", "replica-3"]
    assert ">142<" in bars  # the killed slot's count, written on its bar
    # The cards: the verdict with its reason, the numbers.
    assert "drill kill: 3 s over the SLO after detection (max 0 s)" in kill
    for text in ("0.5 s", "4 s in all; budget 0 s", "85 → 412 ms", "4 in flight of 4 at the kill"):
        assert text in kill, text
    rolling = _section(page, "drill-rolling_restart")
    assert "time to detect" not in rolling.lower()  # a rollout takes replicas out on purpose
    assert "2.2, 2, 2.3 s" in rolling


def test_report_html_lists_the_drills_under_the_verification() -> None:
    page = _page([kill_drill(), rolling_restart_drill()])
    plan = _section(page, "plan")
    assert '<tr class="fail"><td>kill</td><td>kill</td><td>3 / 4 / max 0</td>' in plan
    assert '<tr class="pass"><td>rolling_restart</td>' in plan
    decision = _section(page, "decision")
    verification = decision[decision.index("verification") :]
    assert "drills: kill FAILED, rolling_restart passed" in verification
    assert "3 replicas held, a drill FAILED" in verification
    assert '<div class="card fail big"><div class="label">verification</div>' in decision


def test_the_fleet_steps_run_from_the_drill_start_to_its_end() -> None:
    x, counts = fleet_steps(Drill.model_validate(kill_drill()))
    assert x.tolist() == [40.0, 50.0, 50.5, 51.0, 53.1, 53.9, 60.0]
    assert counts["up"].tolist() == [3, 2, 2, 3, 3, 3, 3]
    assert counts["ready"].tolist() == [3, 2, 2, 2, 3, 3, 3]
    assert counts["in_rotation"].tolist() == [3, 3, 2, 2, 2, 3, 3]


def test_an_environment_that_fails_a_drill_is_not_recommended() -> None:
    failing = environment_report(80.0, verified=verified_with([kill_drill(), rolling_restart_drill()]))
    passing = environment_report(40.0, verified=verified_with([passing_kill(), rolling_restart_drill()]))
    runs = [
        EnvironmentRun("cheap", failing, cost_per_replica_hour=1.0),
        EnvironmentRun("sturdy", passing, cost_per_replica_hour=1.0),
    ]
    comparison = compare_environments(runs, BASIS)
    rows = by_name(comparison)
    # Without the drill, cheap (2 replicas) would beat sturdy (3).
    assert comparison.to_dict()["recommendation"]["environment"] == "sturdy"
    assert rows["cheap"]["status"] == "fails"
    assert rows["cheap"]["lost_because"] == "fails a drill (kill: 3 s over the SLO after detection)"
    assert "- **cheap**: fails a drill (kill: 3 s over the SLO after detection)" in render_comparison(
        comparison
    )


def test_an_environment_failing_two_drills_names_both() -> None:
    rolling = rolling_restart_drill() | {"passed": False, "reason": "drill rolling_restart: 3 s over"}
    rolling.update(violation_s=3.0, violation_s_after_detection=3.0)
    verified = verified_with([kill_drill(), rolling])  # the plan held at the peak; two drills failed
    comparison = compare_environments(
        [EnvironmentRun("a", environment_report(80.0, verified=verified))], BASIS
    )
    assert by_name(comparison)["a"]["lost_because"] == (
        "fails 2 drills (kill: 3 s over the SLO after detection; rolling_restart: 3 s over the SLO)"
    )
    assert comparison.verdict == "none"

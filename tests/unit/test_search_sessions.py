"""A rate search over multi-turn sessions: levels whose arrivals open sessions, with a tail after
the window; each level's achieved sessions/s; capacity and the replica plan in sessions/s; the
scenario's checks on what the levels and the peak count; the reports' words."""

from __future__ import annotations

import math

import numpy as np
import pytest

from loadgen.collect.records import RequestRecord
from loadgen.evaluate.capacity import capacity_at_slo
from loadgen.evaluate.curve import LevelResult, Over
from loadgen.evaluate.knee import find_knee
from loadgen.evaluate.level_results import LevelWindow, level_result
from loadgen.evaluate.parts import json_data
from loadgen.evaluate.plan import NoPlan, ReplicaPlan, plan_on_capacity
from loadgen.evaluate.replicas import CapacitySpec
from loadgen.evaluate.slo import SLOSpec
from loadgen.report.evaluation_markdown import evaluation_lines
from loadgen.report.html.search_section import decision_cards, level_over
from loadgen.report.model import Report
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.model import Scenario
from loadgen.traffic.level_requests import rate_level_requests
from loadgen.traffic.schedule import PlannedRequest, SessionStart
from loadgen.traffic.session_book import SessionBook
from loadgen.traffic.session_policy import SessionPolicy
from tests.cli_helpers import ROOT
from tests.unit.report_samples import sample_report, with_parts

SESSIONS = "sessions: {turns: {kind: fixed, value: 3}, think_time: {kind: fixed, value: 500ms}}"
SEARCH = f"""
name: s
seed: 7
server: {{kind: simulated}}
workload:
  api: chat
  prompt_tokens: {{kind: fixed, value: 8}}
  output_tokens: {{kind: fixed, value: 4}}
  {SESSIONS}
search: {{over: OVER, levels: [1, 2], level_duration: 6s, level_warmup: 2s}}
CAPACITY
"""


def _scenario(over: str = "rate", capacity: str = "") -> Scenario:
    return parse_scenario(SEARCH.replace("OVER", over).replace("CAPACITY", capacity), "s.yaml")


def _errors(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "s.yaml")
    return [str(issue) for issue in caught.value.issues]


def _level(scenario: Scenario, seed: int | None, tail_s: float) -> list[PlannedRequest]:
    return rate_level_requests(
        rate=10,
        duration_s=6,
        warmup_s=2,
        arrival="poisson",
        offset_s=100.0,
        phase=3,
        first_id=500,
        workload=scenario.workload,
        max_concurrency=64,
        rng=np.random.default_rng([7, 3]),
        session_seed=seed,
        tail_s=tail_s,
    )


def test_a_session_level_opens_a_session_per_arrival_and_runs_a_warm_up_tail() -> None:
    scenario = _scenario()
    plain = _level(scenario, None, 0.0)
    level = _level(scenario, 7, 2.0)
    assert all(planned.session == SessionStart(seed=7) for planned in level)
    assert all(planned.session is None for planned in plain)
    # The tail is drawn after the rest: the level up to its end is the level without it.
    head = [planned for planned in level if planned.scheduled_s < 106.0]
    assert [(p.id, p.scheduled_s, p.warmup) for p in head] == [(p.id, p.scheduled_s, p.warmup) for p in plain]
    tail = level[len(head) :]
    assert len(tail) == 20  # 10 sessions/s for 2 s, exactly (as the main schedule's parts)
    assert all(p.warmup and 106.0 <= p.scheduled_s < 108.0 for p in tail)
    assert sum(not p.warmup for p in level) == 40  # the measured window [102, 106)
    assert [p.id for p in level] == list(range(500, 500 + len(level)))


def test_a_session_in_a_level_is_cut_at_the_schedules_end_whatever_its_linger() -> None:
    scenario = _scenario()  # linger defaults to 10 min; a level's book is given 0
    first = _level(scenario, 7, 2.0)[-1]
    book = SessionBook(SessionPolicy.of(scenario.workload, linger_s=0.0), end_s=108.0)
    book.messages(first, scenario.workload)
    done_s = 107.8  # the next turn would be due at 108.3
    record = RequestRecord(id=first.id, phase=3, scheduled_s=first.scheduled_s, done_s=done_s, status="ok")
    assert book.answered(first, record, "a b") is None
    assert book.counts.cut == 1 and book.open == 0
    kept = SessionBook(SessionPolicy.of(scenario.workload), end_s=108.0)
    kept.messages(first, scenario.workload)
    assert kept.answered(first, record, "a b") is not None  # its class's linger: 10 min


def _session_records(sessions_per_s: float, start: float, end: float) -> list[RequestRecord]:
    """Sessions of 3 turns every 1/rate s from `start` (turn 1 there, then 0.7 s apart)."""
    records: list[RequestRecord] = []
    count = round((end - start) * sessions_per_s)
    for k in range(count):
        t0 = start + k / sessions_per_s
        for turn in (1, 2, 3):
            due = t0 + 0.7 * (turn - 1)
            records.append(
                RequestRecord(
                    id=len(records),
                    phase=0,
                    scheduled_s=due,
                    sent_s=due,
                    first_token_s=due + 0.05,
                    done_s=due + 0.2,
                    output_tokens=4,
                    session=k,
                    turn=turn,
                    session_turns=3,
                    session_start_s=t0,
                )
            )
    return records


def test_a_level_result_gives_the_sessions_started_in_its_window_per_second() -> None:
    window = LevelWindow(0, 5.0, Over.RATE, 2.0, 8.0, 5.0)
    records = _session_records(5.0, 2.0, 8.0)
    result, _ = level_result([window], records, SLOSpec(), max_drift=1.0)
    assert result.sessions_per_s == pytest.approx(5.0)
    # Completions inside [2, 8) of sessions at 2.0, 2.2, … 7.8: turn 1 (done 0.2 s after the
    # session's start) of 29, turn 2 (0.9 s) of 26, turn 3 (1.6 s) of 22. In a real level the
    # sessions of its warm-up make up for those finishing after it (the e2e test).
    assert result.throughput_rps == pytest.approx((29 + 26 + 22) / 6)
    plain = [RequestRecord(id=r.id, phase=0, scheduled_s=r.scheduled_s, done_s=r.done_s) for r in records]
    assert level_result([window], plain, SLOSpec(), max_drift=1.0)[0].sessions_per_s is None


def _levels(*points: tuple[float, float, bool]) -> list[LevelResult]:
    return [
        LevelResult(level, 3 * level, 30 * level, slo_passed=passed, sessions_per_s=sessions)
        for level, sessions, passed in points
    ]


def test_capacity_and_the_plan_count_sessions_when_the_levels_do() -> None:
    capacity = capacity_at_slo(_levels((4, 4.0, True), (8, 7.9, True), (16, 15.8, False)))
    assert capacity is not None
    assert (capacity.level, capacity.sessions_per_s, capacity.rate_rps) == (8, 7.9, 24)
    spec = CapacitySpec(peak_rate=18, target_utilization=0.8)
    plan = plan_on_capacity(capacity, spec, 18.0)
    assert isinstance(plan, ReplicaPlan) and plan.sized.unit == "sessions/s"
    assert plan.sized.count == math.ceil(18 / (7.9 * 0.8)) == 3  # in requests/s it would be 1
    plain = capacity_at_slo([LevelResult(8, 24, 240)])
    plain_plan = plan_on_capacity(plain, spec, 18.0)
    assert plain is not None and plain.sessions_per_s is None
    assert isinstance(plain_plan, ReplicaPlan)
    assert (plain_plan.sized.unit, plain_plan.sized.count) == ("req/s", 1)
    none_held = capacity_at_slo(_levels((4, 4.0, False)))
    assert none_held is not None and none_held.sessions_per_s == 0.0
    failed = plan_on_capacity(none_held, spec, 18.0)
    assert isinstance(failed, NoPlan) and failed.count is None and failed.unit == "sessions/s"


def _report() -> Report:
    levels = _levels((4, 4.0, True), (8, 7.9, True), (16, 15.8, False))
    capacity = capacity_at_slo(levels)
    plan = plan_on_capacity(capacity, CapacitySpec(peak_rate=18, target_utilization=0.8), 18.0)
    return sample_report(
        knee=json_data(find_knee(levels, Over.RATE)),
        capacity=json_data(capacity),
        replicas=json_data(plan),
        operating_point={"level": 8, "over": "rate"},
    )


def test_the_reports_say_sessions_per_second() -> None:
    report = _report()
    text = "\n".join(evaluation_lines(report))
    assert "7.9 sessions/s (24 req/s)" in text
    assert "a peak of 18 sessions/s" in text and "| rate (sessions/s) | sessions/s | req/s |" in text
    assert level_over(report) == "sessions"
    html = decision_cards(report)
    assert "7.9 sessions/s" in html and "24 req/s" in html
    assert report.capacity is not None
    report = with_parts(report, capacity=report.capacity.model_dump() | {"sessions_per_s": None})
    assert level_over(report) == "rate" and "7.9 sessions/s" not in "\n".join(evaluation_lines(report))


def test_sessions_are_searched_over_rate_or_users_with_a_warm_up() -> None:
    assert _scenario().search is not None and _scenario("concurrency").search is not None
    errors = _errors(
        SEARCH.replace("OVER", "rate").replace("level_warmup: 2s", "level_warmup: 0s").replace("CAPACITY", "")
    )
    assert any(e.startswith("s.yaml:10:") and "a session long" in e for e in errors), errors


def test_the_peak_from_a_trace_counts_what_the_levels_count() -> None:
    conversation = ROOT / "scenarios" / "traces" / "conversation_sample.jsonl"
    plain = ROOT / "scenarios" / "traces" / "sample.jsonl"
    peak = "capacity: {{peak_rate: {{from_trace: {{path: {path}, format: {format}, window: 10s}}}}}}"
    scenario = _scenario(capacity=peak.format(path=conversation, format="conversation"))
    assert scenario.capacity is not None
    errors = _errors(
        SEARCH.replace("OVER", "rate").replace("CAPACITY", peak.format(path=plain, format="jsonl"))
    )
    assert any("the levels and the peak are sessions/s" in e for e in errors), errors
    without = SEARCH.replace(f"  {SESSIONS}\n", "").replace("OVER", "rate")
    errors = _errors(without.replace("CAPACITY", peak.format(path=conversation, format="conversation")))
    assert any("peak is in sessions/s" in e for e in errors), errors

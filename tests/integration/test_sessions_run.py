"""`workload.sessions` through the real CLI against the simulated server: every session's turns go
in order, each `think_time` after the previous answer ended, with the whole history (the server's
own count of the prompt's words grows by exactly the earlier prompts and answers), and TTFT rises
with the turn by the server's configured prefill cost per history word."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from loadgen.scenario.follow_ups import later_turn_id
from tests.cli_helpers import CliRun, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timing]

PROMPT, OUTPUT, TURNS, THINK_S, PREFILL_S, TTFT_S = 32, 16, 3, 0.2, 0.0005, 0.02
SESSIONS = 5

SCENARIO = f"""name: sessions
seed: 3
server: {{kind: simulated, ttft: {int(TTFT_S * 1000)}ms, itl: 2ms, slots: 64, prefill_per_token: {PREFILL_S}}}
workload:
  api: chat
  prompt_tokens: {{kind: fixed, value: {PROMPT}}}
  output_tokens: {{kind: fixed, value: {OUTPUT}}}
  sessions:
    turns: {{kind: fixed, value: {TURNS}}}
    think_time: {{kind: fixed, value: {int(THINK_S * 1000)}ms}}
traffic: [{{kind: constant, rate: 10, duration: 500ms}}]
report: {{formats: [json, markdown]}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    done = run_cli(tmp_path_factory.mktemp("sessions"), SCENARIO, timeout=90)
    assert done.code == 0, done.stderr
    return done


def _sessions(records: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    by_session: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_session[record["session"]].append(record)
    return {session: sorted(turns, key=lambda r: r["turn"]) for session, turns in by_session.items()}


def test_every_turn_follows_its_answer_by_the_think_time(run: CliRun) -> None:
    records = run.records()
    assert len(records) == SESSIONS * TURNS
    assert all(record["status"] == "ok" for record in records)
    sessions = _sessions(records)
    assert len(sessions) == SESSIONS
    for session, turns in sessions.items():
        assert [r["turn"] for r in turns] == [1, 2, 3]
        assert [r["id"] for r in turns] == [session, later_turn_id(session, 2), later_turn_id(session, 3)]
        assert all(r["session_turns"] == TURNS for r in turns)
        assert all(r["session_start_s"] == turns[0]["scheduled_s"] for r in turns)
        for before, after in pairwise(turns):
            assert after["scheduled_s"] - before["done_s"] == pytest.approx(THINK_S, abs=1e-3)
            assert after["sent_s"] >= after["scheduled_s"]
            assert after["lag_ms"] < 20


def test_the_history_holds_every_prompt_and_the_servers_answers(run: CliRun) -> None:
    # The server counts the words of every message it got: turn k's prompt is the k new user
    # messages and the k - 1 answers (OUTPUT words each, as the server generated them).
    for turns in _sessions(run.records()).values():
        assert [r["prompt_tokens"] for r in turns] == [k * PROMPT + (k - 1) * OUTPUT for k in (1, 2, 3)]
        assert all(r["output_tokens"] == OUTPUT for r in turns)


def test_ttft_rises_with_the_turn_by_the_prefill_of_the_added_history(run: CliRun) -> None:
    # The server's TTFT is its ttft plus PREFILL_S per prompt word (its prefix cache is off). Per
    # turn, the least over sessions: a late wake-up only ever adds, and a median of five once took
    # 4 ms of it into one turn and not the next (a rise of 20.8 ms for 24).
    sessions = _sessions(run.records()).values()
    ttft = [min(s[k]["first_token_s"] - s[k]["sent_s"] for s in sessions) for k in range(TURNS)]
    truth = [TTFT_S + PREFILL_S * (k * PROMPT + (k - 1) * OUTPUT) for k in (1, 2, 3)]
    for measured, configured in zip(ttft, truth, strict=True):
        assert configured <= measured <= configured + 6e-3
    added_s = (PROMPT + OUTPUT) * PREFILL_S  # the history words each turn adds, times their prefill
    for before, after in pairwise(ttft):
        assert after - before == pytest.approx(added_s, abs=3e-3)


def test_the_report_gives_per_turn_latency_and_session_counts(run: CliRun) -> None:
    metrics = run.report["metrics"]
    sessions = metrics["sessions"]
    assert (sessions["started"], sessions["completed"], sessions["ended"], sessions["cut"]) == (
        SESSIONS,
        SESSIONS,
        0,
        0,
    )
    assert sessions["turns_completed"] == {str(TURNS): SESSIONS}
    assert sessions["turns_completed_mean"] == TURNS
    assert metrics["requests"] == SESSIONS * TURNS
    assert metrics["target_rate"] == pytest.approx(10)  # sessions/s, and so is achieved_rate
    assert metrics["achieved_rate"] == pytest.approx(10, rel=0.05)
    records = _sessions(run.records()).values()
    longest = max(turns[-1]["done_s"] - turns[0]["scheduled_s"] for turns in records)
    assert sessions["session_e2e_ms"]["max"] == pytest.approx(longest * 1000, abs=1e-3)
    per_turn = sessions["per_turn"]
    assert [(t["turn"], t["requests"]) for t in per_turn] == [(k, SESSIONS) for k in (1, 2, 3)]
    p50 = [t["ttft_ms"]["p50"] for t in per_turn]
    assert p50[0] < p50[1] < p50[2]
    markdown = (run.run_dir / "report.md").read_text()
    assert "### Sessions" in markdown and "| 3 | 5 |" in markdown


def test_turns_due_past_the_linger_bound_are_cut_and_not_waited_for(tmp_path: Path) -> None:
    # Think 3 s, linger 100 ms: no turn 2 is due before the bound, so the run ends with its turn 1s.
    scenario = SCENARIO.replace(f"{int(THINK_S * 1000)}ms}}", "3s}\n    linger: 100ms").replace(
        "duration: 500ms", "duration: 300ms"
    )
    done = run_cli(tmp_path, scenario, timeout=60)
    assert done.code == 0, done.stderr
    records = done.records()
    assert len(records) == 3 and {r["turn"] for r in records} == {1}
    sessions = done.report["metrics"]["sessions"]
    assert (sessions["started"], sessions["completed"], sessions["cut"]) == (3, 0, 3)
    assert sessions["turns_completed"] == {"1": 3}
    assert done.report["duration_s"] < 3.0  # the run (server start included) never waited a think time

"""Multi-turn sessions spread over distributed workers (`--workers 2`): each worker is given its
share of turn 1s and makes their later turns itself, so every session stays on one worker and
`client.workers` counts what each was given (turn 1s) apart from what came back (every turn)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import run_cli

pytestmark = pytest.mark.slow

SCENARIO = """
name: worker-sessions
seed: 5
server: {kind: simulated, ttft: 20ms, itl: 2ms, slots: 64}
workload:
  api: chat
  prompt_tokens: {kind: fixed, value: 16}
  output_tokens: {kind: fixed, value: 8}
  sessions: {turns: {kind: fixed, value: 3}, think_time: {kind: fixed, value: 300ms}}
traffic:
  - {kind: poisson, rate: 10, duration: 4s, max_concurrency: 64}
# Beside another test (the slow tier): a hiccup of the neighbour's is no failure of what is tested here.
client: {max_schedule_lag_p99: 200ms}
report: {dir: runs, formats: [json]}
"""
SESSIONS = 40  # 10 sessions/s × 4 s, exact


def test_two_workers_run_whole_sessions_and_count_turns_apart_from_turn_ones(tmp_path: Path) -> None:
    run = run_cli(tmp_path, SCENARIO, "--workers", "2", timeout=240)
    assert run.code == 0, run.stderr
    records = run.records()
    workers = run.report["client"]["workers"]
    assert workers["lost"] == [] and sum(workers["requests"]) == SESSIONS
    assert sum(workers["received"]) == len(records) == 3 * SESSIONS  # every turn came back
    by_session: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_session.setdefault(int(record["session"]), []).append(record)
    assert len(by_session) == SESSIONS
    for turns in by_session.values():
        turns.sort(key=lambda record: int(record["turn"]))
        assert [record["turn"] for record in turns] == [1, 2, 3]
        for before, after in itertools.pairwise(turns):
            # Made by the worker that got the answer: due think time after it, on the run's clock.
            assert float(after["scheduled_s"]) == pytest.approx(float(before["done_s"]) + 0.3, abs=0.002)
    sessions = run.report["metrics"]["sessions"]
    assert (sessions["started"], sessions["completed"]) == (SESSIONS, SESSIONS)
    assert run.report["metrics"]["achieved_rate"] == pytest.approx(10, rel=0.05)

"""scenarios/search-sessions.yaml end to end through the real CLI: a rate search whose arrivals are
multi-turn sessions, against the simulated server it ships with (8 slots, 0.2 s a request: at most
40 req/s; here with a prefix cache that costs no time). Every session has 3 turns, so a level of
L sessions/s asks for 3·L req/s: the levels are cut to 4 sessions/s (12 req/s, well within) and 16
(48 req/s, past the 40 the server can serve), and the plan is verified at a peak of 6 sessions/s."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_helpers import ROOT, CliRun, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timing]

SCENARIO = ROOT / "scenarios" / "search-sessions.yaml"
TURNS = 3
SERVER_MAX_RPS = 8 / 0.2  # slots / (ttft 50 ms + 15 × itl 10 ms)


def _run(tmp_path: Path) -> CliRun:
    data = yaml.safe_load(SCENARIO.read_text())
    # One trial a level (`precision: null`) and the plan on the point estimate: the sessions are
    # under test here, not the precision (tests/e2e/test_search.py has it).
    data["search"].update(levels=[4, 16], level_duration="4s", level_warmup="1.5s", precision=None)
    data["capacity"].update(peak_rate=6, plan_on="point")
    data["verify"] = {"duration": "4s", "warmup": "1.5s"}
    # A prefix cache (no prefill cost: the timing is as without): a turn finds its history cached
    # only on the replica that served the session's earlier turns.
    data["server"]["prefix_cache_blocks"] = 4096
    path = tmp_path / "search-sessions.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return run_cli(tmp_path, path, timeout=300, html=False)


def _levels(report: dict[str, Any]) -> dict[float, dict[str, Any]]:
    return {level["level"]: level for level in report["knee"]["levels"]}


def test_a_rate_search_over_sessions_gives_capacity_and_replicas_in_sessions(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.code == 0, run.stderr
    report = run.report
    levels = _levels(report)
    # Each level's arrivals are sessions: its achieved sessions/s is the level (exact counts per
    # window), and it served three requests per session while the server kept up…
    assert levels[4]["sessions_per_s"] == pytest.approx(4, abs=0.01)
    assert levels[4]["throughput_rps"] == pytest.approx(4 * TURNS, rel=0.15)
    assert levels[4]["slo_passed"]
    # …and no more than the server's 40 req/s once past it (the sessions still arrive at 16/s).
    assert levels[16]["sessions_per_s"] == pytest.approx(16, abs=0.01)
    assert levels[16]["throughput_rps"] == pytest.approx(SERVER_MAX_RPS, rel=0.1)
    assert not levels[16]["slo_passed"]
    capacity = report["capacity"]
    assert capacity["level"] == 4 and capacity["sessions_per_s"] == pytest.approx(4, abs=0.01)
    assert capacity["rate_rps"] == levels[4]["throughput_rps"]
    # The plan divides the peak (sessions/s) by the capacity in sessions/s: ceil(6 / (4 × 0.8)) = 2.
    replicas = report["replicas"]
    assert replicas["unit"] == "sessions/s" and replicas["count"] == 2
    assert replicas["capacity_rps"] == capacity["sessions_per_s"]
    at_plan = replicas["verified"]["at_plan"]
    assert at_plan["passed"] and at_plan["sessions_per_s"] == pytest.approx(6, abs=0.01)
    assert at_plan["achieved_rate"] == pytest.approx(6 * TURNS, rel=0.15)
    assert "capacity at SLO 4 sessions/s" in report["reason"]
    # The operating point's sessions: those started in its window, every turn answered (the
    # tail after the window kept them under load until their last turn).
    sessions = report["metrics"]["sessions"]
    assert sessions["started"] == 4 * (4 - 1.5) and sessions["completed"] == sessions["started"]
    assert [turn["requests"] for turn in sessions["per_turn"]] == [10, 10, 10]
    records = run.records()
    later = [r for r in records if r["phase"] == 0 and (r.get("turn") or 0) > 1]
    assert later and all(r["scheduled_s"] >= r["session_start_s"] for r in later)
    assert "sessions/s" in (run.run_dir / "report.md").read_text(encoding="utf-8")
    # The verification spreads sessions, not turns, round robin: every later turn went to the
    # replica holding its history (request ids alone would send turn 2 elsewhere half the time).
    verify = {phase["index"] for phase in report["phases"] if phase["role"] == "verify"}
    turns = [r for r in records if r["phase"] in verify and (r.get("turn") or 0) > 1 and r["status"] == "ok"]
    assert len(turns) > 20
    assert all((r.get("cached_tokens") or 0) >= 32 for r in turns), [r.get("cached_tokens") for r in turns]


def test_a_concurrency_search_over_sessions_runs_chat_users_who_think(tmp_path: Path) -> None:
    # N closed-loop users, each holding one conversation at a time: 3 turns of 0.2 s with 0.5 s
    # of thinking between them, a new session as soon as one ends. A user's session takes 1.6 s.
    data = yaml.safe_load(SCENARIO.read_text())
    data["search"] = {
        "over": "concurrency",
        "levels": [2, 32],
        "level_duration": "6s",
        "level_warmup": "2s",
        "precision": None,  # one trial a level: the sessions are under test here
    }
    del data["capacity"], data["verify"]
    path = tmp_path / "users.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    run = run_cli(tmp_path, path, timeout=300, html=False)
    assert run.code == 0, run.stderr
    levels = _levels(run.report)
    # 2 users: 2 / 1.6 s = 1.25 sessions/s, 3.75 req/s, the server idle enough not to queue.
    assert levels[2]["sessions_per_s"] == pytest.approx(2 / 1.6, rel=0.2)
    assert levels[2]["throughput_rps"] == pytest.approx(2 * TURNS / 1.6, rel=0.15)
    # 32 users would ask for 60 req/s: they get the server's 40, and sessions take longer.
    assert levels[32]["throughput_rps"] == pytest.approx(SERVER_MAX_RPS, rel=0.1)
    assert levels[32]["sessions_per_s"] == pytest.approx(SERVER_MAX_RPS / TURNS, rel=0.25)
    records = [r for r in run.records() if r["phase"] == 0]
    by_session: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_session.setdefault(record["session"], []).append(record)
    assert len(by_session) >= 5
    for turns in by_session.values():  # every turn after its answer and the think time
        turns.sort(key=lambda record: record["turn"])
        assert [r["turn"] for r in turns] == list(range(1, len(turns) + 1))
        for before, after in pairwise(turns):
            assert after["scheduled_s"] == pytest.approx(before["done_s"] + 0.5, abs=0.002)
    capacity = run.report["capacity"]
    assert capacity["level"] == 2 and capacity["sessions_per_s"] == levels[2]["sessions_per_s"]

"""Tool calls and agent loops end to end: the real CLI against the simulated server, which answers
with a tool call exactly when the client's per-request draw (calls_tool) asks it to. The truth is
known: which answers call, the agent's fixed tool latency and result length, the step limit."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from typing import Any

import pytest

from loadgen.features.tools.ask import calls_tool
from loadgen.scenario.loader import parse_scenario
from tests.cli_helpers import run_cli

TOOL_LATENCY_S, RESULT_WORDS, MAX_STEPS = 0.08, 30, 2
SCENARIO = f"""name: agent-truth
seed: 11
server: {{kind: simulated, ttft: 20ms, itl: 2ms, slots: 64}}
workload:
  prompt_tokens: {{kind: fixed, value: 12}}
  output_tokens: {{kind: fixed, value: 8}}
  tools: {{count: 2, description_tokens: 10, call_rate: 50%}}
  sessions:
    turns: {{kind: fixed, value: 2}}
    think_time: {{kind: fixed, value: 100ms}}
    agent:
      tool_latency: {{kind: fixed, value: {TOOL_LATENCY_S * 1000:g}ms}}
      result_tokens: {{kind: fixed, value: {RESULT_WORDS}}}
      max_steps: {MAX_STEPS}
traffic:
  - {{kind: poisson, rate: 4, duration: 5s}}
slo:
  session_e2e: {{p95: 5s}}
# not about the client's timing: a busy 2-core machine must not turn it into exit 2
client: {{max_schedule_lag_p99: 250ms}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    done = run_cli(tmp_path_factory.mktemp("agent"), SCENARIO, timeout=120, html=False)
    assert done.code == 0, done.stderr
    return done


def test_every_answer_calls_exactly_when_asked_and_every_call_is_answered_in_its_turn(run) -> None:
    workload = parse_scenario(SCENARIO).workload
    records = run.records()
    assert {r["status"] for r in records} == {"ok"}
    sessions: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        asked = calls_tool(workload, "default", record["id"])
        assert record["tool_calls"] == int(asked), record
        assert record["tool_calls_valid"] == record["tool_calls"]  # the arguments form JSON
        sessions[record["session"]].append(record)
    steps = 0
    for session in sessions.values():
        session.sort(key=lambda r: r["scheduled_s"])
        for before, after in pairwise(session):
            if before["followed"]:  # the call's results went back as the turn's next step
                assert before["tool_calls"] == 1 and before["step"] < MAX_STEPS
                assert (after["turn"], after["step"]) == (before["turn"], before["step"] + 1)
                assert after["scheduled_s"] - before["done_s"] == pytest.approx(TOOL_LATENCY_S, abs=2e-6)
                assert after["tool_wait_ms"] == pytest.approx(TOOL_LATENCY_S * 1000)
                # its history grew by the call's arguments and a result of RESULT_WORDS words
                assert after["prompt_tokens"] >= before["prompt_tokens"] + RESULT_WORDS
                steps += 1
            else:  # a text answer, or the turn's last allowed call: the next turn
                assert not (before["tool_calls"] and before["step"] < MAX_STEPS)
                assert (after["turn"], after["step"]) == (before["turn"] + 1, 0)
        assert session[-1]["turn"] == 2 and not session[-1]["followed"]
    assert steps > 10


def test_the_report_counts_calls_steps_and_tool_waits(run) -> None:
    counted = [r for r in run.records() if not r["warmup"]]
    metrics = run.report["metrics"]
    tools = metrics["tools"]
    assert tools["requests"] == len(counted)
    assert tools["calls"] == sum(r["tool_calls"] for r in counted) == tools["valid_calls"]
    assert tools["tool_call_valid"] == 1.0
    sessions = metrics["sessions"]
    assert sessions["completed"] == sessions["started"] == len({r["session"] for r in counted})
    agent = sessions["agent"]
    assert agent["steps"] == sum(1 for r in counted if r["step"])
    assert agent["tool_wait_ms"]["p50"] == pytest.approx(TOOL_LATENCY_S * 1000)
    # a tool call is no answer: TTFAT leaves the requests that only called out
    called = [r for r in counted if r["tool_calls"]]
    assert called and all(r["first_answer_s"] is None for r in called)
    assert "- Tool calls:" in (run.run_dir / "report.md").read_text(encoding="utf-8")

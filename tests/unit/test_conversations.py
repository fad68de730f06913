"""Conversation traces (`format: conversation`): parsing, located errors, the session rows a trace
phase plans, scripted session draws, and the script's trip through a distributed worker's plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.collect.records import RequestRecord
from loadgen.distributed.plan_wire import decode_plan, split_columns
from loadgen.evaluate.replicas import TraceWindow
from loadgen.features.sessions.key import SPEC
from loadgen.inputs.traces import TraceError, read_trace
from loadgen.scenario.follow_ups import MAX_TURNS, later_turn_id
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.model import Workload
from loadgen.traffic.schedule import build_schedule
from loadgen.traffic.session_book import SessionBook, scripted_draws
from loadgen.traffic.session_policy import SessionPolicy

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "data" / "conversation_small.jsonl"
SAMPLE = ROOT / "scenarios" / "traces" / "conversation_sample.jsonl"
TEXT_1 = "How do I measure time to first token?"


def _write(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "conv.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_each_session_is_one_row_at_its_first_turn_carrying_its_later_turns():
    trace = read_trace(SMALL, "conversation")
    assert [row.offset_s for row in trace.rows] == [0.0, 0.15, 0.3]
    s1, seven, solo = trace.rows
    assert (s1.prompt_tokens, s1.output_tokens, s1.line) == (20, 8, 1)
    # (think s, prompt tokens, output tokens, text): `turn` 5 after 2 only orders, delay 0 given
    assert s1.script == ((0.12, 12, 6, None), (0.0, 4, 9, None))
    assert (seven.prompt, seven.prompt_tokens) == (TEXT_1, None)
    assert seven.script == ((0.08, 5, 5, "And the time between tokens?"),)
    assert solo.script == ()
    assert trace.arrival_times_s == [0.0, 0.15, 0.3]  # sessions: what peak_rate.from_trace counts


def test_the_sample_reads_as_its_sessions():
    trace = read_trace(SAMPLE, "conversation")
    assert len(trace.rows) == 12
    lines = [line for line in SAMPLE.read_text().splitlines() if line.strip()]
    assert sum(1 + len(row.script or ()) for row in trace.rows) == len(lines) == 38


@pytest.mark.parametrize(
    ("rows", "line", "problem"),
    [
        ([{"timestamp": 0, "input_length": 1, "output_length": 1}], 1, "missing key 'session_id'"),
        ([{"session_id": 1.5, "timestamp": 0, "input_length": 1, "output_length": 1}], 1, "not a string"),
        ([{"session_id": "a", "input_length": 1, "output_length": 1}], 1, "needs a 'timestamp'"),
        ([{"session_id": "a", "timestamp": 0, "output_length": 1}], 1, "missing key 'input_length'"),
        ([{"session_id": "a", "timestamp": 0, "input_length": 1}], 1, "missing key 'output_length'"),
        (
            [
                {"session_id": "a", "timestamp": 0, "input_length": 1, "output_length": 1},
                {"session_id": "b", "timestamp": 5, "input_length": 1, "output_length": 1},
                {"session_id": "a", "delay": -3, "input_length": 1, "output_length": 1},
            ],
            3,
            "delay: -3 is negative",
        ),
        (
            [
                {"session_id": "a", "turn": 2, "timestamp": 0, "input_length": 1, "output_length": 1},
                {"session_id": "a", "turn": 1, "input_length": 1, "output_length": 1},
            ],
            2,
            "turn 1 is out of order: its session's previous turn in the file was 2",
        ),
        (
            [{"session_id": "a", "turn": 0, "timestamp": 0, "input_length": 1, "output_length": 1}],
            1,
            "1 or more",
        ),
        ([{"session_id": "a", "timestamp": 0, "text": 3, "output_length": 1}], 1, "text: must be a string"),
    ],
)
def test_a_bad_row_is_named_by_file_and_line(
    tmp_path: Path, rows: list[dict[str, Any]], line: int, problem: str
) -> None:
    path = _write(tmp_path, rows)
    with pytest.raises(TraceError) as caught:
        read_trace(path, "conversation")
    assert (caught.value.line, caught.value.path) == (line, str(path))
    assert problem in caught.value.problem


def test_a_session_over_the_turn_bound_is_refused(tmp_path: Path) -> None:
    rows = [{"session_id": "a", "timestamp": 0, "input_length": 1, "output_length": 1}]
    rows += [{"session_id": "a", "input_length": 1, "output_length": 1}] * MAX_TURNS
    with pytest.raises(TraceError, match=f"more than {MAX_TURNS} turns") as caught:
        read_trace(_write(tmp_path, rows), "conversation")
    assert caught.value.line == MAX_TURNS + 1


def test_scripted_draws_take_the_script_as_lists_too():
    script: list[list[Any]] = [[0.12, 12, 6, None], [0.0, 4, 9, "hello there"]]  # as a worker decodes it
    draws = scripted_draws(script)
    assert (draws.turns, draws.think_s, draws.prompt_tokens, draws.output_tokens) == (
        3,
        (0.12, 0.0),
        (12, 4),
        (6, 9),
    )
    assert draws.prompts == (None, "hello there")
    assert draws.stops == ()


def _scenario(tmp_path: Path) -> Any:
    text = f"""name: conv
seed: 1
server: {{kind: simulated}}
workload: {{api: chat}}
traffic: [{{kind: trace, path: {SMALL}, format: conversation}}]
"""
    return parse_scenario(text, base_dir=tmp_path)


def test_the_plan_carries_each_session_on_its_turn_1_and_a_worker_gets_it(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    planned = list(build_schedule(scenario).requests)
    assert [p.session.script if p.session else None for p in planned] == [
        row.script for row in read_trace(SMALL, "conversation").rows
    ]
    assert [p.prompt for p in planned] == [None, TEXT_1, None]
    (share,) = split_columns(planned, 1)
    assert [p.session is not None and p.session.script is not None for p in decode_plan(share)] == [True] * 3
    # over the wire a tuple becomes a list: the book reads either
    wired = json.loads(json.dumps(share))
    assert [len(p.session.script or ()) for p in decode_plan(wired) if p.session] == [2, 1, 0]
    assert list(decode_plan(wired)) == planned


def test_the_book_replays_a_script_without_workload_sessions(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    workload: Workload = scenario.workload
    assert SPEC.of(workload) is None
    seven = list(build_schedule(scenario).requests)[1]
    book = SessionBook(SessionPolicy.of(workload), end_s=1.0)
    assert book.messages(seven, workload) == [{"role": "user", "content": TEXT_1}]
    record = RequestRecord(id=seven.id, phase=0, scheduled_s=seven.scheduled_s, status="ok", done_s=0.5)
    following = book.answered(seven, record, "an answer")
    assert following is not None
    assert (following.id, following.scheduled_s, following.output_tokens) == (later_turn_id(1, 2), 0.58, 5)
    assert following.session is None
    assert book.messages(following, workload) == [
        {"role": "user", "content": TEXT_1},
        {"role": "assistant", "content": "an answer"},
        {"role": "user", "content": "And the time between tokens?"},
    ]
    assert (record.session, record.turn, record.session_turns) == (1, 1, 2)


def test_peak_rate_from_a_conversation_trace_counts_sessions(tmp_path: Path) -> None:
    window = TraceWindow.model_validate({"path": str(SMALL), "format": "conversation", "window": 1.0})
    assert window.peak_rps == 3.0  # 3 sessions in the first second, not its 6 turns


def test_a_conversation_trace_needs_the_chat_api() -> None:
    text = f"""
name: c
server: {{kind: simulated}}
workload: {{api: completions}}
traffic:
  - {{kind: trace, path: {SMALL}, format: conversation}}
"""
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "c.yaml")
    assert any("needs api: chat" in str(issue) for issue in caught.value.issues)

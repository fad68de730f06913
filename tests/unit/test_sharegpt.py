"""ShareGPT conversations as a dataset: detection, reading (located errors), the plan's prompts and
output lengths, and a session's draws from its conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.features.sessions.spec import SessionsSpec
from loadgen.inputs.sharegpt import ShareGPTError, looks_like_sharegpt, read_sharegpt
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.traffic.schedule import build_schedule
from loadgen.traffic.session_book import SessionBook, session_draws
from loadgen.traffic.session_policy import SessionPolicy
from loadgen.wire.apis import lacking

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "scenarios" / "datasets" / "sharegpt_sample.json"


def _conv(*turns: tuple[str, str]) -> dict[str, Any]:
    return {"id": "x", "conversations": [{"from": role, "value": value} for role, value in turns]}


def test_the_sample_is_detected_and_read_skipping_a_conversation_without_a_human():
    assert looks_like_sharegpt(SAMPLE)
    assert not looks_like_sharegpt(ROOT / "scenarios" / "datasets" / "prompts.jsonl")
    entries = read_sharegpt(SAMPLE, lacking("chat"))
    assert len(entries) == 13  # 14 in the file, one with no human message
    hello = entries[-1]
    assert (hello.prompt, hello.output_tokens) == ("Hello!", 7)  # "Hello, how can I help you today?"
    assert hello.later == (("Just testing the connection.", 4, 3),)


def test_a_system_message_goes_first_with_chat_and_is_dropped_with_completions():
    chat = read_sharegpt(SAMPLE, lacking("chat"))[1]
    assert chat.prompt is None
    assert chat.messages == (
        {"role": "system", "content": "You are a concise assistant for site reliability engineers."},
        {"role": "user", "content": "Define time to first token."},
    )
    assert chat.later == (("Why does it grow under load?", 6, 21),)
    assert read_sharegpt(SAMPLE, lacking("completions"))[1].prompt == "Define time to first token."


def test_jsonl_is_read_and_a_missing_reply_has_no_length(tmp_path: Path) -> None:
    path = tmp_path / "conv.jsonl"
    rows = [_conv(("human", "one two three"), ("human", "four five"), ("gpt", "six")), _conv(("user", "hi"))]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    assert looks_like_sharegpt(path)
    first, second = read_sharegpt(path, lacking("chat"))
    assert (first.prompt, first.output_tokens, first.later) == ("one two three", None, (("four five", 2, 1),))
    assert (second.prompt, second.output_tokens, second.later) == ("hi", None, ())


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('[{"id": 1, "conversations": [{"from": "human", "value": "a"}]}, {"id": 2}]', "entry 1: expected"),
        (
            '[{"conversations": [{"from": "robot", "value": "a"}]}]',
            "entry 0: conversations[0]: \"from\" 'robot'",
        ),
        ('[{"conversations": [{"from": "human", "value": 3}]}]', "entry 0: conversations[0] must be"),
        ('{"conversations": []}\n{"conversations": [}\n', "line 2: not JSON"),
        ('[{"conversations": [{"from": "gpt", "value": "a"}]}]', "no conversation with a human message"),
    ],
)
def test_a_bad_file_is_located(tmp_path: Path, content: str, where: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ShareGPTError, match=None) as caught:
        read_sharegpt(path, lacking("chat"))
    assert where in str(caught.value)


def _scenario(tmp_path: Path, extra: str = "") -> Any:
    text = f"""name: sharegpt
seed: 5
server: {{kind: simulated}}
workload:
  api: chat
  dataset: {SAMPLE}
  output_tokens: {{kind: fixed, value: 7}}
{extra}traffic: [{{kind: constant, rate: 20, duration: 2s}}]
"""
    return parse_scenario(text, base_dir=tmp_path)


def test_each_request_asks_for_its_first_reply_s_length(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    entries = scenario.workload.entries
    planned = list(build_schedule(scenario).requests)
    assert len(planned) == 40
    rows = [p.dataset_row for p in planned]
    assert all(row is not None for row in rows)
    assert [p.output_tokens for p in planned] == [
        entries[row].output_tokens for row in rows if row is not None
    ]
    assert {p.prompt_tokens for p in planned if p.dataset_row == 0} == {11}  # its words


def test_a_session_replays_its_conversation_s_human_messages(tmp_path: Path) -> None:
    extra = "  sessions: {think_time: {kind: fixed, value: 100ms}}\n"
    scenario = _scenario(tmp_path, extra)
    workload = scenario.workload
    assert workload.sessions is not None and workload.sessions.turns is None
    entry = workload.entries[3]  # four human messages, "Thanks, that helps." last
    draws = session_draws(5, 0, workload.sessions, workload, entry)
    assert draws.turns == 3
    assert draws.prompts == ("How would I model the bursts?", "Thanks, that helps.")
    assert draws.output_tokens == (16, 3)
    assert draws.think_s == (0.1, 0.1)
    capped = SessionsSpec.model_validate(
        {"turns": {"kind": "fixed", "value": 2}, "think_time": {"kind": "fixed", "value": 1}}
    )
    assert session_draws(5, 0, capped, workload, entry).turns == 2
    first = next(p for p in build_schedule(scenario).requests if p.dataset_row == 1)
    book = SessionBook(SessionPolicy.of(workload), end_s=2.0)
    history = book.messages(first, workload)
    assert [m["role"] for m in history or []] == ["system", "user"]


def test_sessions_need_turns_without_a_sharegpt_dataset(tmp_path: Path) -> None:
    text = """name: s
server: {kind: simulated}
workload: {api: chat, sessions: {think_time: {kind: fixed, value: 1s}}}
traffic: [{kind: constant, rate: 1, duration: 1s}]
"""
    with pytest.raises(ScenarioError, match="only a ShareGPT dataset gives each session its turns"):
        parse_scenario(text, base_dir=tmp_path)


def test_with_a_tokenizer_lengths_are_its_token_counts():
    from loadgen.inputs.datasets import token_counter

    count = token_counter(ROOT / "servers" / "models" / "tiny" / "tokenizer.json")
    entries = read_sharegpt(SAMPLE, lacking("chat"), count)
    reply = "Hello, how can I help you today?"
    assert entries[-1].output_tokens == count([reply])[0] != len(reply.split())
    assert entries[-1].tokens == count(["Hello!"])[0]
    assert entries[-1].later == (
        ("Just testing the connection.", *count(["Just testing the connection.", "The connection works."])),
    )

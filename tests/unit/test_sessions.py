"""`workload.sessions`: the key and its errors, a plan that only marks turn 1s (the rest bit for
bit as without sessions), per-session draws that depend on the seed and session alone, and the
session book's turns: history with the actual answers, think time from the answer's end, ends on
a failure, cut past the linger bound, ids unique across sessions."""

from __future__ import annotations

import dataclasses

import numpy as np
import orjson
import pytest

from loadgen.collect.records import RequestRecord, Status
from loadgen.features.sessions.key import SPEC
from loadgen.features.slice import Stop
from loadgen.inputs.vocabulary import prompt_text
from loadgen.scenario.distributions import sample
from loadgen.scenario.follow_ups import MAX_TURNS, SESSION_ID_BASE, later_turn_id, session_of
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.model import Scenario
from loadgen.traffic.schedule import PlannedRequest, SessionStart, build_schedule
from loadgen.traffic.session_book import SessionBook, session_draws
from loadgen.traffic.session_policy import SessionPolicy
from loadgen.wire.openai_stream import StreamParser, TextStreamParser

BASE = """
name: chats
seed: 7
server: {kind: simulated}
workload:
  api: chat
  prompt_tokens: {kind: uniform, min: 4, max: 40}
  output_tokens: {kind: uniform, min: 2, max: 20}
  SESSIONS
traffic: [{kind: poisson, rate: 50, duration: 2s}]
"""
SESSIONS = (
    "sessions: {turns: {kind: uniform, min: 1, max: 5}, "
    "think_time: {kind: uniform, min: 100ms, max: 2s}, linger: 3s}"
)


def _scenario(sessions: str = SESSIONS) -> Scenario:
    return parse_scenario(BASE.replace("SESSIONS", sessions), "s.yaml")


def _errors(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "s.yaml")
    return [str(issue) for issue in caught.value.issues]


def test_sessions_need_chat_and_no_dataset() -> None:
    text = BASE.replace("SESSIONS", SESSIONS).replace("api: chat", "api: completions")
    assert any("sessions need api: chat" in error for error in _errors(text))
    turns = _errors(
        BASE.replace(
            "SESSIONS", "sessions: {turns: {kind: fixed, value: 0}, think_time: {kind: fixed, value: 1s}}"
        )
    )
    assert any("turns" in error for error in turns)


def test_a_plan_with_sessions_differs_only_in_marking_turn_ones() -> None:
    with_sessions = list(build_schedule(_scenario()).requests)
    without = list(build_schedule(_scenario("")).requests)
    assert len(with_sessions) == len(without) > 50
    assert all(planned.session == SessionStart(seed=7) for planned in with_sessions)
    assert all(planned.session is None for planned in without)
    assert [dataclasses.replace(p, session=None) for p in with_sessions] == without


def test_draws_depend_on_the_seed_and_session_only() -> None:
    scenario = _scenario()
    spec, workload = SPEC.of(scenario.workload), scenario.workload
    assert spec is not None
    first = session_draws(7, 12, spec, workload)
    assert session_draws(7, 12, spec, workload) == first
    others = {session_draws(7, session, spec, workload) for session in range(40)}
    assert len(others) > 30  # sessions differ
    turns = [session_draws(7, session, spec, workload).turns for session in range(400)]
    assert set(turns) == {1, 2, 3, 4, 5}
    for draws in others:
        assert len(draws.think_s) == len(draws.prompt_tokens) == len(draws.output_tokens) == draws.turns - 1
        assert all(0.1 <= t <= 2.0 for t in draws.think_s)
        assert all(4 <= n <= 40 for n in draws.prompt_tokens)
    assert session_draws(8, 12, spec, workload) != first


def test_later_turns_cancel_at_the_share_and_leave_the_other_draws_alone() -> None:
    plain = _scenario()
    cancelling = _scenario(SESSIONS + "\n  cancel: {share: 30%, after: {tokens: {kind: fixed, value: 5}}}")
    spec = SPEC.of(plain.workload)
    assert spec is not None
    later = cancelled = 0
    for session in range(300):
        base = session_draws(7, session, spec, plain.workload)
        draws = session_draws(7, session, spec, cancelling.workload)
        assert (draws.turns, draws.think_s, draws.prompt_tokens) == (
            base.turns,
            base.think_s,
            base.prompt_tokens,
        )
        assert set(base.stops) <= {None}
        later += len(draws.stops)
        cancelled += sum(after == Stop(None, 5) for after in draws.stops)
    assert later > 500 and 0.25 < cancelled / later < 0.35


def test_turn_counts_are_clipped_to_the_bound() -> None:
    scenario = _scenario(
        "sessions: {turns: {kind: normal, mean: 3, std: 1000}, think_time: {kind: fixed, value: 1s}}"
    )
    spec = SPEC.of(scenario.workload)
    assert spec is not None and spec.turns is not None
    turns = sample(spec.turns, 2000, np.random.default_rng(1))
    assert turns.min() == 1 and turns.max() == MAX_TURNS


def _record(planned: PlannedRequest, done_s: float, status: Status = "ok") -> RequestRecord:
    return RequestRecord(
        id=planned.id, phase=0, scheduled_s=planned.scheduled_s, done_s=done_s, status=status
    )


def _book(linger: str = "3s") -> tuple[SessionBook, Scenario, PlannedRequest]:
    scenario = _scenario(
        SESSIONS.replace("linger: 3s", f"linger: {linger}").replace("min: 1, max: 5", "min: 3, max: 3")
    )
    first = next(iter(build_schedule(scenario).requests))
    book = SessionBook(SessionPolicy.of(scenario.workload), end_s=2.0)
    return book, scenario, first


def test_the_book_sends_the_history_with_the_actual_answers() -> None:
    book, scenario, first = _book()
    spec = SPEC.of(scenario.workload)
    assert spec is not None
    draws = session_draws(7, first.id, spec, scenario.workload)
    messages = book.messages(first, scenario.workload)
    assert messages is not None and [m["role"] for m in messages] == ["user"]
    opening = messages[0]["content"]  # a user message's: text (the history's type allows None)
    assert isinstance(opening, str) and len(opening.split()) == first.prompt_tokens
    done_s = first.scheduled_s + 0.5
    record = _record(first, done_s=done_s)
    second = book.answered(first, record, " tok ken sim")
    assert (record.session, record.turn, record.session_turns) == (first.id, 1, 3)
    assert record.session_start_s == round(first.scheduled_s, 6)
    assert second is not None
    assert second.id == later_turn_id(first.id, 2)
    assert second.scheduled_s == pytest.approx(done_s + draws.think_s[0], abs=1e-6)
    assert (second.prompt_tokens, second.output_tokens) == (draws.prompt_tokens[0], draws.output_tokens[0])
    assert (second.phase, second.session) == (first.phase, None)
    assert second.prefix == first.prefix  # its history begins with turn 1's prompt
    messages = book.messages(second, scenario.workload)
    assert messages is not None
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == " tok ken sim"
    assert messages[2]["content"] == prompt_text(second.prompt_tokens, second.id)
    third = book.answered(second, _record(second, done_s=second.scheduled_s + 0.2), " beam")
    assert third is not None and book.messages(third, scenario.workload) is not None
    last = _record(third, done_s=third.scheduled_s + 0.1)
    assert book.answered(third, last, "x") is None
    assert last.turn == 3 and book.open == 0
    assert (book.counts.started, book.counts.completed) == (1, 1)


def test_a_failed_turn_ends_its_session_and_late_turns_are_cut() -> None:
    book, scenario, first = _book()
    book.messages(first, scenario.workload)
    assert book.answered(first, _record(first, 1.0, status="timeout"), "") is None
    assert book.open == 0 and book.counts.ended == 1
    book, scenario, first = _book(linger="1ms")  # the schedule ends at 2 s: a turn due past 2.001 s is cut
    book.messages(first, scenario.workload)
    assert book.answered(first, _record(first, 2.0), "a") is None
    assert book.open == 0 and book.counts.cut == 1


def test_a_request_outside_sessions_gets_no_messages() -> None:
    scenario = _scenario("")
    first = next(iter(build_schedule(scenario).requests))
    book = SessionBook(SessionPolicy.of(scenario.workload), end_s=2.0)
    assert book.messages(first, scenario.workload) is None


def test_a_later_turn_finds_its_session_and_a_plan_id_is_its_own() -> None:
    for session in (0, 1, 999, 123_456_789):
        assert session_of(session) == session
        assert {session_of(later_turn_id(session, turn)) for turn in range(2, MAX_TURNS + 1)} == {session}


def test_later_turn_ids_never_meet_plan_ids_or_each_other() -> None:
    ids = {later_turn_id(session, turn) for session in range(300) for turn in range(2, MAX_TURNS + 1, 97)}
    assert len(ids) == 300 * len(range(2, MAX_TURNS + 1, 97))
    assert min(ids) == SESSION_ID_BASE > 100_000_000


def test_the_text_parser_keeps_the_answer_and_the_plain_one_counts_alike() -> None:
    lines = [
        b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}',
        b'data: {"choices":[{"delta":{"content":" tok"}}]}',
        b'data: {"choices":[{"delta":{"content":" ken"}}]}',
        b'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}',
        b"data: [DONE]",
    ]
    text, plain = TextStreamParser(), StreamParser()
    for at, line in enumerate(lines):
        text.feed(line, at)
        plain.feed(line, at)
    assert text.text == " tok ken"
    assert text.result == plain.result


def test_a_chain_on_the_server_needs_the_responses_api() -> None:
    chained = SESSIONS.replace("linger: 3s", "linger: 3s, chain: server")
    errors = _errors(BASE.replace("SESSIONS", chained))
    assert any(
        "workload.sessions.chain" in error and "chain: server needs api: responses" in error
        for error in errors
    ), errors
    scenario = parse_scenario(
        BASE.replace("SESSIONS", chained).replace("api: chat", "api: responses"), "s.yaml"
    )
    spec = SPEC.of(scenario.workload)
    assert spec is not None and spec.chain == "server"
    assert SPEC.of(_scenario().workload).chain == "client"  # type: ignore[union-attr]
    assert _errors(BASE.replace("SESSIONS", SESSIONS.replace("linger: 3s", "linger: 3s, chain: peer")))


def test_a_chained_turn_continues_the_previous_answer_with_only_the_new_message() -> None:
    from loadgen.wire.call import Call
    from loadgen.wire.responses import ResponsesApi

    text = BASE.replace("SESSIONS", SESSIONS.replace("linger: 3s", "linger: 3s, chain: server"))
    scenario = parse_scenario(
        text.replace("api: chat", "api: responses").replace("min: 1, max: 5", "min: 3, max: 3"), "s.yaml"
    )
    first = next(iter(build_schedule(scenario).requests))
    book = SessionBook(SessionPolicy.of(scenario.workload), end_s=2.0)
    opening = book.turn(first, scenario.workload)
    assert opening is not None and opening.store and opening.continues is None
    assert [m["role"] for m in opening.messages] == ["user"]
    second = book.answered(first, _record(first, first.scheduled_s + 0.5), " tok ken", answer_id="resp_a")
    assert second is not None
    turn = book.turn(second, scenario.workload)
    assert turn is not None and turn.broken is None and (turn.continues, turn.store) == ("resp_a", True)
    assert turn.messages == [{"role": "user", "content": prompt_text(second.prompt_tokens, second.id)}]
    body = orjson.loads(
        ResponsesApi()
        .request(Call("m", "", 4, False, True, turn.messages, continues=turn.continues, store=turn.store))
        .data
    )
    assert body["previous_response_id"] == "resp_a" and body["store"] is True
    assert body["input"] == [{"role": "user", "content": turn.messages[0]["content"]}]
    # an answer without an id breaks the chain: the next turn cannot be sent
    third = book.answered(second, _record(second, second.scheduled_s + 0.2), " beam", answer_id=None)
    assert third is not None
    broken = book.turn(third, scenario.workload)
    assert broken is not None and broken.broken is not None and "without an id" in broken.broken
    plain = _scenario(SESSIONS.replace("min: 1, max: 5", "min: 3, max: 3"))
    unchained = SessionBook(SessionPolicy.of(plain.workload), end_s=2.0)
    whole = unchained.turn(next(iter(build_schedule(plain).requests)), plain.workload)
    assert whole is not None and not whole.store and whole.continues is None


def test_a_chained_agent_step_sends_only_the_tools_outputs() -> None:
    from loadgen.wire.answer import ToolCall

    text = BASE.replace(
        "SESSIONS",
        "tools: {count: 2}\n  sessions: {turns: {kind: fixed, value: 2}, "
        "think_time: {kind: fixed, value: 1s}, chain: server, "
        "agent: {tool_latency: {kind: fixed, value: 50ms}, max_steps: 2}}",
    ).replace("api: chat", "api: responses")
    scenario = parse_scenario(text, "s.yaml")
    first = next(iter(build_schedule(scenario).requests))
    book = SessionBook(SessionPolicy.of(scenario.workload), end_s=2.0)
    assert book.turn(first, scenario.workload) is not None
    calls = {0: ToolCall("call_1", "search", ['{"q": 1}']), 1: ToolCall("call_2", "fetch", ["{}"])}
    step = book.answered(first, _record(first, first.scheduled_s + 0.3), "", calls, answer_id="resp_call")
    assert step is not None
    turn = book.turn(step, scenario.workload)
    assert turn is not None and turn.continues == "resp_call" and turn.store
    assert [(m["role"], m.get("tool_call_id")) for m in turn.messages] == [
        ("tool", "call_1"),
        ("tool", "call_2"),
    ]
    second = book.answered(step, _record(step, step.scheduled_s + 0.2), " done", answer_id="resp_text")
    assert second is not None
    news = book.turn(second, scenario.workload)
    assert news is not None and news.continues == "resp_text"
    assert [m["role"] for m in news.messages] == ["user"]

"""`api: responses` (loadgen.wire.responses): the request as the Responses API takes it, and the
answer read from recorded streams and bodies (tests/data/responses/, written from OpenAI's
documented event and object shapes). TTFT is the first delta of any kind, never the first event
(`response.created` comes at once); a failed, filtered or broken-off stream is a failure with the
server's message."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest

from loadgen.inputs.dataset_entry import GivenMessage
from loadgen.wire.apis import WIRE_APIS, carries, wire_api
from loadgen.wire.call import Call, ReasoningAsk, ToolsAsk
from loadgen.wire.responses_stream import ResponsesReader

DATA = Path(__file__).parents[1] / "data" / "responses"
TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object"}},
}


def body(call: Call) -> dict[str, object]:
    request = wire_api("responses").request(call)
    assert (request.path, request.content_type) == ("/v1/responses", "application/json")
    parsed: dict[str, object] = orjson.loads(request.data)
    return parsed


PLAIN = Call(model="m", prompt="hi", max_tokens=7, ignore_eos=True, stream=True)


def call(**fields: Any) -> Call:
    return dataclasses.replace(PLAIN, **fields)


def test_a_plain_request_is_the_prompt_as_input_and_the_budget_as_max_output_tokens() -> None:
    sent = body(call())
    assert sent == {
        "model": "m",
        "max_output_tokens": 7,
        "stream": True,
        "temperature": 0,
        "ignore_eos": True,
        "input": "hi",
    }
    assert "responses" in WIRE_APIS and carries("responses", "messages") and carries("responses", "tools")
    api = WIRE_APIS["responses"]
    assert api.metrics == "generation"
    assert api.reader(think="auto", calls=False, keep_text=False).text is None  # kept only when asked


def test_features_render_as_the_responses_api_takes_them() -> None:
    tools = ToolsAsk([TOOL], {"type": "function", "function": {"name": "get_weather"}}, simulate_call=True)
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    sent = body(call(reasoning=ReasoningAsk("high", 12, "think_tags"), tools=tools, content_parts=[image]))
    assert sent["reasoning"] == {"effort": "high"}
    assert sent["simulate_reasoning"] == {"tokens": 12, "format": "think_tags"}
    assert sent["tools"] == [
        {"type": "function", "name": "get_weather", "description": "d", "parameters": {"type": "object"}}
    ]
    assert sent["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert sent["simulate_tool_call"] is True
    assert sent["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "hi"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            ],
        }
    ]


def test_a_history_becomes_input_items_with_the_calls_made_and_their_outputs() -> None:
    made = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    history: list[GivenMessage] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [made]},
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
    ]
    assert body(call(messages=history))["input"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "q"},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "42"},
    ]


def read(name: str, *, calls: bool = False, keep_text: bool = False, whole: bool = False) -> ResponsesReader:
    """Feed a recorded stream a line at a time, line k (from 1) arriving at k µs (or in one
    receive, `whole`: every line at 1 µs)."""
    reader = ResponsesReader(calls=calls, keep_text=keep_text)
    lines = (DATA / name).read_bytes().splitlines(keepends=True)
    if whole:
        reader.feed_lines(lines, 1000)
    else:
        for number, line in enumerate(lines, start=1):
            reader.feed_lines([line], number * 1000)
    return reader


def _line_of(name: str, event: str) -> int:
    """The 1-based line number of the first `data:` line of that event type."""
    for number, line in enumerate((DATA / name).read_text().splitlines(), start=1):
        if line.startswith("data:") and f'"type":"{event}"' in line:
            return number
    raise AssertionError(f"{event} not in {name}")


def test_ttft_is_the_first_delta_not_the_first_event() -> None:
    reader = read("text.sse", keep_text=True)
    result = reader.result
    assert result.done and result.error is None
    first_delta = _line_of("text.sse", "response.output_text.delta") * 1000
    assert _line_of("text.sse", "response.created") * 1000 < first_delta
    assert result.first_token_ns == first_delta == result.first_answer_ns
    assert len(result.chunk_ns) == 4 and result.answer_ns is None  # the answer began at the first token
    assert (result.usage_prompt_tokens, result.usage_output_tokens, result.usage_cached_tokens) == (12, 4, 8)
    assert result.done_ns == _line_of("text.sse", "response.completed") * 1000
    assert reader.text == "Hello there, friend"


@pytest.mark.parametrize(
    ("name", "tokens", "reasoning", "usage_reasoning"),
    [("reasoning.sse", 5, 3, 3), ("reasoning_summary.sse", 3, 2, 39)],
)
def test_reasoning_deltas_are_tokens_before_the_answer(
    name: str, tokens: int, reasoning: int, usage_reasoning: int
) -> None:
    result = read(name).result
    assert result.done and len(result.chunk_ns) == tokens and result.reasoning_chunks == reasoning
    assert result.first_token_ns is not None and result.answer_ns is not None
    assert result.first_token_ns < result.answer_ns  # TTFAT after TTFT
    assert result.chunk_ns.index(result.answer_ns) == reasoning
    assert result.reasoning_tokens == usage_reasoning
    assert result.reasoning_ms() == pytest.approx((result.answer_ns - result.first_token_ns) / 1e6)


def test_a_streamed_tool_call_is_kept_whole_and_counted() -> None:
    result = read("function_call.sse", calls=True).result
    assert result.done and result.tool_call_chunks == 3 and result.first_answer_ns is None
    [made] = result.tool_calls.values()
    assert (made.id, made.name, "".join(made.arguments), made.valid) == (
        "call_1",
        "get_weather",
        '{"city": "Paris"}',
        True,
    )
    assert read("function_call.sse").result.tool_calls == {}  # kept only when asked


def test_the_budget_running_out_is_the_length_asked_for_and_other_ends_are_failures() -> None:
    budget = read("incomplete_budget.sse").result
    assert budget.done and budget.error is None and len(budget.chunk_ns) == 3
    cases = {
        "incomplete_filter.sse": "response incomplete: content_filter",
        "failed_mid_stream.sse": "response failed: The model crashed mid-answer",
        "error_event.sse": "server error in stream: Too many tokens in flight",
    }
    for name, error in cases.items():
        result = read(name).result
        assert (result.error, result.error_kind, result.done) == (error, "http", False), name
    assert len(read("failed_mid_stream.sse").result.chunk_ns) == 2  # what came before is kept
    broken = read("no_completed.sse").result
    assert (
        not broken.done and broken.error is None and len(broken.chunk_ns) == 2
    )  # the user calls it broken off


def test_one_receive_of_every_line_reads_the_same() -> None:
    for name in ("text.sse", "reasoning.sse", "function_call.sse"):
        apart, together = read(name, calls=True).result, read(name, calls=True, whole=True).result
        assert (len(apart.chunk_ns), apart.reasoning_chunks, apart.usage_output_tokens, apart.tool_calls) == (
            len(together.chunk_ns),
            together.reasoning_chunks,
            together.usage_output_tokens,
            together.tool_calls,
        )


def test_bad_events_fail_the_record_and_nothing_after_the_end_counts() -> None:
    reader = ResponsesReader()
    assert reader.feed_lines(
        [b'data: {"type":"response.output_text.delta","delta":"a"}\n', b"data: {oops\n"], 1
    )
    assert reader.result.error is not None and reader.result.error.startswith("unparseable stream event")
    assert len(reader.result.chunk_ns) == 1
    reader = ResponsesReader()
    assert (
        reader.feed_lines([b"data: [1, 2]\n"], 1)
        and reader.result.error == "stream event is not a JSON object"
    )
    reader = ResponsesReader()
    assert reader.feed_lines([b'data: {"type":"response.completed"}\n'], 1)
    assert reader.result.error == "a terminal event without its response"
    ended = read("text.sse")
    ended.feed_lines([b'data: {"type":"response.output_text.delta","delta":"late"}\n'], 10**9)
    assert len(ended.result.chunk_ns) == 4 and ended.result.done


def test_a_whole_response_is_one_chunk_with_its_usage_and_text() -> None:
    reader = ResponsesReader(keep_text=True)
    reader.feed_body((DATA / "whole.json").read_bytes(), 5000)
    result = reader.result
    assert (
        result.done and result.error is None and result.chunk_ns == [5000] and result.first_answer_ns == 5000
    )
    assert (result.usage_output_tokens, result.usage_reasoning_tokens, result.reasoning_chunks) == (7, 5, 1)
    assert reader.text == "Four."
    failed = ResponsesReader()
    failed.feed_body(b'{"error": {"message": "no such model", "type": "invalid_request_error"}}', 1)
    assert failed.result.error == "server error: no such model" and not failed.result.done

"""The `/v1/responses` body as the built-in servers read it (servers/http/responses.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from servers.http.openai import DEFAULT_MAX_TOKENS, BadRequest, parse_body
from servers.http.responses import ResponsesBody, ResponsesShape


def _body(**fields: Any) -> ResponsesBody:
    body = parse_body(json.dumps({"model": "m", **fields}).encode(), ResponsesBody)
    assert isinstance(body, ResponsesBody)
    return body


def test_a_string_input_is_one_user_turn_after_the_instructions() -> None:
    body = _body(input="one two", instructions="be brief", temperature=0.2, reasoning={"effort": "low"})
    assert body.conversation() == [("system", "be brief"), ("user", "one two")]
    assert body.images() == 0 and body.called_tool() is None
    assert body.output_limit == DEFAULT_MAX_TOKENS and not body.stream and not body.ignore_eos


def test_input_items_read_their_text_and_count_images() -> None:
    items = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "a b"},
                {"type": "input_image", "image_url": "data:x"},
            ],
        },
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "c"}]},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"q": 1}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "d e"},
        {"type": "reasoning", "id": "rs_1", "summary": []},  # adds nothing
        {"role": "user", "content": [{"type": "input_image", "image_url": "data:y"}]},
    ]
    body = _body(input=items, max_output_tokens=7, stream=True, ignore_eos=True)
    assert body.conversation() == [
        ("user", "a b"),
        ("assistant", "c"),
        ("assistant", '{"q": 1}'),
        ("tool", "d e"),
        ("user", ""),
    ]
    assert body.images() == 2 and body.output_limit == 7 and body.stream and body.ignore_eos
    assert body.prompt_text() == 'a b\nc\n{"q": 1}\nd e\n'


def test_flat_function_tools_and_the_tool_choice() -> None:
    tools = [
        {"type": "function", "name": "search", "description": "look"},
        {"type": "function", "name": "fetch"},
    ]
    assert _body(input="x", tools=tools).called_tool() is None  # no simulate_tool_call: text
    assert _body(input="x", tools=tools, simulate_tool_call=True).called_tool() == "search"
    named = _body(
        input="x", tools=tools, simulate_tool_call=True, tool_choice={"type": "function", "name": "fetch"}
    )
    assert named.called_tool() == "fetch"
    assert _body(input="x", tools=tools, simulate_tool_call=True, tool_choice="none").called_tool() is None
    assert (
        _body(input="x", tools=tools, simulate_tool_call=True, tool_choice="required").called_tool()
        == "search"
    )
    assert _body(input="x", tools=tools).conversation()[0] == ("system", "search look fetch ")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "input: Field required"),
        ({"input": 7}, "input:"),
        ({"input": "x", "max_output_tokens": 0}, "max_output_tokens:"),
        (
            {"input": "x", "previous_response_id": "resp_1"},
            "Previous response with id 'resp_1' not found.",
        ),
    ],
)
def test_bad_bodies_are_bad_requests(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        _body(**fields)


def test_sequence_numbers_increase_and_usage_counts_reasoning_as_output() -> None:
    shape = ResponsesShape.of("m", _body(input="x", simulate_reasoning={"tokens": 2}), None, 4)
    assert isinstance(shape, ResponsesShape)
    whole = shape.full(["a", "b", "c", "d"], "length", 3, None)
    assert whole["status"] == "incomplete" and whole["incomplete_details"] == {"reason": "max_output_tokens"}
    assert [item["type"] for item in whole["output"]] == ["reasoning", "message"]
    assert (
        whole["usage"]["output_tokens"] == 4
        and whole["usage"]["output_tokens_details"]["reasoning_tokens"] == 2
    )
    assert shape.sequence > 0
    stopped = ResponsesShape.of("m", _body(input="x"), None, 4).full(["a", "b"], "stop", 3, 1)
    assert stopped["status"] == "completed" and stopped["incomplete_details"] is None
    assert (
        stopped["output"][0]["status"] == "completed"
        and stopped["usage"]["input_tokens_details"]["cached_tokens"] == 1
    )

"""The wire APIs' seam (loadgen.wire): each API by its name, the request it builds from what a
request asks (in the tool's own terms), and the reader it gives for the answer."""

from __future__ import annotations

from typing import Any

import pytest

from loadgen.features.images.attach import image_parts
from loadgen.wire.apis import WIRE_APIS, request_body, wire_api
from loadgen.wire.call import Call, ReasoningAsk, ToolsAsk
from loadgen.wire.openai_stream import StreamParser, TextStreamParser

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def _call(**asks: Any) -> Call:
    return Call(model="m", prompt="hi there", max_tokens=9, ignore_eos=True, stream=True, **asks)


def test_each_api_is_found_by_its_name_and_measures_generation_or_latency() -> None:
    names = [
        "chat",
        "completions",
        "embeddings",
        "kserve_v2",
        "rerank",
        "responses",
        "score",
        "transcriptions",
    ]
    assert sorted(WIRE_APIS) == names
    for name, api in WIRE_APIS.items():
        items = name in ("embeddings", "rerank", "score", "kserve_v2")
        measures = "latency" if items else "generation"  # an API of items answers whole
        assert api.name == name and wire_api(name) is api and api.metrics == measures
    with pytest.raises(KeyError):
        wire_api("nonesuch")


def test_a_chat_call_with_every_ask_is_one_body() -> None:
    call = _call(
        reasoning=ReasoningAsk(effort="low", simulate_tokens=5, simulate_format="reasoning_content"),
        tools=ToolsAsk(tools=TOOLS, choice="auto", simulate_call=True),
        content_parts=image_parts(["data:image/png;base64,AA=="]),
    )
    path, body = request_body("chat", call)
    assert path == "/v1/chat/completions"
    assert body == {
        "model": "m",
        "max_tokens": 9,
        "stream": True,
        "temperature": 0,
        "reasoning_effort": "low",
        "simulate_reasoning": {"tokens": 5, "format": "reasoning_content"},
        "tools": TOOLS,
        "tool_choice": "auto",
        "simulate_tool_call": True,
        "ignore_eos": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi there"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
                ],
            }
        ],
    }


def test_a_reasoning_ask_without_a_length_or_effort_adds_nothing() -> None:
    plain = request_body("completions", _call())[1]
    asked = request_body("completions", _call(reasoning=ReasoningAsk(None, 0, "think_tags")))[1]
    assert (
        asked
        == plain
        == {
            "model": "m",
            "max_tokens": 9,
            "stream": True,
            "temperature": 0,
            "ignore_eos": True,
            "stream_options": {"include_usage": True},
            "prompt": "hi there",
        }
    )


def test_a_completion_refuses_what_only_chat_carries() -> None:
    for asks in ({"messages": [{"role": "user", "content": "x"}]}, {"content_parts": image_parts(["u"])}):
        with pytest.raises(ValueError, match="need api: chat"):
            request_body("completions", _call(**asks))


def test_the_reader_keeps_the_text_only_when_asked() -> None:
    for api in (WIRE_APIS["chat"], WIRE_APIS["completions"]):  # responses': test_responses_api
        plain = api.reader(think="auto", calls=False, keep_text=False)
        kept = api.reader(think="auto", calls=True, keep_text=True)
        assert type(plain) is StreamParser and plain.text is None
        assert isinstance(kept, TextStreamParser)
        kept.feed_lines([b'data: {"choices": [{"delta": {"content": "yes"}, "text": "yes"}]}\n'], 5)
        assert kept.text == "yes" and kept.result.chunk_ns == [5]


def test_the_scenario_names_the_apis_there_are_and_checks_what_each_carries() -> None:
    from typing import get_args

    from loadgen.scenario.workload import Workload
    from loadgen.wire.apis import WIRE_APIS, ApiName, apis_carrying, carries

    assert set(get_args(ApiName)) == set(WIRE_APIS)
    assert get_args(Workload.model_fields["api"].annotation) == get_args(ApiName)
    assert apis_carrying("tools") == "chat or responses" and not carries("completions", "tools")
    for name in WIRE_APIS:
        spec = {"api": name, "tools": {"count": 2}}
        if carries(name, "tools"):
            Workload.model_validate(spec)
        else:
            needs = f"tools need api: chat or responses \\(api: {name} cannot call one\\)"
            with pytest.raises(ValueError, match=needs):
                Workload.model_validate(spec)

"""What a reasoning request asks for (workload.reasoning), and how the built-in servers answer
it: each form the client reads is one the server writes, counted the same on both sides."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loadgen.features.reasoning.ask import reasoning_ask, reasoning_tokens_of
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.workload import Workload
from loadgen.wire.call import Call
from loadgen.wire.openai_body import SIMULATE_REASONING as SIMULATE_FIELD
from loadgen.wire.openai_body import FeatureFields, feature_fields
from loadgen.wire.openai_stream import StreamParser
from servers.http.openai import SSE_DONE, ChatShape, Shape, SimulateReasoning, sse

MINIMAL = "name: r\nserver: {kind: simulated}\ntraffic: [{kind: constant, rate: 1, duration: 1s}]\n"


def workload(reasoning: dict[str, Any], api: str = "chat") -> Workload:
    return Workload.model_validate({"api": api, "reasoning": reasoning})


def reasoning_fields(spec: Workload, tokens: int) -> FeatureFields:
    """The body fields the request's ask becomes (either OpenAI API: they share them)."""
    ask = reasoning_ask(spec, tokens)
    return feature_fields(
        Call(model="m", prompt="", max_tokens=1, ignore_eos=False, stream=True, reasoning=ask)
    )


def test_the_draw_is_the_requests_own_and_repeats() -> None:
    spec = workload({"tokens": {"kind": "uniform", "min": 10, "max": 1000}})
    draws = [reasoning_tokens_of(spec, "default", request_id) for request_id in range(400)]
    assert draws == [reasoning_tokens_of(spec, "default", request_id) for request_id in range(400)]
    assert min(draws) >= 10 and max(draws) <= 1000 and len(set(draws)) > 200
    assert draws != [reasoning_tokens_of(spec, "other", request_id) for request_id in range(400)]
    assert reasoning_tokens_of(workload({"format": "think_tags"}), "default", 1) == 0


def test_the_body_asks_for_the_draw_in_the_chosen_form_and_the_effort() -> None:
    spec = workload({"format": "reasoning", "tokens": {"kind": "fixed", "value": 7}, "effort": "high"})
    assert reasoning_fields(spec, 7) == {
        "reasoning_effort": "high",
        SIMULATE_FIELD: {"tokens": 7, "format": "reasoning"},
    }
    auto = workload({"tokens": {"kind": "fixed", "value": 3}})
    assert reasoning_fields(auto, 3)[SIMULATE_FIELD]["format"] == "reasoning_content"
    text = workload({"tokens": {"kind": "fixed", "value": 3}}, api="completions")
    assert reasoning_fields(text, 3)[SIMULATE_FIELD]["format"] == "think_tags"
    assert reasoning_fields(workload({"format": "auto"}), 0) == {}


def test_a_completion_cannot_read_delta_fields() -> None:
    text = MINIMAL + "workload: {api: completions, reasoning: {format: reasoning_content}}\n"
    with pytest.raises(ScenarioError, match="think_tags"):
        parse_scenario(text)
    parse_scenario(MINIMAL + "workload: {api: completions, reasoning: {format: think_tags}}\n")


@pytest.mark.parametrize(
    ("shape_type", "form", "think"),
    [
        (ChatShape, "reasoning_content", "auto"),
        (ChatShape, "reasoning", "auto"),
        (ChatShape, "think_tags", "auto"),
        (ChatShape, "think_tags", "think_tags"),
        (Shape, "think_tags", "auto"),  # a completion: inline tags whatever was asked
        (Shape, "reasoning_content", "auto"),
    ],
)
def test_the_server_streams_what_the_client_counts(shape_type: type[Shape], form: str, think: str) -> None:
    reasoning, answer = 5, 3
    shape = shape_type("m", SimulateReasoning(tokens=reasoning, format=form))
    lines = [sse(opening)] if (opening := shape.opening_chunk()) else []
    lines += [sse(shape.token_chunk(k, f" w{k}")) for k in range(reasoning + answer)]
    lines += [sse(shape.chunk("", "length")), sse(shape.usage_chunk(4, reasoning + answer)), SSE_DONE]
    parser = StreamParser(think)
    for arrived, line in enumerate(b"".join(lines).splitlines(keepends=True)):
        parser.feed(line, arrived)
    result = parser.result
    assert result.done and result.error is None
    assert len(result.chunk_ns) == reasoning + answer and result.reasoning_chunks == reasoning
    assert result.first_answer_ns is not None
    assert result.chunk_ns.index(result.first_answer_ns) == reasoning
    assert result.usage_reasoning_tokens == reasoning and result.output_tokens == reasoning + answer


def test_a_whole_answer_carries_its_reasoning_apart_or_inline() -> None:
    parts = [" a", " b", " c", " d"]
    fields = ChatShape("m", SimulateReasoning(tokens=3, format="reasoning_content")).full(parts, "length", 2)
    message = fields["choices"][0]["message"]
    assert message["reasoning_content"] == " a b c" and message["content"] == " d"
    assert fields["usage"]["completion_tokens_details"] == {"reasoning_tokens": 3}
    inline = Shape("m", SimulateReasoning(tokens=2, format="reasoning")).full(parts, "length", 2)
    assert inline["choices"][0]["text"] == "<think> a b</think> c d"
    plain = ChatShape("m").full(parts, "length", 2)
    assert plain["choices"][0]["message"] == {"role": "assistant", "content": " a b c d"}
    assert "completion_tokens_details" not in json.dumps(plain)

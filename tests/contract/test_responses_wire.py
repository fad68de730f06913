"""`POST /v1/responses` as OpenAI's official client reads it, from the built-in servers' shared
front: the simulated engine served in-process on 127.0.0.1 (a real socket, no mocks), and the
ONNX Runtime server on the bundled model as a subprocess.

Every raw event and Response object is also validated strictly against the client's own pydantic
models (the client itself builds them leniently), so a missing required field fails here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from servers.adapter import Adapter
from servers.engines.modeldir import BUNDLED_MODEL
from servers.engines.simulated_engine import SimulatedEngine
from servers.engines.tokenizer import TextTokenizer
from servers.ort import OrtServerConfig
from servers.registry import make_adapter
from tests.contract.served import serve as _serve

EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
PROMPT = "one two three four"  # four tokens to the simulated engine (words)
TOOL = {
    "type": "function",
    "name": "search",
    "description": "look it up",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    yield from _serve(SimulatedEngine(ttft=0.002, itl=0.0005, spawned_at=0))


@pytest.fixture(scope="module")
def text_only() -> Iterator[str]:
    engine = SimulatedEngine(ttft=0.0, itl=0.0, spawned_at=0)
    engine.image_tokens = None  # as the ONNX Runtime and PyTorch engines declare
    yield from _serve(engine)


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=20)


def raw_events(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream's events as sent: each `event:` line matches its data's type, no [DONE]."""
    events: list[dict[str, Any]] = []
    with httpx.stream("POST", f"{url}/v1/responses", json={**body, "stream": True}, timeout=20) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        kind = None
        for line in answer.iter_lines():
            if line.startswith("event: "):
                kind = line[len("event: ") :]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: ") :])  # [DONE] would fail here
                assert data["type"] == kind
                EVENTS.validate_python(data)  # strict: every required field is there
                events.append(data)
                kind = None
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    return events


OPENING = ["response.output_item.added", "response.content_part.added"]  # a reasoning or message item


def _closing(done: str) -> list[str]:
    return [done, "response.content_part.done", "response.output_item.done"]


def test_a_stream_with_reasoning_reads_in_order_and_matches_the_whole_answer(sim: str) -> None:
    extra = {"simulate_reasoning": {"tokens": 3, "format": "think_tags"}}  # any format: events
    client = _client(sim)
    stream = client.responses.create(
        model="simulated", input=PROMPT, max_output_tokens=8, stream=True, extra_body=extra
    )
    events = list(stream)
    kinds = [event.type for event in events]
    assert kinds == [
        "response.created",
        "response.in_progress",
        *OPENING,
        *["response.reasoning_text.delta"] * 3,
        *_closing("response.reasoning_text.done"),
        *OPENING,
        *["response.output_text.delta"] * 5,
        *_closing("response.output_text.done"),
        "response.incomplete",  # the simulated engine always runs to the limit
    ]
    assert events[0].type == "response.created" and events[0].response.status == "in_progress"
    assert events[0].response.output == [] and events[0].response.id.startswith("resp_")
    last = events[-1]
    assert last.type == "response.incomplete"
    final = last.response
    assert (
        final.max_output_tokens == 8 and final.status == "incomplete" and final.incomplete_details is not None
    )
    assert final.incomplete_details.reason == "max_output_tokens"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    thinking = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    assert final.output_text == text and text
    assert [item.type for item in final.output] == ["reasoning", "message"]
    reasoning = final.output[0]
    assert reasoning.type == "reasoning" and reasoning.content is not None
    assert reasoning.content[0].text == thinking
    # Usage as chat's: the reasoning tokens are part of the output tokens.
    usage = final.usage
    assert usage is not None and usage.input_tokens == 4
    assert usage.output_tokens == 8 == 5 + usage.output_tokens_details.reasoning_tokens
    assert usage.output_tokens_details.reasoning_tokens == 3
    assert usage.total_tokens == 12 and usage.input_tokens_details.cached_tokens == 0
    whole = client.responses.create(model="simulated", input=PROMPT, max_output_tokens=8, extra_body=extra)
    assert whole.output_text == text and whole.usage == usage


def test_the_raw_stream_is_typed_events_with_item_ids(sim: str) -> None:
    events = raw_events(sim, {"input": PROMPT, "max_output_tokens": 3})
    added = events[2]["item"]
    assert added == {
        "id": added["id"],
        "type": "message",
        "role": "assistant",
        "content": [],
        "status": "in_progress",
    }
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert len(deltas) == 3
    assert all(
        e["item_id"] == added["id"] and e["output_index"] == 0 and e["content_index"] == 0 for e in deltas
    )
    assert all(e["logprobs"] == [] for e in deltas)
    done = events[-2]["item"]
    assert done["status"] == "incomplete" and done["content"][0]["text"] == "".join(
        e["delta"] for e in deltas
    )
    Response.model_validate(events[-1]["response"])


def test_a_whole_answer_is_a_response_object(sim: str) -> None:
    raw = httpx.post(
        f"{sim}/v1/responses",
        json={"input": [{"role": "user", "content": [{"type": "input_text", "text": PROMPT}]}]},
        timeout=20,
    )
    assert raw.status_code == 200
    response = Response.model_validate(raw.json())  # strict
    assert response.object == "response" and response.model == "simulated"
    assert response.max_output_tokens is None  # echoed as sent: not given
    assert response.usage is not None and response.usage.output_tokens == 16  # chat's default limit
    parsed = _client(sim).responses.create(model="simulated", input=PROMPT, instructions="be brief")
    assert parsed.output_text and parsed.instructions == "be brief"
    assert parsed.usage is not None and parsed.usage.input_tokens == 4 + 2  # the instructions too


def test_a_simulated_tool_call_is_a_function_call_item(sim: str) -> None:
    client = _client(sim)
    body: dict[str, Any] = {"model": "simulated", "input": PROMPT, "tools": [TOOL], "max_output_tokens": 6}
    extra = {"simulate_tool_call": True}
    response = client.responses.create(**body, extra_body=extra)
    assert response.status == "completed"  # its arguments closed at the limit, as chat's tool_calls
    (call,) = response.output
    assert call.type == "function_call" and call.name == "search" and call.call_id.startswith("call_")
    assert set(json.loads(call.arguments)) == {"query"}
    events = list(client.responses.create(**body, stream=True, extra_body=extra))
    kinds = [event.type for event in events]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        *["response.function_call_arguments.delta"] * 6,
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    arguments = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    done = events[-1]
    assert done.type == "response.completed"
    streamed = done.response.output[0]
    assert streamed.type == "function_call" and streamed.arguments == arguments
    json.loads(arguments)
    # tool_choice "none" answers text; a named choice picks that tool
    plain = client.responses.create(**body, tool_choice="none", extra_body=extra)
    assert plain.output[0].type == "message"
    other = {**TOOL, "name": "fetch"}
    named = client.responses.create(
        **{**body, "tools": [TOOL, other]},
        tool_choice={"type": "function", "name": "fetch"},
        extra_body=extra,
    )
    assert named.output[0].type == "function_call" and named.output[0].name == "fetch"


def test_a_prior_turns_items_are_read_into_the_prompt(sim: str) -> None:
    items: list[Any] = [
        {"role": "user", "content": PROMPT},
        {"type": "function_call", "call_id": "call_1", "name": "search", "arguments": '{"query": "five"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "six seven"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "eight"}]},
    ]
    response = _client(sim).responses.create(model="simulated", input=items, max_output_tokens=2)
    assert response.usage is not None and response.usage.input_tokens == 4 + 2 + 2 + 1


def test_refusals_are_openai_errors(sim: str, text_only: str) -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    content = [{"type": "input_text", "text": PROMPT}, image]
    user: list[Any] = [{"role": "user", "content": content}]
    with pytest.raises(openai.BadRequestError) as caught:
        _client(text_only).responses.create(model="simulated", input=user)
    assert "this model takes no images" in str(caught.value)
    with_image = _client(sim).responses.create(model="simulated", input=user, max_output_tokens=1)
    assert with_image.usage is not None and with_image.usage.input_tokens == 4 + 256  # as chat counts it
    with pytest.raises(openai.NotFoundError):
        _client(sim).responses.create(model="another", input=PROMPT)
    with pytest.raises(openai.NotFoundError) as missing:
        _client(sim).responses.create(model="simulated", input=PROMPT, previous_response_id="resp_1")
    assert "Previous response with id 'resp_1' not found." in str(missing.value)
    bad = httpx.post(f"{sim}/v1/responses", json={"model": "simulated", "input": 7}, timeout=20)
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "invalid_request_error" and bad.json()["error"]["code"] == 400


def test_a_stored_response_is_continued_with_its_whole_conversation(sim: str) -> None:
    """store (true by default) keeps a response; previous_response_id puts its conversation (its
    input, its output) before the new input: the prompt counts as the whole history sent again."""
    client = _client(sim)
    first = client.responses.create(model="simulated", input=PROMPT, max_output_tokens=3)
    assert first.model_dump()["store"] is True and first.id.startswith("resp_") and first.usage is not None
    assert first.usage.input_tokens == 4
    news: list[Any] = [{"role": "user", "content": "five six"}]
    second = client.responses.create(
        model="simulated", input=news, previous_response_id=first.id, max_output_tokens=2
    )
    assert second.previous_response_id == first.id and second.id != first.id
    whole: list[Any] = [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": first.output_text},
        *news,
    ]
    again = client.responses.create(model="simulated", input=whole, max_output_tokens=2)
    assert second.usage is not None and again.usage is not None
    assert second.usage.input_tokens == again.usage.input_tokens > 4 + 2
    streamed = raw_events(sim, {"input": news, "previous_response_id": second.id, "max_output_tokens": 1})
    assert streamed[0]["response"]["previous_response_id"] == second.id
    assert streamed[-1]["response"]["usage"]["input_tokens"] > second.usage.input_tokens + 2
    unkept = client.responses.create(model="simulated", input=PROMPT, max_output_tokens=1, store=False)
    assert unkept.model_dump()["store"] is False
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="simulated", input=news, previous_response_id=unkept.id)


def test_metrics_and_timings_count_responses(sim: str) -> None:
    before = httpx.get(f"{sim}/debug/timings", timeout=20).json()
    raw_events(sim, {"input": PROMPT, "max_output_tokens": 4})
    after = httpx.get(f"{sim}/debug/timings", timeout=20).json()
    assert after["requests"] == before["requests"] + 1 and after["itl_p50_ms"] is not None
    metrics = httpx.get(f"{sim}/metrics", timeout=20).text
    assert 'endpoint="/v1/responses",status="200"' in metrics


@pytest.fixture(scope="module")
def ort(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    adapter: Adapter = make_adapter(OrtServerConfig.model_validate({"kind": "onnxruntime"}))
    try:
        yield adapter.start(tmp_path_factory.mktemp("ort") / "server.log").base_url
    finally:
        adapter.stop()


def test_the_onnx_runtime_server_answers_responses(ort: str) -> None:
    client = _client(ort)
    body: dict[str, Any] = {
        "model": "tiny",
        "input": PROMPT,
        "max_output_tokens": 5,
        "instructions": "be brief",
    }
    events = raw_events(ort, {**body, "ignore_eos": True})
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    whole = client.responses.create(**body, extra_body={"ignore_eos": True})
    assert whole.output_text == text  # greedy: the same text
    tokenizer = TextTokenizer.from_dir(BUNDLED_MODEL)
    chat = tokenizer.render_chat(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": PROMPT}]
    )
    assert whole.usage is not None and whole.usage.input_tokens == len(tokenizer.encode(chat))
    assert whole.usage.output_tokens == 5
    image: list[Any] = [
        {"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}
    ]
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="tiny", input=image)


def test_a_client_gone_mid_stream_is_counted_as_chat_s(sim: str) -> None:
    body = {"input": PROMPT, "max_output_tokens": 2000, "stream": True}
    with httpx.stream("POST", f"{sim}/v1/responses", json=body, timeout=20) as answer:
        lines = answer.iter_lines()
        while "response.output_text.delta" not in next(lines):
            pass
    for _ in range(100):  # the handler is cancelled once the server sees the connection close
        metrics = httpx.get(f"{sim}/metrics", timeout=20).text
        if 'endpoint="/v1/responses",status="499"' in metrics:
            break
        time.sleep(0.05)
    assert 'endpoint="/v1/responses",status="499"' in metrics

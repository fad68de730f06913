"""`api: embeddings` (loadgen.wire.embeddings and the embeddings slice): the request as OpenAI's
embeddings API takes it, its answer read from recorded bodies (tests/data/embeddings/, written
from the documented embeddings object), and the batch a scenario draws. An answer whose vector
count is not the inputs sent is a failure of its own kind; a body that is not an answer is a
failure with a reason, never a traceback."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from loadgen.features import slice_draws
from loadgen.features.embeddings.attach import EMBEDDING_ATTACHMENT
from loadgen.features.slice import Asking
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.wire.apis import WIRE_APIS, carries, wire_api
from loadgen.wire.call import Call, EmbeddingAsk, WireRequest

DATA = Path(__file__).parents[1] / "data" / "embeddings"
PLAIN = Call(model="m", prompt="one two", max_tokens=7, ignore_eos=True, stream=False)


def sent(call: Call) -> tuple[WireRequest, dict[str, Any]]:
    request = wire_api("embeddings").request(call)
    assert (request.path, request.content_type) == ("/v1/embeddings", "application/json")
    parsed: dict[str, Any] = orjson.loads(request.data)
    return request, parsed


def read(body: bytes, request: WireRequest) -> Any:
    reader = wire_api("embeddings").reader(think="auto", calls=False, keep_text=False, request=request)
    reader.feed_body(body, 123)
    return reader.result


def test_a_plain_request_embeds_its_prompt_as_floats() -> None:
    request, body = sent(PLAIN)
    assert body == {"model": "m", "input": ["one two"], "encoding_format": "float"}
    assert (request.items, request.answers) == (1, 1)
    api = WIRE_APIS["embeddings"]
    assert api.metrics == "latency" and not any(carries("embeddings", p) for p in ("messages", "tools"))


def test_a_batch_sends_the_prompt_then_its_items_with_the_ask() -> None:
    call = dataclasses.replace(PLAIN, items=["three", "four"], embedding=EmbeddingAsk("base64", 256))
    request, body = sent(call)
    assert body == {
        "model": "m",
        "input": ["one two", "three", "four"],
        "encoding_format": "base64",
        "dimensions": 256,
    }
    assert (request.items, request.answers) == (3, 3)
    with pytest.raises(ValueError, match="texts only"):
        wire_api("embeddings").request(dataclasses.replace(PLAIN, content_parts=[{"type": "x"}]))


@pytest.mark.parametrize(("name", "inputs", "tokens"), [("float3.json", 3, 24), ("base64_2.json", 2, 16)])
def test_a_recorded_answer_reads_as_its_vectors_and_usage(name: str, inputs: int, tokens: int) -> None:
    result = read(
        (DATA / name).read_bytes(), WireRequest("/v1/embeddings", b"", items=inputs, answers=inputs)
    )
    assert (result.error, result.done, result.done_ns) == (None, True, 123)
    assert (result.items, result.usage_prompt_tokens, result.output_tokens) == (inputs, tokens, 0)
    assert result.first_token_ns is None  # no token stream: latency only


def test_a_vector_count_that_disagrees_is_a_wrong_count_failure() -> None:
    result = read((DATA / "float3.json").read_bytes(), WireRequest("/v1/embeddings", b"", items=4, answers=4))
    assert (result.error, result.error_kind, result.done, result.items) == (
        "3 results for 4 asked",
        "wrong_count",
        False,
        3,
    )


@pytest.mark.parametrize(
    ("body", "error", "kind"),
    [
        (
            (DATA / "error_in_body.json").read_bytes(),
            "the server's error: This model's maximum context length",
            "http",
        ),
        (b'{"object": "list"}', "the answer holds no results", "protocol"),
        (b'{"data": {"not": "a list"}}', "unreadable answer", "protocol"),
        (b"<html>502 Bad Gateway</html>", "unreadable answer", "protocol"),
        (b'{"data": [1, 2', "unreadable answer", "protocol"),
    ],
)
def test_a_body_that_is_no_answer_fails_with_its_reason(body: bytes, error: str, kind: str) -> None:
    result = read(body, WireRequest("/v1/embeddings", b"", items=1, answers=1))
    assert result.error is not None and result.error.startswith(error)
    assert (result.error_kind, result.done) == (kind, False)


def test_a_stream_where_one_body_was_due_fails() -> None:
    reader = wire_api("embeddings").reader(think="auto", calls=False, keep_text=False)
    assert reader.feed_lines([b"data: {}"], 1) is True and reader.result.error


SCENARIO = """\
name: e
seed: 7
server: {kind: simulated}
workload:
  api: embeddings
  prompt_tokens: {kind: fixed, value: 12}
  embeddings: {inputs: {kind: uniform, min: 1, max: 6}, encoding_format: base64}
traffic: [{kind: constant, rate: 10, duration: 10s}]
"""


def test_the_batch_is_drawn_from_its_own_seeded_stream_and_attached_as_unique_texts() -> None:
    scenario = parse_scenario(SCENARIO)
    workload = scenario.workload
    assert workload.stream is False  # an API of items answers whole
    plan = slice_draws(scenario.classes, scenario.seed)["embeddings"]
    classes = np.zeros(400, dtype=np.int64)
    whole = plan.cursor().take(classes)
    cursor = plan.cursor()
    chunked = np.concatenate([cursor.take(classes[:150]), cursor.take(classes[150:])])
    assert np.array_equal(whole, chunked)  # a chunk at a time draws what one take does
    assert set(whole.tolist()) == set(range(1, 7))
    assert 3.0 < whole.mean() < 4.0  # uniform 1..6: mean 3.5
    texts: list[str] = []
    for request_id in (0, 1):
        attached = EMBEDDING_ATTACHMENT.attach(workload, Asking("default", request_id, 5, None, 12))
        assert len(attached.items) == 4 and attached.embedding == EmbeddingAsk("base64", None)
        assert all(len(text.split()) == 12 for text in attached.items)
        texts.extend(attached.items)
    assert len(set(texts)) == len(texts)


@pytest.mark.parametrize(
    ("change", "where", "says"),
    [
        ("  api: embeddings\n", "workload.embeddings", "needs api: embeddings (the workload's is chat)"),
        ("  prompt_tokens:", "workload.stream", "answers in one body, not a stream"),
        ("traffic:", "slo.ttft", "ttft does not apply to api: embeddings (no tokens stream): bound e2e"),
    ],
)
def test_what_an_embeddings_workload_cannot_do_is_refused_where_it_is_given(
    change: str, where: str, says: str
) -> None:
    text = {
        "  api: embeddings\n": SCENARIO.replace("  api: embeddings\n", ""),
        "  prompt_tokens:": SCENARIO.replace("  prompt_tokens:", "  stream: true\n  prompt_tokens:"),
        "traffic:": SCENARIO + "slo:\n  ttft: {p95: 1s}\n  e2e: {p95: 1s}\n",
    }[change]
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text)
    issues = [str(issue) for issue in caught.value.issues]
    assert any(where in issue and says in issue for issue in issues), issues


def test_a_mix_with_a_generating_class_keeps_its_token_slos() -> None:
    mix = (
        SCENARIO.replace(
            "workload:\n  api: embeddings\n",
            "workload:\n  - class: chat\n    weight: 1\n"
            "  - class: embed\n    weight: 1\n    api: embeddings\n",
        )
        .replace("  prompt_tokens", "    prompt_tokens")
        .replace("  embeddings:", "    embeddings:")
    )
    scenario = parse_scenario(mix + "slo:\n  ttft: {p95: 1s}\n")
    assert [w.api for _, _, w in scenario.classes] == ["chat", "embeddings"]
    with pytest.raises(ScenarioError, match=r"slo\.classes\.embed\.ttft: ttft does not apply"):
        parse_scenario(mix + "slo:\n  classes:\n    embed:\n      ttft: {p95: 1s}\n")

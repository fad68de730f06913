"""`api: score` (loadgen.wire.score): a query against the rerank slice's documents as vLLM's
`/score` takes them (`text_1`, `text_2`), and the answer read from a recorded body
(tests/data/rerank/score.json, written from that format): one score per document, each naming a
document sent, none twice; anything else fails with its reason."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest

from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.wire.apis import wire_api
from loadgen.wire.call import Call, RerankAsk, WireRequest

DATA = Path(__file__).parents[1] / "data" / "rerank"
QUERY = Call(model="m", prompt="which one", max_tokens=7, ignore_eos=True, stream=False)


def read(body: bytes, documents: int) -> Any:
    request = WireRequest("/score", b"", items=documents, answers=documents)
    reader = wire_api("score").reader(think="auto", calls=False, keep_text=False, request=request)
    reader.feed_body(body, 9)
    return reader.result


def test_the_query_is_text_1_and_the_documents_text_2() -> None:
    call = dataclasses.replace(QUERY, items=["a", "b", "c"], rerank=RerankAsk(None))
    request = wire_api("score").request(call)
    assert (request.path, request.items, request.answers) == ("/score", 3, 3)
    assert orjson.loads(request.data) == {"model": "m", "text_1": "which one", "text_2": ["a", "b", "c"]}
    with pytest.raises(ValueError, match="carries texts only"):
        wire_api("score").request(dataclasses.replace(call, messages=[{"role": "user", "content": "x"}]))


def test_a_recorded_answer_reads_as_its_scores_and_usage() -> None:
    result = read((DATA / "score.json").read_bytes(), documents=2)
    assert (result.error, result.done, result.done_ns, result.items, result.usage_prompt_tokens) == (
        None,
        True,
        9,
        2,
        14,
    )


def _body(data: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"object": "list", "data": data, "usage": {"prompt_tokens": 5, "total_tokens": 5}})


@pytest.mark.parametrize(
    ("body", "documents", "error", "kind"),
    [
        ((DATA / "score.json").read_bytes(), 3, "2 results for 3 asked", "wrong_count"),
        (
            _body([{"index": 0, "score": 0.5}, {"index": 2, "score": 0.1}]),
            2,
            "names document 2 of 2",
            "protocol",
        ),
        (
            _body([{"index": 1, "score": 0.5}, {"index": 1, "score": 0.1}]),
            2,
            "names document 1 of 2",
            "protocol",
        ),
        (_body([{"index": 0, "score": "high"}]), 1, "document 0's score is 'high'", "protocol"),
        ((DATA / "error.json").read_bytes(), 2, "the server's error: documents must not be empty", "http"),
        (b'{"detail": "Not Found"}', 2, "the server's error: Not Found", "http"),
        (b"<html>busy</html>", 2, "unreadable answer", "protocol"),
        (b'{"object": "list"}', 2, "the answer holds no results", "protocol"),
    ],
)
def test_scores_that_disagree_with_the_query_fail_with_their_reason(
    body: bytes, documents: int, error: str, kind: str
) -> None:
    result = read(body, documents)
    assert result.error is not None and error in result.error, result.error
    assert (result.error_kind, result.done) == (kind, False)


SCENARIO = """\
name: s
seed: 11
server: {kind: simulated}
workload:
  api: score
  prompt_tokens: {kind: fixed, value: 8}
  rerank:
    documents: {kind: uniform, min: 2, max: 40}
    document_tokens: {kind: uniform, min: 5, max: 50}
traffic: [{kind: constant, rate: 10, duration: 10s}]
"""


def test_a_score_workload_takes_the_rerank_documents_but_not_top_n() -> None:
    assert parse_scenario(SCENARIO).workload.api == "score"
    with pytest.raises(ScenarioError, match=r"workload\.api: api: score needs rerank: \{documents"):
        parse_scenario(
            SCENARIO.split("  rerank:")[0] + "traffic: [{kind: constant, rate: 1, duration: 9s}]\n"
        )
    top_n = SCENARIO.replace("    document_tokens:", "    top_n: 3\n    document_tokens:")
    with pytest.raises(ScenarioError, match=r"workload\.rerank\.top_n: top_n does not apply to api: score"):
        parse_scenario(top_n)

"""`api: rerank` (loadgen.wire.rerank and the rerank slice): a query and its documents as the
Jina/Cohere rerank API that vLLM serves takes them, and the answer read from recorded bodies
(tests/data/rerank/, written from that format): `top_n` results, each naming a document sent,
none twice; anything else fails with its reason."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from loadgen.features import slice_draws
from loadgen.features.rerank.attach import RERANK_ATTACHMENT
from loadgen.features.rerank.draws import documents_of
from loadgen.features.slice import Asking
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.wire.apis import wire_api
from loadgen.wire.call import Call, RerankAsk, WireRequest

DATA = Path(__file__).parents[1] / "data" / "rerank"
QUERY = Call(model="m", prompt="which one", max_tokens=7, ignore_eos=True, stream=False)


def read(body: bytes, documents: int, answers: int) -> Any:
    request = WireRequest("/v1/rerank", b"", items=documents, answers=answers)
    reader = wire_api("rerank").reader(think="auto", calls=False, keep_text=False, request=request)
    reader.feed_body(body, 9)
    return reader.result


def test_the_query_is_the_prompt_and_the_documents_its_items() -> None:
    call = dataclasses.replace(QUERY, items=["a", "b", "c", "d", "e"], rerank=RerankAsk(3))
    request = wire_api("rerank").request(call)
    body = orjson.loads(request.data)
    assert (request.path, request.items, request.answers) == ("/v1/rerank", 5, 3)
    assert body == {
        "model": "m",
        "query": "which one",
        "documents": ["a", "b", "c", "d", "e"],
        "top_n": 3,
        "return_documents": False,
    }
    every = wire_api("rerank").request(dataclasses.replace(call, rerank=RerankAsk(None)))
    assert "top_n" not in orjson.loads(every.data) and every.answers == 5  # every document back
    assert wire_api("rerank").request(dataclasses.replace(call, rerank=RerankAsk(9))).answers == 5


def test_a_recorded_answer_reads_as_its_results_and_usage() -> None:
    result = read((DATA / "top3.json").read_bytes(), documents=5, answers=3)
    assert (result.error, result.done, result.done_ns, result.items, result.usage_prompt_tokens) == (
        None,
        True,
        9,
        3,
        96,
    )


@pytest.mark.parametrize(
    ("name", "documents", "answers", "error", "kind"),
    [
        ("top3.json", 5, 4, "3 results for 4 asked", "wrong_count"),
        ("top3.json", 4, 3, "a result names document 4 of 4 sent", "protocol"),
        ("duplicate_index.json", 5, 2, "a result names document 1 of 5 sent", "protocol"),
        ("error_in_body.json", 5, 3, "the server's error: [{'type': 'missing'", "http"),
    ],
)
def test_results_that_disagree_with_the_query_fail_with_their_reason(
    name: str, documents: int, answers: int, error: str, kind: str
) -> None:
    result = read((DATA / name).read_bytes(), documents, answers)
    assert result.error is not None and error in result.error, result.error
    assert (result.error_kind, result.done) == (kind, False)


SCENARIO = """\
name: r
seed: 11
server: {kind: simulated}
workload:
  api: rerank
  prompt_tokens: {kind: fixed, value: 8}
  rerank:
    documents: {kind: uniform, min: 2, max: 40}
    document_tokens: {kind: uniform, min: 5, max: 50}
    top_n: 3
traffic: [{kind: constant, rate: 10, duration: 10s}]
"""


def test_documents_and_their_lengths_come_from_the_slices_own_seeded_stream() -> None:
    scenario = parse_scenario(SCENARIO)
    plan = slice_draws(scenario.classes, scenario.seed)["rerank"]
    classes = np.zeros(300, dtype=np.int64)
    whole = plan.cursor().take(classes)
    cursor = plan.cursor()
    assert np.array_equal(whole, np.concatenate([cursor.take(classes[:77]), cursor.take(classes[77:])]))
    counts = [documents_of(int(value))[0] for value in whole]
    assert min(counts) == 2 and max(counts) == 40 and 18 < np.mean(counts) < 24  # uniform 2..40: 21
    workload = scenario.workload
    attached = RERANK_ATTACHMENT.attach(workload, Asking("default", 3, int(whole[0]), None, 8))
    again = RERANK_ATTACHMENT.attach(workload, Asking("default", 3, int(whole[0]), None, 8))
    assert attached == again and len(attached.items) == counts[0] and attached.rerank == RerankAsk(3)
    lengths = [len(text.split()) for text in attached.items]
    assert all(5 <= n <= 50 for n in lengths) and len(set(attached.items)) == len(attached.items)


def test_a_rerank_workload_needs_its_documents_and_only_rerank_takes_them() -> None:
    without = SCENARIO.split("  rerank:")[0] + "traffic: [{kind: constant, rate: 1, duration: 9s}]\n"
    with pytest.raises(ScenarioError, match=r"workload\.api: api: rerank needs rerank: \{documents"):
        parse_scenario(without)
    with pytest.raises(ScenarioError, match=r"workload\.rerank: rerank: needs api: rerank"):
        parse_scenario(SCENARIO.replace("api: rerank", "api: chat"))

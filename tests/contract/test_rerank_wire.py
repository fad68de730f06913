"""`POST /rerank` (and vLLM's `/v1/rerank`, `/v2/rerank`) and `POST /score` (and `/v1/score`) from
the built-in servers' shared front, read with httpx (the openai client has no rerank): the
simulated engine in-process on 127.0.0.1, the ONNX Runtime server on the bundled model."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from servers.adapter import Adapter
from servers.engines.engine import cosine
from servers.engines.seeded_vectors import seeded_vector
from servers.engines.simulated_engine import PoolingTiming, SimulatedEngine
from servers.ort import OrtServerConfig
from servers.registry import make_adapter
from tests.contract.served import serve

DATA = Path(__file__).resolve().parents[1] / "data" / "rerank"
QUERY = "where is paris"
DOCUMENTS = ["paris is in france", "where is paris", "bananas are yellow", "paris"]


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    yield from serve(
        SimulatedEngine(spawned_at=0, pooling=PoolingTiming(rerank_base=0.0, rerank_per_document=0.0))
    )


def _post(url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}{path}", json=body, timeout=30)


def _expected(query: str, document: str) -> float:
    return cosine(seeded_vector(query, 384), seeded_vector(document, 384))


@pytest.mark.parametrize("path", ["/rerank", "/v1/rerank", "/v2/rerank"])
def test_rerank_answers_every_document_best_first(sim: str, path: str) -> None:
    answer = _post(sim, path, {"model": "simulated", "query": QUERY, "documents": DOCUMENTS})
    assert answer.status_code == 200
    body = answer.json()
    results = body["results"]
    scores = [r["relevance_score"] for r in results]
    assert sorted(r["index"] for r in results) == [0, 1, 2, 3] and scores == sorted(scores, reverse=True)
    assert results[0]["index"] == 1 and abs(scores[0] - 1) < 1e-12  # the query itself
    for result in results:
        assert result["document"] == {"text": DOCUMENTS[result["index"]]}
        assert abs(result["relevance_score"] - _expected(QUERY, DOCUMENTS[result["index"]])) < 1e-12
    # As vLLM counts: the query once per document, words to the simulated engine (3 × 4 + 4 + 3 + 3 + 1)
    assert body["usage"] == {"total_tokens": 23} and body["model"] == "simulated"
    assert body["id"].startswith("rerank-")


def test_top_n_and_return_documents(sim: str) -> None:
    every = _post(sim, "/rerank", {"query": QUERY, "documents": DOCUMENTS}).json()["results"]
    top = _post(
        sim, "/rerank", {"query": QUERY, "documents": DOCUMENTS, "top_n": 2, "return_documents": False}
    )
    results = top.json()["results"]
    assert [r["index"] for r in results] == [r["index"] for r in every[:2]]
    assert all(set(r) == {"index", "relevance_score"} for r in results)
    cohere = _post(sim, "/v2/rerank", {"query": QUERY, "documents": [{"text": d} for d in DOCUMENTS]})
    assert [r["index"] for r in cohere.json()["results"]] == [r["index"] for r in every]


def test_score_one_text_against_a_list_and_pairwise(sim: str) -> None:
    body = _post(sim, "/score", {"model": "simulated", "text_1": QUERY, "text_2": DOCUMENTS}).json()
    assert body["object"] == "list" and body["id"].startswith("score-")
    assert [(d["index"], d["object"]) for d in body["data"]] == [(i, "score") for i in range(4)]
    for item, document in zip(body["data"], DOCUMENTS, strict=True):  # in the given order
        assert abs(item["score"] - _expected(QUERY, document)) < 1e-12
    assert body["usage"] == {"prompt_tokens": 23, "total_tokens": 23, "completion_tokens": 0}
    pairs = _post(sim, "/v1/score", {"text_1": ["a", "b c"], "text_2": ["a", "d"]}).json()
    assert [d["score"] for d in pairs["data"]] == pytest.approx([1.0, _expected("b c", "d")], abs=1e-12)
    single = _post(sim, "/score", {"text_1": ["a"], "text_2": "a"}).json()
    assert len(single["data"]) == 1 and abs(single["data"][0]["score"] - 1) < 1e-12


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("/rerank", {"query": "q", "documents": []}, "documents must not be empty"),
        ("/rerank", {"documents": ["a"]}, "query"),
        ("/rerank", {"query": "q", "documents": "a"}, "documents"),
        ("/rerank", {"query": "q", "documents": ["a"], "top_n": -1}, "top_n"),
        ("/score", {"text_1": ["a", "b"], "text_2": ["a", "b", "c"]}, "give one text_1"),
        ("/score", {"text_1": [], "text_2": ["a"]}, "must not be empty"),
        ("/score", {"text_1": "a"}, "text_2"),
    ],
)
def test_a_bad_body_is_a_400_openai_error(sim: str, path: str, body: dict[str, Any], says: str) -> None:
    answer = _post(sim, path, body)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == 400 and says in error["message"]


def test_another_model_is_a_404(sim: str) -> None:
    answer = _post(sim, "/rerank", {"model": "other", "query": "q", "documents": ["a"]})
    assert answer.status_code == 404 and answer.json()["error"]["type"] == "not_found_error"


def test_the_answers_have_the_recorded_bodies_shape(sim: str) -> None:
    """tests/data/rerank/ (written from vLLM's documented formats): the same keys."""
    recorded = json.loads((DATA / "rerank.json").read_text())
    ours = _post(sim, "/rerank", {"query": QUERY, "documents": DOCUMENTS}).json()
    assert set(ours) == set(recorded) and set(ours["usage"]) == set(recorded["usage"])
    assert set(ours["results"][0]) == set(recorded["results"][0])
    bare = json.loads((DATA / "rerank_without_documents.json").read_text())
    ours = _post(sim, "/rerank", {"query": QUERY, "documents": DOCUMENTS, "return_documents": False}).json()
    assert set(ours["results"][0]) == set(bare["results"][0])
    scored = json.loads((DATA / "score.json").read_text())
    ours = _post(sim, "/score", {"text_1": QUERY, "text_2": DOCUMENTS}).json()
    assert set(ours) == set(scored) and set(ours["data"][0]) == set(scored["data"][0])
    assert set(ours["usage"]) == set(scored["usage"])
    error = _post(sim, "/rerank", {"query": "q", "documents": []}).json()
    assert set(error["error"]) <= set(json.loads((DATA / "error.json").read_text())["error"])


BASE, PER_DOCUMENT = 0.03, 0.01
TIMER_SLACK_S, UPPER_SLACK_S = 0.002, 0.15  # an early wake-up; a busy shared machine (not a benchmark)


def test_the_simulated_latency_is_base_plus_per_document() -> None:
    engine = SimulatedEngine(
        spawned_at=0, pooling=PoolingTiming(rerank_base=BASE, rerank_per_document=PER_DOCUMENT)
    )
    for url in serve(engine):
        with httpx.Client(timeout=20) as client:
            client.post(f"{url}/rerank", json={"query": "q", "documents": ["warm"]})  # the connection
            for path, body, documents in (
                ("/rerank", {"query": "q", "documents": ["a"] * 6}, 6),
                ("/score", {"text_1": "q", "text_2": ["a"] * 2}, 2),
            ):
                sent = time.perf_counter()
                assert client.post(f"{url}{path}", json=body).status_code == 200
                elapsed = time.perf_counter() - sent
                expected = BASE + PER_DOCUMENT * documents
                assert expected - TIMER_SLACK_S <= elapsed <= expected + UPPER_SLACK_S
            metrics = client.get(f"{url}/metrics").text
            record = client.get(f"{url}/debug/timings").json()
    assert 'loadtest_server_pooling_seconds_count{endpoint="/rerank"} 2.0' in metrics
    assert 'loadtest_server_requests_total{endpoint="/score",status="200"} 1.0' in metrics
    assert (
        record["pooling_requests"] == 3 and record["pooling_p99_ms"] >= (BASE + 6 * PER_DOCUMENT) * 1000 - 2
    )


@pytest.fixture(scope="module")
def ort(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    adapter: Adapter = make_adapter(OrtServerConfig.model_validate({"kind": "onnxruntime"}))
    try:
        yield adapter.start(tmp_path_factory.mktemp("ort") / "server.log").base_url
    finally:
        adapter.stop()


def test_the_onnx_runtime_server_scores_by_the_cosine_of_its_embeddings(ort: str) -> None:
    documents = ["hello world", "the quick brown fox", "hello"]
    ranked = _post(ort, "/rerank", {"model": "tiny", "query": "hello world", "documents": documents}).json()
    assert ranked["results"][0]["index"] == 0 and abs(ranked["results"][0]["relevance_score"] - 1) < 1e-5
    vectors = _post(ort, "/v1/embeddings", {"input": ["hello world", *documents]}).json()["data"]
    expected = [cosine(vectors[0]["embedding"], v["embedding"]) for v in vectors[1:]]
    for result in ranked["results"]:
        assert abs(result["relevance_score"] - expected[result["index"]]) < 1e-5
    scored = _post(ort, "/score", {"text_1": "hello world", "text_2": documents}).json()
    assert [d["score"] for d in scored["data"]] == pytest.approx(expected, abs=1e-5)
    assert scored["usage"]["prompt_tokens"] == ranked["usage"]["total_tokens"] > 0

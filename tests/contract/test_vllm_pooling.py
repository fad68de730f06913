"""`api: embeddings`, `api: rerank` and `api: score` against vLLM itself (CPU build): the bundled
tiny model served as a pooling model (`--runner pooling --convert embed`), sent what loadtest
sends and read by loadtest's readers. No one here wrote this server: proof that the wire formats are the real
ones. Its own vLLM start (~46 s here): a pooling server cannot serve the shared one's chat."""

from __future__ import annotations

import dataclasses
import http.client
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadgen.wire.answer import StreamResult
from loadgen.wire.apis import wire_api
from loadgen.wire.call import Call, EmbeddingAsk, RerankAsk
from servers.adapter import Endpoint
from tests.contract.adapter_contract import stop_leaves_no_process
from tests.vllm_server import SERVED_NAME, vllm, vllm_model, vllm_python

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    log = Path(tmp_path_factory.mktemp("vllm-pooling")) / "server.log"
    args = ["--runner", "pooling", "--convert", "embed"]
    adapter = vllm(python=vllm_python(), model=vllm_model(), served_model_name=SERVED_NAME, args=args)
    try:
        started = adapter.start(log)
    except BaseException:
        adapter.stop()
        raise
    try:
        yield started
    finally:
        stop_leaves_no_process(adapter, started)


def _answer(endpoint: Endpoint, api: str, call: Call) -> tuple[int, StreamResult]:
    request = wire_api(api).request(call)
    conn = http.client.HTTPConnection(endpoint.base_url.removeprefix("http://"), timeout=60)
    try:
        conn.request("POST", request.path, body=request.data, headers={"Content-Type": request.content_type})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    reader = wire_api(api).reader(think="auto", calls=False, keep_text=False, request=request)
    if response.status == 200:
        reader.feed_body(body, time.perf_counter_ns())
    else:
        reader.result.error = body.decode("utf-8", "replace")[:300]
    return response.status, reader.result


TEXT = Call(model=SERVED_NAME, prompt="the quick brown fox", max_tokens=1, ignore_eos=False, stream=False)


@pytest.mark.parametrize("encoding", ["float", "base64"])
def test_its_embeddings_are_read_as_loadtest_reads_them(endpoint: Endpoint, encoding: str) -> None:
    call = dataclasses.replace(TEXT, items=["jumps over", "the lazy dog"], embedding=EmbeddingAsk(encoding))
    status, result = _answer(endpoint, "embeddings", call)
    assert (status, result.error) == (200, None)
    assert result.done and result.items == 3  # one vector per input, counted as sent
    assert result.usage_prompt_tokens is not None and result.usage_prompt_tokens >= 6


def test_its_rerank_results_are_checked_as_loadtest_checks_them(endpoint: Endpoint) -> None:
    documents = ["a red apple", "the stock market", "green pears", "an orange"]
    call = dataclasses.replace(TEXT, prompt="fruit", items=documents, rerank=RerankAsk(2))
    status, result = _answer(endpoint, "rerank", call)
    assert (status, result.error) == (200, None)
    assert result.done and result.items == 2  # top_n of them, each a document sent
    every = dataclasses.replace(call, rerank=RerankAsk(None))
    status, result = _answer(endpoint, "rerank", every)
    assert (status, result.error, result.items) == (200, None, 4)


def test_its_scores_are_read_as_loadtest_reads_them(endpoint: Endpoint) -> None:
    documents = ["a red apple", "the stock market", "green pears"]
    call = dataclasses.replace(TEXT, prompt="fruit", items=documents, rerank=RerankAsk(None))
    status, result = _answer(endpoint, "score", call)  # POST /score {text_1, text_2}
    assert (status, result.error) == (200, None)
    assert result.done and result.items == 3  # one score per document, each a document sent
    assert result.usage_prompt_tokens is not None and result.usage_prompt_tokens >= 3

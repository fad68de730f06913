"""The simulated server's prefix cache and cancellations over real HTTP (a server subprocess
started by its adapter, so the scenario keys reach the CLI): usage's cached_tokens, the /metrics
counters, the TTFT a hit saves, and a client that closes its stream mid-answer."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from servers.adapter import Adapter, Endpoint
from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig
from tests.metrics_helpers import fetch

pytestmark = pytest.mark.timing

PER_TOKEN = 0.001  # 1 ms per uncached prompt token: a 64-word miss costs 64 ms more than a hit


def _start(tmp_path_factory: pytest.TempPathFactory, **options: Any) -> Iterator[Endpoint]:
    config = SimulatedServerConfig.model_validate({"kind": "simulated", **options})
    adapter: Adapter = make_adapter(config)
    try:
        yield adapter.start(tmp_path_factory.mktemp("server") / "server.log")
    finally:
        adapter.stop()


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    yield from _start(
        tmp_path_factory,
        ttft="5ms",
        itl="1ms",
        prefill_per_token="1ms",
        prefix_cache_blocks=16,
        block_tokens=16,
    )


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    yield from _start(tmp_path_factory, ttft="5ms", itl="5ms")


def _connect(endpoint: Endpoint) -> http.client.HTTPConnection:
    parts = urlsplit(endpoint.base_url)
    assert parts.hostname is not None
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)


def _port(endpoint: Endpoint) -> int:
    port = urlsplit(endpoint.base_url).port
    assert port is not None
    return port


def _metric(endpoint: Endpoint, name: str) -> float:
    samples = fetch(_port(endpoint))
    assert samples is not None
    return sum(value for sample, _, value in samples if sample == name)


def _post(endpoint: Endpoint, path: str, body: dict[str, Any]) -> dict[str, Any]:
    conn = _connect(endpoint)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        result: dict[str, Any] = json.loads(response.read())
        return result
    finally:
        conn.close()


def _stream(endpoint: Endpoint, path: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """(seconds from sending to the first content chunk, the usage object)."""
    conn = _connect(endpoint)
    payload = {**body, "stream": True, "stream_options": {"include_usage": True}}
    try:
        sent = time.perf_counter()
        conn.request("POST", path, body=json.dumps(payload), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        first: float | None = None
        usage: dict[str, Any] = {}
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[len("data: ") :])
            choices = chunk["choices"]
            has_text = choices and (choices[0].get("text") or choices[0].get("delta", {}).get("content"))
            if first is None and has_text:
                first = time.perf_counter() - sent
            usage = chunk.get("usage") or usage
        assert first is not None
        return first, usage
    finally:
        conn.close()


def words(count: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(count))


def test_usage_and_metrics_report_the_cached_prompt_tokens(cached: Endpoint) -> None:
    base = {"model": cached.model, "max_tokens": 4, "ignore_eos": True}
    _stream(cached, "/v1/completions", {**base, "prompt": "warm up"})  # first-request costs out of the way
    queries = _metric(cached, "loadtest_server_prefix_cache_queries_total")
    hits = _metric(cached, "loadtest_server_prefix_cache_hits_total")
    prompt = words(64, "p")

    miss_ttft, miss = _stream(cached, "/v1/completions", {**base, "prompt": prompt})
    # The chat endpoint: one user message renders as its content, so the same words hit.
    messages = [{"role": "user", "content": prompt}]
    hit_ttft, hit = _stream(cached, "/v1/chat/completions", {**base, "messages": messages})
    half = _post(cached, "/v1/completions", {**base, "prompt": words(32, "p") + " " + words(40, "q")})[
        "usage"
    ]

    assert (miss["prompt_tokens"], miss["prompt_tokens_details"]) == (64, {"cached_tokens": 0})
    assert (hit["prompt_tokens"], hit["prompt_tokens_details"]) == (64, {"cached_tokens": 64})
    assert (half["prompt_tokens"], half["prompt_tokens_details"]) == (72, {"cached_tokens": 32})
    assert _metric(cached, "loadtest_server_prefix_cache_queries_total") - queries == 64 + 64 + 72
    assert _metric(cached, "loadtest_server_prefix_cache_hits_total") - hits == 0 + 64 + 32
    # The miss prefilled 64 uncached tokens at 1 ms each; the hit none. HTTP and the client's
    # clock add noise to both, so the bound is looser than the engine test's.
    print(f"TTFT over HTTP: miss {miss_ttft * 1e3:.1f} ms, hit {hit_ttft * 1e3:.1f} ms")
    assert miss_ttft - hit_ttft == pytest.approx(64 * PER_TOKEN, abs=0.015)


def test_without_a_cache_usage_has_no_details_and_the_counters_stay_at_zero(plain: Endpoint) -> None:
    body = {"model": plain.model, "prompt": words(40, "w"), "max_tokens": 2, "ignore_eos": True}
    assert "prompt_tokens_details" not in _post(plain, "/v1/completions", body)["usage"]
    assert "prompt_tokens_details" not in _stream(plain, "/v1/completions", body)[1]
    assert _metric(plain, "loadtest_server_prefix_cache_queries_total") == 0
    assert _metric(plain, "loadtest_server_prefix_cache_hits_total") == 0


def _gone(endpoint: Endpoint) -> float:
    """Requests answered with nginx's 499, the front's label for a client that went away."""
    samples = fetch(_port(endpoint))
    assert samples is not None
    return sum(
        value
        for name, labels, value in samples
        if name == "loadtest_server_requests_total" and labels.get("status") == "499"
    )


def test_a_client_that_closes_its_stream_frees_the_slot_and_counts_as_aborted(plain: Endpoint) -> None:
    aborted, gone = _metric(plain, "loadtest_server_requests_aborted_total"), _gone(plain)
    conn = _connect(plain)
    body = {
        "model": plain.model,
        "prompt": "a b c",
        "max_tokens": 100_000,  # 500 s at 5 ms a token: only the close can end it in time
        "ignore_eos": True,
        "stream": True,
    }
    conn.request(
        "POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    response = conn.getresponse()
    chunks = 0
    while chunks < 2:  # two tokens read: the answer is under way
        if response.readline().startswith(b"data: {"):
            chunks += 1
    assert _metric(plain, "loadtest_server_batch_size") == 1
    response.close()  # the client goes away: a plain close, as when a browser tab closes
    conn.close()
    closed = time.monotonic()
    while _metric(plain, "loadtest_server_batch_size") > 0:
        assert time.monotonic() < closed + 2.0, "the closed stream still holds its slot after 2 s"
        time.sleep(0.01)
    print(f"slot freed within {(time.monotonic() - closed) * 1e3:.1f} ms of the client's close")
    assert _metric(plain, "loadtest_server_requests_aborted_total") - aborted == 1
    assert _gone(plain) - gone == 1
    assert _metric(plain, "loadtest_server_requests_in_flight") == 0

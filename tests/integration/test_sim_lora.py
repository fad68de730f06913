"""The simulated server's LoRA adapters over real HTTP (a server subprocess started by its
adapter, so `server.lora` reaches the CLI): which names it serves, /v1/models, and its per-adapter
hit and miss counters on /metrics against a sequence whose truth is known."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from servers.adapter import Adapter, Endpoint
from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig
from tests.metrics_helpers import fetch


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    config = SimulatedServerConfig.model_validate(
        {
            "kind": "simulated",
            "ttft": "2ms",
            "itl": "1ms",
            "model": "base",
            "lora": {"adapters": ["a", "b", "c"], "max_loras": 2, "load_time": "5ms"},
        }
    )
    adapter: Adapter = make_adapter(config)
    try:
        yield adapter.start(tmp_path_factory.mktemp("server") / "server.log")
    finally:
        adapter.stop()


def _request(
    endpoint: Endpoint, method: str, path: str, body: dict[str, Any] | None = None
) -> tuple[int, Any]:
    parts = urlsplit(endpoint.base_url)
    assert parts.hostname is not None
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        payload = json.dumps(body) if body is not None else None
        conn.request(method, path, body=payload, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _counts(endpoint: Endpoint) -> dict[tuple[str, str], float]:
    port = urlsplit(endpoint.base_url).port
    assert port is not None
    samples = fetch(port)
    assert samples is not None
    return {
        (sample.removeprefix("loadtest_server_lora_").removesuffix("_total"), labels["adapter"]): value
        for sample, labels, value in samples
        if sample in ("loadtest_server_lora_hits_total", "loadtest_server_lora_misses_total")
    }


def test_it_serves_the_base_model_and_its_adapters_only(server: Endpoint) -> None:
    status, models = _request(server, "GET", "/v1/models")
    assert status == 200
    assert [(m["id"], m.get("parent")) for m in models["data"]] == [
        ("base", None),
        ("a", "base"),
        ("b", "base"),
        ("c", "base"),
    ]
    body = {"prompt": "hi there", "max_tokens": 2}
    status, answer = _request(server, "POST", "/v1/completions", {**body, "model": "b"})
    assert status == 200 and answer["model"] == "b" and answer["usage"]["completion_tokens"] == 2
    status, answer = _request(server, "POST", "/v1/completions", {**body, "model": "z"})
    assert status == 404 and "`z` does not exist" in answer["error"]["message"]


def test_the_counters_are_the_lru_truth(server: Endpoint) -> None:
    before = _counts(server)
    assert set(before) == {(kind, name) for kind in ("hits", "misses") for name in "abc"}
    # One at a time; resident after the first test: b. Two places, least recently used out:
    # b hit, a miss, b hit, c miss (a out), a miss (b out), a hit, b miss (c out), c miss (a out),
    # c hit; the base model uses no adapter.
    sequence = ["b", "a", "b", "c", "a", "a", "b", "c", "c", "base"]
    truth_hits = {"a": 1, "b": 2, "c": 1}
    truth_misses = {"a": 2, "b": 1, "c": 2}
    for name in sequence:
        status, _ = _request(
            server,
            "POST",
            "/v1/chat/completions",
            {"model": name, "max_tokens": 1, "messages": [{"role": "user", "content": "q"}]},
        )
        assert status == 200
    after = _counts(server)
    for name in "abc":
        assert after[("hits", name)] - before[("hits", name)] == truth_hits[name], name
        assert after[("misses", name)] - before[("misses", name)] == truth_misses[name], name

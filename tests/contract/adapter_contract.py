"""The behaviour every server adapter owes, as one base test class.

A subclass per adapter supplies two class-scoped fixtures:
  `adapter_factory`: a callable returning a fresh, unstarted adapter for a working server;
  `failing_start`:   (parametrized) a FailingStart whose adapter must fail to start.
A server that is not ours (vLLM) may declare what legitimately differs through the class
attributes below (its own metric names, its own tokenizer, a slower start); the checks stay.
Clients here are plain stdlib (http.client): the pytest process is never gevent-patched.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest

from servers.adapter import Adapter, Endpoint, ServerStartError

MAX_TOKENS = 7


@dataclass
class FailingStart:
    make: Callable[[], Adapter]
    expect: list[str]  # substrings of the error message
    expect_log_tail: bool = True  # the tool started the server, so server.log is quoted
    within_s: float = 10.0  # start() must give up about this fast


@dataclass
class Stream:
    chunks: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False  # saw `data: [DONE]`


def _connect(endpoint: Endpoint, timeout: float = 10) -> http.client.HTTPConnection:
    parts = urlsplit(endpoint.base_url)
    assert parts.hostname is not None
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def _headers(endpoint: Endpoint) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    return headers


def get(endpoint: Endpoint, path: str) -> tuple[int, bytes]:
    conn = _connect(endpoint)
    try:
        conn.request("GET", path, headers=_headers(endpoint))
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def post(endpoint: Endpoint, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    conn = _connect(endpoint)
    try:
        conn.request("POST", path, body=json.dumps(body), headers=_headers(endpoint))
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def timed_lines(endpoint: Endpoint, path: str, data: bytes) -> tuple[int, list[tuple[bytes, int]]]:
    """POST `data` (JSON, as encoded) and read the answer's lines, each with when it was read
    (perf_counter_ns): the status, and the lines (an error's body as its one line)."""
    conn = _connect(endpoint, timeout=60)
    try:
        conn.request("POST", path, body=data, headers=_headers(endpoint))
        response = conn.getresponse()
        return response.status, [(raw, time.perf_counter_ns()) for raw in response]
    finally:
        conn.close()


def stream(endpoint: Endpoint, path: str, body: dict[str, Any]) -> Stream:
    conn = _connect(endpoint)
    try:
        conn.request("POST", path, body=json.dumps({**body, "stream": True}), headers=_headers(endpoint))
        response = conn.getresponse()
        assert response.status == 200, response.read()
        assert response.getheader("Content-Type", "").startswith("text/event-stream")
        out = Stream()
        for raw in response:
            line = raw.decode().strip()
            if not line:
                continue
            assert line.startswith("data: "), line
            data = line[len("data: ") :]
            assert not out.done, "data after [DONE]"
            if data == "[DONE]":
                out.done = True
            else:
                out.chunks.append(json.loads(data))
        return out
    finally:
        conn.close()


def content_of(chunk: dict[str, Any]) -> str:
    choices = chunk.get("choices") or []
    if not choices:
        return ""
    choice = choices[0]
    return str(choice["delta"].get("content") or "") if "delta" in choice else str(choice.get("text") or "")


def metric_value(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


REQUESTS: dict[str, dict[str, Any]] = {
    "/v1/completions": {"prompt": "one two three four"},
    "/v1/chat/completions": {
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "one two"}]
    },
}
PROMPT_TOKENS = {"/v1/completions": 4, "/v1/chat/completions": 4}


def stop_leaves_no_process(adapter: Adapter, endpoint: Endpoint) -> None:
    """stop() ends the server's whole process tree, a second stop() is harmless, the port closes."""
    pid = adapter.pid
    assert pid is not None
    tree = [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
    adapter.stop()
    adapter.stop()  # idempotent
    assert adapter.pid is None
    left = [p for p in tree if psutil.pid_exists(p)]
    assert not left, f"still running after stop(): {left}"
    with pytest.raises(OSError):
        get(endpoint, "/v1/models")


@dataclass(frozen=True)
class MetricNames:
    """What a server's /metrics calls the series the contract checks."""

    present: tuple[str, ...]  # each must appear in /metrics
    generated_tokens: str  # counter of output tokens
    running: str  # gauge: requests being decoded now


LOADTEST_METRICS = MetricNames(
    present=tuple(
        f"loadtest_server_{name}"
        for name in (
            "requests_total",
            "requests_in_flight",
            "batch_size",
            "queue_wait_seconds_bucket",
            "ttft_seconds_bucket",
        )
    ),
    generated_tokens="loadtest_server_generated_tokens_total",
    running="loadtest_server_batch_size",
)


class AdapterContract:
    """Every adapter: start → ready endpoint that speaks OpenAI; stop → nothing left."""

    spawns_process = True  # False for adapters that only connect (external)
    ready_within_s = 60.0  # spawn → ready must be faster than this
    metrics = LOADTEST_METRICS
    # Prompt tokens of REQUESTS by path; None: the server's own tokenizer and chat template
    # decide, so usage must only be positive and add up.
    prompt_tokens: dict[str, int] | None = PROMPT_TOKENS
    long_max_tokens = 100_000  # a generation that outlasts the disconnect test
    disconnect_frees_within_s = 2.0

    def tokens_in_stream(self, chunks: list[dict[str, Any]]) -> int:
        """Tokens a stream carried: one content chunk per token."""
        return sum(1 for c in chunks if content_of(c))

    def check_usage(self, usage: dict[str, Any], path: str) -> None:
        assert usage["completion_tokens"] == MAX_TOKENS
        if self.prompt_tokens is None:
            assert usage["prompt_tokens"] > 0
        else:
            assert usage["prompt_tokens"] == self.prompt_tokens[path]
        assert usage["total_tokens"] == MAX_TOKENS + usage["prompt_tokens"]

    @pytest.fixture(scope="class")
    @classmethod
    def started(
        cls, adapter_factory: Callable[[], Adapter], tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[tuple[Adapter, Endpoint]]:
        adapter = adapter_factory()
        try:
            yield adapter, adapter.start(tmp_path_factory.mktemp("server") / "server.log")
        finally:
            adapter.stop()

    @pytest.fixture
    def endpoint(self, started: tuple[Adapter, Endpoint]) -> Endpoint:
        return started[1]

    def _body(self, endpoint: Endpoint, path: str, **extra: Any) -> dict[str, Any]:
        return {
            "model": endpoint.model,
            "max_tokens": MAX_TOKENS,
            "ignore_eos": True,
            **REQUESTS[path],
            **extra,
        }

    def test_start_gives_a_ready_endpoint(self, started: tuple[Adapter, Endpoint]) -> None:
        adapter, endpoint = started
        assert endpoint.base_url.startswith("http") and not endpoint.base_url.endswith(("/", "/v1"))
        assert endpoint.model
        if self.spawns_process:
            assert adapter.pid is not None and psutil.pid_exists(adapter.pid)
            assert adapter.ready_s is not None and 0 < adapter.ready_s < self.ready_within_s
            assert isinstance(adapter.spawned_at_ns, int) and adapter.spawned_at_ns < time.perf_counter_ns()
        else:
            assert (adapter.pid, adapter.ready_s, adapter.spawned_at_ns) == (None, None, None)

    def test_models_lists_the_model(self, endpoint: Endpoint) -> None:
        status, body = get(endpoint, "/v1/models")
        assert status == 200
        assert endpoint.model in [m["id"] for m in json.loads(body)["data"]]

    @pytest.mark.parametrize("path", list(REQUESTS))
    def test_stream_with_usage(self, endpoint: Endpoint, path: str) -> None:
        body = self._body(endpoint, path, stream_options={"include_usage": True})
        result = stream(endpoint, path, body)
        assert result.done
        assert self.tokens_in_stream(result.chunks) == MAX_TOKENS
        finishes = [c["choices"][0]["finish_reason"] for c in result.chunks if c["choices"]]
        assert finishes[-1] == "length" and set(finishes[:-1]) == {None}
        usage = result.chunks[-1]
        assert usage["choices"] == []
        self.check_usage(usage["usage"], path)

    @pytest.mark.parametrize("path", list(REQUESTS))
    def test_stream_without_usage_option_has_no_usage_chunk(self, endpoint: Endpoint, path: str) -> None:
        result = stream(endpoint, path, self._body(endpoint, path))
        assert result.done
        assert all("usage" not in c or c["usage"] is None for c in result.chunks)
        assert self.tokens_in_stream(result.chunks) == MAX_TOKENS

    @pytest.mark.parametrize("path", list(REQUESTS))
    def test_non_streaming_has_usage(self, endpoint: Endpoint, path: str) -> None:
        status, body = post(endpoint, path, self._body(endpoint, path))
        assert status == 200
        self.check_usage(body["usage"], path)
        assert body["choices"][0]["finish_reason"] == "length"

    def test_metrics_expose_server_series(self, endpoint: Endpoint) -> None:
        status, body = get(endpoint, "/metrics")
        assert status == 200
        text = body.decode()
        for name in self.metrics.present:
            assert name in text
        # The output-token counter counts: one more request of MAX_TOKENS adds exactly that.
        before = metric_value(text, self.metrics.generated_tokens)
        status, _ = post(endpoint, "/v1/completions", self._body(endpoint, "/v1/completions"))
        assert status == 200
        deadline = time.monotonic() + 5  # vLLM records a request's stats just after answering
        while (added := self._generated_tokens(endpoint) - before) < MAX_TOKENS:
            assert time.monotonic() < deadline, f"{self.metrics.generated_tokens} rose by {added}"
            time.sleep(0.05)
        assert added == MAX_TOKENS

    def _generated_tokens(self, endpoint: Endpoint) -> float:
        return metric_value(get(endpoint, "/metrics")[1].decode(), self.metrics.generated_tokens)

    def test_client_disconnect_frees_its_slot(self, endpoint: Endpoint) -> None:
        conn = _connect(endpoint)
        body = self._body(endpoint, "/v1/completions", stream=True, max_tokens=self.long_max_tokens)
        conn.request("POST", "/v1/completions", body=json.dumps(body), headers=_headers(endpoint))
        response = conn.getresponse()
        assert b"data: " in response.readline()  # generation has started
        text = get(endpoint, "/metrics")[1].decode()
        assert metric_value(text, self.metrics.running) >= 1
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()
        deadline = time.monotonic() + self.disconnect_frees_within_s
        while metric_value(get(endpoint, "/metrics")[1].decode(), self.metrics.running) > 0:
            assert time.monotonic() < deadline, "the disconnected request still holds its slot"
            time.sleep(0.02)

    def test_stop_leaves_no_process(self, started: tuple[Adapter, Endpoint]) -> None:
        # The last test of the class's server: it stops it (one start less per adapter, and
        # vLLM's takes ~45 s). Tests after this one must start their own servers.
        adapter, endpoint = started
        pid = adapter.pid
        if not self.spawns_process:
            assert pid is None
            adapter.stop()
            adapter.stop()
            assert get(endpoint, "/v1/models")[0] == 200  # not ours to stop
            return
        stop_leaves_no_process(adapter, endpoint)

    def test_start_failure_is_reported(self, failing_start: FailingStart, tmp_path: Path) -> None:
        adapter = failing_start.make()
        log = tmp_path / "server.log"
        began = time.monotonic()
        with pytest.raises(ServerStartError) as caught:
            adapter.start(log)
        assert time.monotonic() - began < failing_start.within_s
        message = str(caught.value)
        first_line = message.splitlines()[0]
        for expected in failing_start.expect:
            assert expected in first_line, message
        if failing_start.expect_log_tail:
            assert caught.value.log_tail and caught.value.log_tail in message
        assert adapter.pid is None  # a failed start cleans up after itself
        adapter.stop()

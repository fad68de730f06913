"""`POST /v1/embeddings` as OpenAI's official client reads it, from the built-in servers' shared
front: the simulated engine served in-process on 127.0.0.1 (a real socket, no mocks), and the
ONNX Runtime and PyTorch servers on the bundled model as subprocesses. The client asks for
base64 by default and decodes it itself; `encoding_format="float"` gets the floats as JSON.
"""

from __future__ import annotations

import base64
import json
import math
import struct
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from loadgen.features.audio.clips import generated_clip
from servers.adapter import Adapter
from servers.engines.seeded_vectors import seeded_vector
from servers.engines.simulated_engine import PoolingTiming, SimulatedEngine
from servers.engines.tokenizer import TextTokenizer
from servers.ort import OrtServerConfig
from servers.pytorch import TorchServerConfig
from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig
from tests.contract.served import serve
from tests.machine_noise import NOISY_STALL_MS

DATA = Path(__file__).resolve().parents[1] / "data" / "embeddings"
TEXTS = ["one two three", "four five", "six"]  # 6 words: the simulated engine's prompt tokens


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=30)


def _norm(vector: list[float]) -> float:
    return math.sqrt(math.fsum(x * x for x in vector))


def _gap(a: Sequence[float], b: Sequence[float]) -> float:
    """The largest difference of two vectors' components."""
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    yield from serve(SimulatedEngine(ttft=0.0, itl=0.0, spawned_at=0, pooling=PoolingTiming(0.0, 0.0)))


# --- the simulated server ------------------------------------------------------------------------


def test_the_client_reads_one_unit_vector_per_input_in_order(sim: str) -> None:
    client = _client(sim)
    answer = client.embeddings.create(model="simulated", input=TEXTS)  # base64 on the wire
    as_floats = client.embeddings.create(model="simulated", input=TEXTS, encoding_format="float")
    assert [d.index for d in answer.data] == [0, 1, 2]
    assert answer.model == "simulated" and answer.object == "list"
    assert (answer.usage.prompt_tokens, answer.usage.total_tokens) == (6, 6)
    for item, other, text in zip(answer.data, as_floats.data, TEXTS, strict=True):
        assert len(item.embedding) == 384 and abs(_norm(item.embedding) - 1) < 1e-6
        # float32 on the base64 wire, float64 as JSON: the same vector, the text's own
        assert _gap(item.embedding, other.embedding) < 1e-7
        assert _gap(other.embedding, seeded_vector(text, 384)) < 1e-15  # renormalised: an ulp


def test_the_same_text_gets_the_same_vector_and_token_ids_their_own(sim: str) -> None:
    client = _client(sim)
    one = client.embeddings.create(model="simulated", input="six", encoding_format="float").data[0].embedding
    again = (
        client.embeddings.create(model="simulated", input=TEXTS, encoding_format="float").data[2].embedding
    )
    assert one == again
    ids = client.embeddings.create(model="simulated", input=[[5, 6], [7]], encoding_format="float")
    assert len(ids.data) == 2 and ids.usage.prompt_tokens == 3  # a token id list: one token each
    flat = client.embeddings.create(model="simulated", input=[5, 6], encoding_format="float")
    assert len(flat.data) == 1 and flat.data[0].embedding == ids.data[0].embedding
    assert flat.data[0].embedding != one


def test_dimensions_keeps_the_first_components_renormalised(sim: str) -> None:
    client = _client(sim)
    full = seeded_vector("four five", 384)
    short = client.embeddings.create(
        model="simulated", input="four five", dimensions=16, encoding_format="float"
    )
    vector = short.data[0].embedding
    assert len(vector) == 16 and abs(_norm(vector) - 1) < 1e-9
    scale = _norm(full[:16])
    assert max(abs(a - b / scale) for a, b in zip(vector, full[:16], strict=True)) < 1e-12


def test_base64_is_little_endian_float32(sim: str) -> None:
    raw = httpx.post(f"{sim}/v1/embeddings", json={"input": "six", "encoding_format": "base64"}, timeout=20)
    packed = base64.b64decode(raw.json()["data"][0]["embedding"])
    assert len(packed) == 384 * 4
    values = struct.unpack("<384f", packed)
    assert _gap(values, seeded_vector("six", 384)) < 1e-7


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"input": []}, "input must not be empty"),
        ({"input": ""}, "input[0] is empty"),
        ({"input": ["a", ""]}, "input[1] is empty"),
        ({"input": "a", "dimensions": 385}, "more than this model's 384"),
        ({"input": "a", "dimensions": 0}, "dimensions"),
        ({"input": "a", "encoding_format": "int8"}, "encoding_format"),
        ({"input": [[-1]]}, "outside the vocabulary"),
        ({"input": {"text": "a"}}, "input"),
        ({}, "input"),
    ],
)
def test_a_bad_body_is_a_400_openai_error(sim: str, body: dict[str, Any], says: str) -> None:
    answer = httpx.post(f"{sim}/v1/embeddings", json=body, timeout=20)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == 400 and says in error["message"]


def test_errors_as_the_client_raises_them(sim: str) -> None:
    client = _client(sim)
    with pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model="simulated", input="a", dimensions=1000)
    assert "more than this model's 384" in str(caught.value)
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="no-such-model", input="a")
    assert httpx.post(f"{sim}/v1/embeddings", content=b"{not json", timeout=20).status_code == 400


def test_the_answer_has_the_recorded_bodies_shape(sim: str) -> None:
    """tests/data/embeddings/ (written from OpenAI's documented format): the same keys and types,
    and the recorded base64 answer decodes to the recorded floats."""
    recorded = json.loads((DATA / "float.json").read_text())
    packed = json.loads((DATA / "base64.json").read_text())
    for floats, b64 in zip(recorded["data"], packed["data"], strict=True):
        assert list(struct.unpack("<4f", base64.b64decode(b64["embedding"]))) == floats["embedding"]
    ours = httpx.post(f"{sim}/v1/embeddings", json={"input": ["a", "b c"], "encoding_format": "float"}).json()
    assert set(ours) == set(recorded) and set(ours["usage"]) == set(recorded["usage"])
    assert set(ours["data"][0]) == set(recorded["data"][0])
    error = httpx.post(f"{sim}/v1/embeddings", json={"input": []}).json()
    assert set(error["error"]) <= set(json.loads((DATA / "error.json").read_text())["error"])


# --- the simulated latency ---------------------------------------------------------------------------

BASE, PER_INPUT, PER_TOKEN, INPUTS = 0.04, 0.01, 0.001, 5  # 5 inputs of 2 words: 0.04 + 0.05 + 0.01
EXPECTED_S = BASE + PER_INPUT * INPUTS + PER_TOKEN * 2 * INPUTS
TIMER_SLACK_S = 0.002  # an asyncio sleep may wake this much early on a coarse clock
UPPER_SLACK_S = 0.15  # the HTTP round trip and a busy shared machine: generous, not a benchmark


def test_the_simulated_latency_is_base_plus_per_input_plus_per_token() -> None:
    timing = PoolingTiming(embed_base=BASE, embed_per_input=PER_INPUT, embed_per_token=PER_TOKEN)
    for url in serve(SimulatedEngine(spawned_at=0, pooling=timing)):
        client = _client(url)
        client.embeddings.create(model="simulated", input="warm up")  # the connection, imports
        before = httpx.get(f"{url}/debug/timings", timeout=20).json()
        sent = time.perf_counter()
        client.embeddings.create(model="simulated", input=[f"word {k}" for k in range(INPUTS)])
        elapsed = time.perf_counter() - sent
        record = httpx.get(f"{url}/debug/timings", timeout=20).json()
        assert record["pooling_requests"] == before["pooling_requests"] + 1
        # The server's own record of this request (the p99 of two: the larger, this one).
        server_s = record["pooling_p99_ms"] / 1000
        assert EXPECTED_S - TIMER_SLACK_S <= server_s <= EXPECTED_S + UPPER_SLACK_S
        # The server stamps its end just after handing the last byte to the socket: a thread
        # descheduled there (2 ms in CI beside a vLLM install) stamps after the client has read
        # it, so the server may run over the client's span by that much, never by a whole stall.
        assert server_s - NOISY_STALL_MS / 1000 <= elapsed <= EXPECTED_S + UPPER_SLACK_S
        metrics = httpx.get(f"{url}/metrics", timeout=20).text
        assert 'loadtest_server_requests_total{endpoint="/v1/embeddings",status="200"} 2.0' in metrics
        assert 'loadtest_server_pooling_seconds_count{endpoint="/v1/embeddings"} 2.0' in metrics


def test_embeddings_wait_for_a_slot_behind_generations() -> None:
    """One slot: an embeddings request sent while a generation holds it answers only after."""
    engine = SimulatedEngine(ttft=0.1, itl=0.0, slots=1, spawned_at=0, pooling=PoolingTiming(0.0, 0.0))
    for url in serve(engine):
        with httpx.Client(timeout=20) as first, httpx.Client(timeout=20) as second:
            sent = time.perf_counter()
            stream = first.stream(
                "POST", f"{url}/v1/completions", json={"prompt": "a", "max_tokens": 1, "stream": True}
            )
            with stream as generation:
                time.sleep(0.02)  # the generation is admitted first
                second.post(f"{url}/v1/embeddings", json={"input": "a"})
                waited = time.perf_counter() - sent
                generation.read()
        assert waited >= 0.1 - TIMER_SLACK_S
        assert "loadtest_server_queue_wait_seconds_count 2.0" in httpx.get(f"{url}/metrics", timeout=20).text


# --- the ONNX Runtime and PyTorch servers --------------------------------------------------------------


def _started(config: Any, log: Path) -> Iterator[tuple[str, Adapter]]:
    adapter: Adapter = make_adapter(config)
    try:
        yield adapter.start(log).base_url, adapter
    finally:
        adapter.stop()


@pytest.fixture(scope="module")
def ort(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = OrtServerConfig.model_validate({"kind": "onnxruntime"})
    for url, _ in _started(config, tmp_path_factory.mktemp("ort") / "server.log"):
        yield url


@pytest.fixture(scope="module")
def torch_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("torch")
    config = TorchServerConfig.model_validate({"kind": "torch"})
    for url, _ in _started(config, tmp_path_factory.mktemp("torch") / "server.log"):
        yield url


MODEL_TEXTS = ["hello world", "the quick brown fox jumps over the lazy dog", "x"]


def _model_vectors(url: str) -> list[list[float]]:
    client = _client(url)
    answer = client.embeddings.create(model="tiny", input=MODEL_TEXTS)
    tokens = sum(
        len(TextTokenizer.from_dir(Path(__file__).resolve().parents[2] / "servers/models/tiny").encode(t))
        for t in MODEL_TEXTS
    )
    assert answer.usage.prompt_tokens == tokens
    vectors = [item.embedding for item in answer.data]
    assert [len(v) for v in vectors] == [128, 128, 128]  # the tiny model's hidden size
    assert all(abs(_norm(v) - 1) < 1e-5 for v in vectors)
    short = client.embeddings.create(
        model="tiny", input=MODEL_TEXTS[0], dimensions=32, encoding_format="float"
    )
    assert len(short.data[0].embedding) == 32 and abs(_norm(short.data[0].embedding) - 1) < 1e-9
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="tiny", input="a", dimensions=129)
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="tiny", input=[[1, 2048]])  # beyond the 2048-token vocabulary
    return vectors


def test_the_onnx_runtime_server_embeds_with_its_tokenizer(ort: str) -> None:
    _model_vectors(ort)


@pytest.mark.slow  # a PyTorch server's start: torch's import alone is seconds
def test_the_onnx_runtime_and_torch_servers_pool_the_same_hidden_states(ort: str, torch_server: str) -> None:
    """Two runtimes over the same weights: the mean-pooled last hidden states agree."""
    ort_vectors, torch_vectors = _model_vectors(ort), _model_vectors(torch_server)
    for a, b in zip(ort_vectors, torch_vectors, strict=True):
        assert _gap(a, b) < 1e-4
    # Different texts, different vectors (a real model, not a constant)
    assert _gap(ort_vectors[0], ort_vectors[1]) > 0.01


def test_one_vector_alone_or_in_a_padded_batch_is_the_same(ort: str) -> None:
    """Left padding (the texts differ in length) is kept out of the mean."""
    client = _client(ort)
    batch = client.embeddings.create(model="tiny", input=MODEL_TEXTS, encoding_format="float").data
    for k, text in enumerate(MODEL_TEXTS):
        alone = client.embeddings.create(model="tiny", input=text, encoding_format="float").data[0].embedding
        assert _gap(alone, batch[k].embedding) < 1e-5


def test_the_model_servers_still_generate(ort: str) -> None:
    answer = httpx.post(
        f"{ort}/v1/completions", json={"prompt": "hello", "max_tokens": 3, "ignore_eos": True}, timeout=30
    )
    assert answer.status_code == 200 and answer.json()["usage"]["completion_tokens"] == 3


# --- the simulated server as a process: its options from a scenario, a client that goes away ----


def test_a_scenarios_options_reach_the_server_and_a_gone_client_frees_its_slot(tmp_path: Path) -> None:
    config = SimulatedServerConfig.model_validate(
        {"kind": "simulated", "embed_base": "1s", "embed_per_input": "0ms", "embedding_dim": 8, "slots": 1}
    )
    adapter: Adapter = make_adapter(config)
    try:
        url = adapter.start(tmp_path / "server.log").base_url
        sent = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):  # the client gives up after 0.2 s of the 1 s
            httpx.post(f"{url}/v1/embeddings", json={"input": "a"}, timeout=0.2)
        deadline = time.monotonic() + 5
        while 'loadtest_server_requests_total{endpoint="/v1/embeddings",status="499"} 1.0' not in (
            metrics := httpx.get(f"{url}/metrics", timeout=5).text
        ):
            assert time.monotonic() < deadline, metrics
            time.sleep(0.05)
        # Cancelled when the client went, not answered to nobody once its 1 s was up: the slot is free.
        assert time.monotonic() - sent < 0.9 and "loadtest_server_batch_size 0.0" in metrics
        assert "loadtest_server_requests_aborted_total 1.0" in metrics
        short = httpx.post(
            f"{url}/v1/embeddings", json={"input": "a", "encoding_format": "float"}, timeout=10
        )
        assert len(short.json()["data"][0]["embedding"]) == 8
    finally:
        adapter.stop()


def test_the_model_servers_refuse_a_transcription_naming_their_model(ort: str) -> None:
    """No speech model: a 400 naming the model, as an image to a text-only model is."""
    clip = generated_clip(1000, 16_000, request_id=1)  # the client's own recording
    with pytest.raises(openai.BadRequestError, match="does not transcribe audio") as raised:
        file = (clip.filename, clip.data, clip.content_type)
        _client(ort).audio.transcriptions.create(model="tiny", file=file)
    assert "`tiny`" in str(raised.value)

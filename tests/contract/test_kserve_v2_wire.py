"""KServe v2 (the Open Inference Protocol) as Triton's official client, `tritonclient.http`, reads
it from the built-in servers' shared front: the simulated engine's classifier served in-process
on 127.0.0.1 (a real socket, no mocks). The client sends and asks for binary tensors by default
(the binary tensor data extension); `binary_data=False` sends and gets JSON. Plain httpx checks
the spec's exact JSON shapes, the errors' body and the latency against the server's own record.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from servers.adapter import Adapter
from servers.engines.simulated_classic import InferTiming, simulated_logits
from servers.engines.simulated_engine import SimulatedEngine
from servers.registry import make_adapter
from servers.simulated import SimulatedServerConfig
from tests.contract.served import serve
from tests.machine_noise import NOISY_STALL_MS

httpclient = pytest.importorskip("tritonclient.http", reason="pip install -e '.[dev]' installs tritonclient")
triton_utils = pytest.importorskip("tritonclient.utils")
InferenceServerException = triton_utils.InferenceServerException

MODEL = "simulated"
INFER = f"/v2/models/{MODEL}/infer"
METRICS_LABEL = 'endpoint="/v2/models/{model}/infer"'


def _images(batch: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, 3, 32, 32)).astype(np.float32)


@contextmanager
def _client(url: str) -> Iterator[Any]:
    client = httpclient.InferenceServerClient(url=url.removeprefix("http://"), network_timeout=20)
    try:
        yield client
    finally:
        client.close()


def _input(images: np.ndarray, *, binary: bool = True, name: str = "input", datatype: str = "FP32") -> Any:
    tensor = httpclient.InferInput(name, list(images.shape), datatype)
    tensor.set_data_from_numpy(images, binary_data=binary)
    return tensor


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    yield from serve(SimulatedEngine(ttft=0.0, itl=0.0, spawned_at=0, classic=InferTiming(0.0, 0.0)))


@pytest.fixture(scope="module")
def triton(sim: str) -> Iterator[Any]:
    with _client(sim) as client:
        yield client


def test_the_client_reads_health_and_metadata(triton: Any) -> None:
    client = triton
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready(MODEL) and client.is_model_ready(MODEL, model_version="1")
    assert not client.is_model_ready("no-such-model") and not client.is_model_ready(MODEL, model_version="2")
    server = client.get_server_metadata()
    assert server["name"] == "loadtest" and "binary_tensor_data" in server["extensions"]
    assert client.get_model_metadata(MODEL) == {
        "name": MODEL,
        "versions": ["1"],
        "platform": "simulated",
        "inputs": [{"name": "input", "datatype": "FP32", "shape": [-1, 3, 32, 32]}],
        "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}],
    }


@pytest.mark.parametrize("binary", [True, False])
def test_the_client_infers_with_binary_tensors_and_with_json(triton: Any, binary: bool) -> None:
    images = _images(3)
    outputs = [httpclient.InferRequestedOutput("logits", binary_data=binary)]
    result = triton.infer(MODEL, [_input(images, binary=binary)], outputs=outputs, request_id="r-7")
    logits = result.as_numpy("logits")
    assert logits.shape == (3, 10) and logits.dtype == np.float32
    assert np.array_equal(logits, simulated_logits(images))  # each item's own, exactly
    answer = result.get_response()
    assert answer["model_name"] == MODEL and answer["model_version"] == "1" and answer["id"] == "r-7"
    assert ("data" in answer["outputs"][0]) != binary


def test_no_outputs_asked_is_every_output_in_binary(triton: Any) -> None:
    """The client's default: no outputs list, `binary_data_output: true` in the parameters."""
    images = _images(2, seed=2)
    result = triton.infer(MODEL, [_input(images)], model_version="1")
    assert result.get_response()["outputs"][0]["parameters"] == {"binary_data_size": 2 * 10 * 4}
    assert np.array_equal(result.as_numpy("logits"), simulated_logits(images))
    one = triton.infer(MODEL, [_input(images[1:])]).as_numpy("logits")
    assert np.array_equal(one[0], result.as_numpy("logits")[1])  # alone or in a batch, the same


@pytest.mark.parametrize(
    ("images", "kwargs", "model", "version", "status", "says"),
    [
        (
            np.zeros((1, 3, 32, 31), np.float32),
            {},
            MODEL,
            "",
            "400",
            "input 'input' of model 'simulated': shape [1, 3, 32, 31]"
            " does not fit the model's [-1, 3, 32, 32]",
        ),
        (
            np.zeros((1, 3, 32, 32), np.float64),
            {"datatype": "FP64"},
            MODEL,
            "",
            "400",
            "input 'input' of model 'simulated': datatype is FP64, but the model takes FP32",
        ),
        (
            np.zeros((1, 3, 32, 32), np.float32),
            {"name": "image"},
            MODEL,
            "",
            "400",
            "unexpected inference input 'image' for model 'simulated'",
        ),
        (
            np.zeros((65, 3, 32, 32), np.float32),
            {},
            MODEL,
            "",
            "400",
            "the batch size is 65; model 'simulated' takes 1 to 64",
        ),
        (
            np.zeros((1, 3, 32, 32), np.float32),
            {},
            "resnet",
            "",
            "404",
            "the model `resnet` does not exist; this server serves `simulated`",
        ),
        (
            np.zeros((1, 3, 32, 32), np.float32),
            {},
            MODEL,
            "2",
            "404",
            "the model `simulated` has no version '2'; it has version 1",
        ),
    ],
)
def test_errors_as_the_client_raises_them(
    triton: Any, images: np.ndarray, kwargs: dict[str, Any], model: str, version: str, status: str, says: str
) -> None:
    with pytest.raises(InferenceServerException) as raised:
        triton.infer(model, [_input(images, **kwargs)], model_version=version)
    assert raised.value.status() == status and raised.value.message() == says


# --- the spec's JSON shapes, read with plain HTTP -------------------------------------------------


def test_the_json_answers_have_the_specs_shapes(sim: str) -> None:
    image = _images(1, seed=3)
    body = {
        "id": "a1",
        "inputs": [{"name": "input", "shape": [1, 3, 32, 32], "datatype": "FP32", "data": image.tolist()}],
    }
    answer = httpx.post(f"{sim}{INFER}", json=body, timeout=20)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    assert "inference-header-content-length" not in answer.headers
    parsed = answer.json()
    assert parsed.keys() == {"model_name", "model_version", "id", "outputs"} and parsed["id"] == "a1"
    (output,) = parsed["outputs"]
    assert output.keys() == {"name", "shape", "datatype", "data"}
    assert (output["name"], output["shape"], output["datatype"]) == ("logits", [1, 10], "FP32")
    assert np.array_equal(np.array(output["data"], np.float32), simulated_logits(image)[0])  # nested data
    assert httpx.get(f"{sim}/v2/health/live", timeout=20).json() == {"live": True}
    assert httpx.get(f"{sim}/v2/health/ready", timeout=20).json() == {"ready": True}
    assert httpx.get(f"{sim}/v2/models/{MODEL}/ready", timeout=20).json() == {"name": MODEL, "ready": True}


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"{not json", 400, "request body is not valid JSON"),
        (b'{"inputs": []}', 400, "inputs"),
        (
            b'{"inputs": [{"name": "input", "shape": [1, 3, 32, 32], "datatype": "FP32", "data": [1]}]}',
            400,
            "tensor 'input': data holds 1 elements, but shape [1, 3, 32, 32] takes 3072",
        ),
    ],
)
def test_a_bad_body_is_a_v2_error(sim: str, body: bytes, status: int, says: str) -> None:
    answer = httpx.post(f"{sim}{INFER}", content=body, timeout=20)
    assert answer.status_code == status
    error = answer.json()
    assert error.keys() == {"error"} and says in error["error"]


def test_a_body_over_the_limit_is_a_413(sim: str) -> None:
    answer = httpx.post(f"{sim}{INFER}", content=b" " * (64 * 1024**2 + 1024), timeout=30)
    assert answer.status_code == 413 and "too large" in answer.json()["error"]


def test_a_model_without_tensors_says_so_naming_it() -> None:
    """An LLM alone (as the ONNX Runtime and PyTorch servers' tiny model): 400s naming it."""
    engine = SimulatedEngine(spawned_at=0)
    engine.tensor_model = None
    for url in serve(engine):
        for answer in (
            httpx.get(f"{url}/v2/models/{MODEL}", timeout=20),
            httpx.get(f"{url}/v2/models/{MODEL}/ready", timeout=20),
            httpx.post(f"{url}{INFER}", json={"inputs": []}, timeout=20),
        ):
            assert answer.status_code == 400
            assert answer.json() == {"error": "the model `simulated` takes no tensors (not a classic model)"}
        assert httpx.get(f"{url}/v2/health/ready", timeout=20).status_code == 200  # the server is


def test_not_ready_is_a_503_while_live_is_200() -> None:
    for url in serve(SimulatedEngine(spawned_at=time.monotonic(), startup=60)):
        with _client(url) as client:
            assert client.is_server_live() and not client.is_server_ready()
            assert not client.is_model_ready(MODEL)
            assert httpx.get(f"{url}/v2/health/ready", timeout=20).status_code == 503
            answer = httpx.post(f"{url}{INFER}", json={"inputs": []}, timeout=20)
            assert answer.status_code == 503 and answer.json() == {"error": "the model is still loading"}


# --- the simulated latency and the metrics -----------------------------------------------------------

BASE, PER_ITEM, BATCH, TIMED = 0.03, 0.005, 8, 5  # 0.03 + 0.04, five times
EXPECTED_S = BASE + PER_ITEM * BATCH
TIMER_SLACK_S = 0.002  # an asyncio sleep may wake this much early on a coarse clock
UPPER_SLACK_S = 0.15  # the HTTP round trip and a busy shared machine: generous, not a benchmark


def test_the_simulated_latency_is_base_plus_per_item_and_metrics_count_it() -> None:
    engine = SimulatedEngine(spawned_at=0, classic=InferTiming(infer_base=BASE, infer_per_item=PER_ITEM))
    for url in serve(engine):
        with _client(url) as client:
            images = _images(BATCH)
            client.infer(MODEL, [_input(images)])  # the connection, the first request's imports
            elapsed = []
            for _ in range(TIMED):
                sent = time.perf_counter()
                client.infer(MODEL, [_input(images)])
                elapsed.append(time.perf_counter() - sent)
            record = httpx.get(f"{url}/debug/timings", timeout=20).json()
            assert record["pooling_requests"] == 1 + TIMED
            # The server's own record: the median of the timed requests' (the warm-up's, slow from
            # the test's own thread holding the GIL, is at most one of six).
            server_s = record["pooling_p50_ms"] / 1000
            assert EXPECTED_S - TIMER_SLACK_S <= server_s <= EXPECTED_S + UPPER_SLACK_S
            # The server stamps its end just after handing the last byte to the socket (see
            # test_embeddings_wire): it may run over the client's span by a descheduling, never a stall.
            assert (
                server_s - NOISY_STALL_MS / 1000 <= statistics.median(elapsed) <= EXPECTED_S + UPPER_SLACK_S
            )
            with pytest.raises(InferenceServerException):
                client.infer(MODEL, [_input(images[:, :, :, :31])])
            with pytest.raises(InferenceServerException):
                client.infer("resnet", [_input(images)])
        metrics = httpx.get(f"{url}/metrics", timeout=20).text
        for status, count in (("200", 1 + TIMED), ("400", 1), ("404", 1)):
            assert f'loadtest_server_requests_total{{{METRICS_LABEL},status="{status}"}} {count}.0' in metrics
        assert f"loadtest_server_inferences_total {(1 + TIMED) * BATCH}.0" in metrics
        assert f"loadtest_server_e2e_seconds_count {1 + TIMED}.0" in metrics
        assert f"loadtest_server_queue_wait_seconds_count {1 + TIMED}.0" in metrics


def test_an_infer_request_waits_for_a_slot_behind_a_generation() -> None:
    """One slot: an infer request sent while a generation holds it answers only after."""
    engine = SimulatedEngine(ttft=0.1, itl=0.0, slots=1, spawned_at=0, classic=InferTiming(0.0, 0.0))
    for url in serve(engine):
        with httpx.Client(timeout=20) as first:
            sent = time.perf_counter()
            stream = first.stream(
                "POST", f"{url}/v1/completions", json={"prompt": "a", "max_tokens": 1, "stream": True}
            )
            with stream as generation:
                time.sleep(0.02)  # the generation is admitted first
                with _client(url) as client:
                    client.infer(MODEL, [_input(_images(1))])
                waited = time.perf_counter() - sent
                generation.read()
        assert waited >= 0.1 - TIMER_SLACK_S


# --- the simulated server as a process: its options from a scenario ---------------------------------


def test_a_scenarios_infer_options_reach_the_server(tmp_path: Path) -> None:
    config = SimulatedServerConfig.model_validate(
        {"kind": "simulated", "infer_base": "0ms", "infer_per_item": "0ms", "infer_max_batch_size": 2}
    )
    adapter: Adapter = make_adapter(config)
    try:
        url = adapter.start(tmp_path / "server.log").base_url
        with _client(url) as client:
            assert client.infer(MODEL, [_input(_images(2))]).as_numpy("logits").shape == (2, 10)
            with pytest.raises(InferenceServerException, match="takes 1 to 2"):
                client.infer(MODEL, [_input(_images(3))])
    finally:
        adapter.stop()

"""KServe's own Python model server (the `kserve` package, servers/thirdparty/kserve_classifier.py)
serving the bundled classifier, read with Triton's client, `tritonclient.http` (issue 42 §4): its
v2 metadata is our ONNX Runtime server's for the same model, a batch of 4's logits (binary tensors
and JSON) are what ONNX Runtime computes from model.onnx, and a wrong shape is a 400 with KServe's
error body carrying the server's message.

kserve lives in its own venv: LOADTEST_KSERVE_PYTHON names its interpreter (.ci/run's
prepare_kserve makes it in the cache folder and exports it); without it these tests skip.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import yaml

from servers.adapter import free_port
from servers.command import CommandServerConfig
from servers.models import CLASSIFIER_MODEL_DIR
from servers.readiness import wait_ready
from servers.registry import make_adapter
from tests.contract.adapter_contract import stop_leaves_no_process
from tests.contract.test_classic_server import started

triton = pytest.importorskip("tritonclient.http", reason="pip install -e '.[dev]' installs tritonclient")
InferenceServerException = pytest.importorskip("tritonclient.utils").InferenceServerException

PYTHON_ENV = "LOADTEST_KSERVE_PYTHON"
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "servers" / "thirdparty" / "kserve_classifier.py"
DOCS = ROOT / "docs" / "guide" / "servers.md"
DOCS_SECTION = "#### KServe's own model server, beside ours"
MODEL = "classifier"
READY_WITHIN_S = 60.0  # about 1 s here: the imports (FastAPI, pandas, onnxruntime) and the session
STOP_WITHIN_S = 10.0
JSON = {"Content-Type": "application/json"}


def kserve_python() -> str:
    """LOADTEST_KSERVE_PYTHON, or a skip that says why."""
    python = os.environ.get(PYTHON_ENV)
    if not python:
        pytest.skip(f"{PYTHON_ENV} is not set: the interpreter of a venv with kserve (.ci/run makes one)")
    return python


@pytest.fixture(scope="module")
def kserve_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """KServe's server on the bundled classifier, REST on a free port, gRPC off; always stopped."""
    port = free_port()
    argv = [kserve_python(), str(SCRIPT), f"--model_dir={CLASSIFIER_MODEL_DIR}", f"--model_name={MODEL}"]
    argv += [f"--http_port={port}", "--enable_grpc=false", "--enable_latency_logging=false"]
    log = tmp_path_factory.mktemp("kserve") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        now = time.perf_counter()
        wait_ready(
            f"http://127.0.0.1:{port}/v2/health/ready",
            started=now,
            deadline=now + READY_WITHIN_S,
            exit_code=proc.poll,
        )
        yield f"127.0.0.1:{port}"
    except BaseException:
        print(log.read_text(errors="replace")[-4000:])  # shown with the failure
        raise
    finally:
        proc.terminate()
        try:
            proc.wait(STOP_WITHIN_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_WITHIN_S)


@pytest.fixture
def client(kserve_address: str) -> Iterator[Any]:
    made = triton.InferenceServerClient(kserve_address, network_timeout=20)
    try:
        yield made
    finally:
        made.close()


def _tensors(meta: dict[str, Any]) -> list[list[tuple[str, str, list[int]]]]:
    return [[(t["name"], t["datatype"], t["shape"]) for t in meta[side]] for side in ("inputs", "outputs")]


def test_its_metadata_is_our_servers_for_the_same_model(client: Any) -> None:
    assert client.is_server_ready() and client.is_model_ready(MODEL)
    theirs = _tensors(client.get_model_metadata(MODEL))
    ours: list[list[tuple[str, str, list[int]]]] = []

    def read(address: str) -> None:
        ours.extend(_tensors(triton.InferenceServerClient(address).get_model_metadata(MODEL)))

    started("servers.ort", CLASSIFIER_MODEL_DIR, read)
    assert ours == [[("input", "FP32", [-1, 3, 32, 32])], [("logits", "FP32", [-1, 10])]]
    assert theirs == ours


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_a_batch_of_4_has_the_logits_onnx_runtime_computes(client: Any, binary: bool) -> None:
    import onnxruntime

    images = np.random.default_rng(42).standard_normal((4, 3, 32, 32)).astype(np.float32)
    given = triton.InferInput("input", list(images.shape), "FP32")
    given.set_data_from_numpy(images, binary_data=binary)
    asked = triton.InferRequestedOutput("logits", binary_data=binary)
    # KServe reads a body without the binary extension's header as JSON only when it says so;
    # tritonclient sends its JSON with no Content-Type (test_json_needs_its_content_type).
    headers = None if binary else JSON
    answer = client.infer(MODEL, [given], outputs=[asked], request_id="batch-4", headers=headers)
    logits = answer.as_numpy("logits")
    session = onnxruntime.InferenceSession(str(CLASSIFIER_MODEL_DIR / "model.onnx"))
    (expected,) = session.run(["logits"], {"input": images})
    assert answer.get_response()["id"] == "batch-4"
    assert logits is not None and logits.shape == (4, 10)
    assert float(np.max(np.abs(logits - expected))) < 1e-4
    assert float(np.max(np.abs(expected))) > 0.1  # the logits are not all zeros


def test_a_wrong_shape_is_a_400_with_the_servers_message(client: Any) -> None:
    small = np.zeros((2, 3, 16, 16), np.float32)
    given = triton.InferInput("input", list(small.shape), "FP32")
    given.set_data_from_numpy(small)
    with pytest.raises(InferenceServerException) as raised:
        client.infer(MODEL, [given])
    assert raised.value.status() == "400"
    says = "input input has shape [2, 3, 16, 16]: the model takes [-1, 3, 32, 32] (-1: any size)"
    assert raised.value.message() == says


def test_json_needs_its_content_type(client: Any) -> None:
    """KServe 0.21 takes a body with neither the binary extension's Inference-Header-Content-Length
    nor `Content-Type: application/json` for raw bytes and refuses it: a v2 client must send the
    header (tritonclient does not, ours does not need it)."""
    given = triton.InferInput("input", [1, 3, 32, 32], "FP32")
    given.set_data_from_numpy(np.zeros((1, 3, 32, 32), np.float32), binary_data=False)
    asked = triton.InferRequestedOutput("logits", binary_data=False)
    with pytest.raises(InferenceServerException) as raised:
        client.infer(MODEL, [given], outputs=[asked])
    assert raised.value.status() == "400"
    assert "'inference-header-content-length' header is missing" in raised.value.message()


def documented_server_block() -> dict[str, Any]:
    """The `server:` block docs/guide/servers.md gives for running KServe's server."""
    section = DOCS.read_text(encoding="utf-8").split(DOCS_SECTION, 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    server: dict[str, Any] = yaml.safe_load(block)["server"]
    return server


def test_it_starts_as_the_docs_server_block_says(tmp_path: Path) -> None:
    """`server.kind: command` with the documented block (run from the repository's root): ready,
    the model named, its metadata served, and stop() leaves no process."""
    kserve_python()  # the block's shell reads it from the environment
    config = CommandServerConfig.model_validate({**documented_server_block(), "cwd": str(ROOT)})
    adapter = make_adapter(config)
    endpoint = adapter.start(tmp_path / "server.log")
    try:
        assert endpoint.model == MODEL
        meta = httpx.get(f"{endpoint.base_url}/v2/models/{MODEL}", timeout=10).json()
        assert [t["shape"] for t in meta["inputs"]] == [[-1, 3, 32, 32]]
    except BaseException:
        adapter.stop()
        raise
    stop_leaves_no_process(adapter, endpoint)
